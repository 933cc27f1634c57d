"""Fit a state head: a judge's verdict read from a frozen base's hidden states (issue 13).

    python -m training.heads.state_head embed --gguf models/store/X.gguf --part 0 --parts 2
    python -m training.heads.state_head embed --gguf models/store/X.gguf --part 1 --parts 2
    python -m training.heads.state_head fit --gguf models/store/X.gguf --out models/judges/NAME

`embed` reads the fitting set's texts with the frozen GGUF (one llama.cpp thread;
two processes share the work, each its own part) into a resumable cache.
`fit` fits, on the training split only (training/datasets/state_head_data.py):

- the pairwise head: a logistic regression without intercept on the difference of
  the two answers' features, fed both orders (no position preference), joined
  with the MiniLM relevance difference and the log length ratio as two more
  features; its L2 strength chosen by 5-fold cross-validation grouped by request;
- the tie margin: the |P(A) - 0.5| up to which a pair is called a tie, chosen on the
  out-of-fold predictions of the Auto-J training pairs (their human labels tie);
- the grade head: a ridge regression from one answer's features to the teacher's
  1-10 grade, on the single rows outside the held-out 160.

It writes `state_head.json` (what the engine reads), `fit_report.json` (the
cross-validated agreement of each variant on the fitting set) and the 160 held-out
single rows as `training/runs/state-head/single_heldout.jsonl`. The engine then
judges the evaluation files with the head as it ships:

    python -m training.evaluation.evaluate ../shared/data/autoj/pairwise_dev.jsonl \
        ../shared/data/llmbar/natural.json ../shared/data/llmbar/adversarial_neighbor.json \
        training/runs/state-head/single_heldout.jsonl --model NAME --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from app.deciding.state_head import length_log_ratio, state_text
from app.records import JudgeItem
from training.datasets.state_head_data import (
    FeatureCache,
    saved_fitting_pairs,
    single_rows,
    texts_of,
)

RUN_DIR = Path("training/runs/state-head")
HELDOUT_FILE = RUN_DIR / "single_heldout.jsonl"
ALPACAEVAL_PAIRS = 200
SINGLE_ROWS = 320  # of the 639 fitting rows: a seeded sample (reading a text takes 1.6 s)


def cache_for(gguf: Path) -> FeatureCache:
    return FeatureCache(RUN_DIR / "cache" / gguf.stem)


def all_texts(alpacaeval: int) -> list[str]:
    pairs = saved_fitting_pairs(alpacaeval, RUN_DIR)
    pair_texts = texts_of(pairs)
    seen = set(pair_texts)
    return pair_texts + [t for t in texts_of(grade_rows()) if t not in seen]


def grade_rows() -> list[JudgeItem]:
    """The single rows the grade head is fitted on: a seeded sample of the fitting split."""
    import random

    rows, _ = single_rows()
    chosen = sorted(random.Random(0).sample(range(len(rows)), min(SINGLE_ROWS, len(rows))))
    return [rows[n] for n in chosen]


def embed(args: argparse.Namespace) -> int:
    from models.backends.state_reader import StateReader

    texts = all_texts(args.alpacaeval)[args.part :: args.parts]
    reader = StateReader.open(args.gguf, n_threads=args.threads)
    cache_for(args.gguf).fill(texts, reader.features, f"part{args.part}")
    print(f"{len(texts)} texts read into the cache of {args.gguf.name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.state_head", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("embed", "fit"):
        command = commands.add_parser(name)
        command.add_argument("--gguf", type=Path, required=True)
        command.add_argument("--alpacaeval", type=int, default=ALPACAEVAL_PAIRS)
    parts_command = commands.add_parser(
        "parts", help="each signal's agreement alone, from the engine's saved judgments"
    )
    parts_command.add_argument("judgments", type=Path)
    embed_command = commands.choices["embed"]
    embed_command.add_argument("--part", type=int, default=0)
    embed_command.add_argument("--parts", type=int, default=1)
    embed_command.add_argument("--threads", type=int, default=1)
    fit_command = commands.choices["fit"]
    fit_command.add_argument("--out", type=Path, required=True, help="the judge's folder")
    args = parser.parse_args(argv)
    if args.command == "embed":
        return embed(args)
    if args.command == "parts":
        print(json.dumps(part_agreement(args.judgments), indent=2))
        return 0
    return fit(args)


VARIANTS = {  # signals beside the states, in the order they were tried
    "states": (),
    "states + relevance": ("relevance",),
    "states + relevance + length": ("relevance", "length"),
}
CS = (0.0001, 0.0003, 0.001, 0.003, 0.01)  # inverse L2 strengths tried, per feature scaled
FOLDS = 5
EXPLICIT_BOOST = 30.0  # about sqrt(state features / 3): see fit_logistic
TIE_BANDS = tuple(round(0.005 * n, 3) for n in range(61))  # |P(A) - 0.5| up to 0.3


def choose_tie_margin(p_oof: np.ndarray, pairs: list[JudgeItem]) -> float:
    """The |P(A) - 0.5| up to which a pair is a tie: the narrowest band with the best
    agreement on the Auto-J pairs' out-of-fold predictions (their human labels tie)."""
    autoj = [n for n, p in enumerate(pairs) if source_of(p) == "autoj"]
    labels = [pairs[n].label.winner for n in autoj]
    return max(
        TIE_BANDS,
        key=lambda band: (
            np.mean([v == w for v, w in zip(verdicts(p_oof[autoj], band), labels)]),
            -band,
        ),
    )


def source_of(item: JudgeItem) -> str:
    """autoj or alpacaeval, and whether the pair is a counterexample."""
    origin = "alpacaeval" if item.id.startswith("alpacaeval-") else "autoj"
    return origin + ("-counterexample" if item.metadata.get("counterexample") else "")


def signals_of(
    cache: FeatureCache, pairs: list[JudgeItem]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per pair: the state difference, and each explicit signal (read once for all variants)."""
    from app.deciding.relevance import relevance_differences

    first, second = cache.pair_features(pairs)
    extra = {
        "relevance": relevance_differences(pairs),
        "length": np.array([length_log_ratio(*p.answers[:2]) for p in pairs]),
    }
    return first - second, extra


def design(
    states: np.ndarray, extra: dict[str, np.ndarray], signals: tuple[str, ...]
) -> np.ndarray:
    """A variant's columns: the state difference, then its explicit signals."""
    return np.concatenate([states] + [extra[name][:, None] for name in signals], axis=1)


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float, explicit: int = 0) -> np.ndarray:
    """Weights (raw feature units) of a logistic head without intercept, fed both orders.

    The last `explicit` columns are single signals (relevance, length) beside thousands of
    state features: they are scaled up by EXPLICIT_BOOST after standardizing, so the L2
    penalty that tames the states barely holds them back."""
    from sklearn.linear_model import LogisticRegression

    scale = x.std(axis=0) + 1e-6
    if explicit:
        scale[-explicit:] /= EXPLICIT_BOOST
    model = LogisticRegression(fit_intercept=False, C=c, max_iter=3000)
    model.fit(np.concatenate([x, -x]) / scale, np.concatenate([y, 1 - y]))
    return model.coef_[0] / scale


def fold_weights(
    x: np.ndarray, winners: list[str], groups: list[str], c: float, explicit: int = 0
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Each fold's held-out rows and the head's weights fitted on the other folds' decisive
    pairs (folds grouped by request, so a counterexample never sits beside its original
    pair)."""
    from sklearn.model_selection import GroupKFold

    decisive = np.array([w in ("A", "B") for w in winners])
    y = np.array([1 if w == "A" else 0 for w in winners])
    for train, test in GroupKFold(n_splits=FOLDS).split(x, groups=groups):
        train = train[decisive[train]]
        yield test, fit_logistic(x[train], y[train], c, explicit)


def out_of_fold(
    x: np.ndarray, winners: list[str], groups: list[str], c: float, explicit: int = 0
) -> np.ndarray:
    """P(A) of every pair from a head fitted on the other folds (`fold_weights`)."""
    scores = np.zeros(len(winners))
    for test, weights in fold_weights(x, winners, groups, c, explicit):
        scores[test] = x[test] @ weights
    return 1 / (1 + np.exp(-scores))


def best_strength(
    x: np.ndarray, winners: list[str], groups: list[str], cs: tuple[float, ...], explicit: int
) -> tuple[float, float, np.ndarray]:
    """The inverse L2 strength of `cs` with the lowest out-of-fold log loss: (C, that loss,
    the out-of-fold P(A) of every pair)."""
    tried = {c: out_of_fold(x, winners, groups, c, explicit) for c in cs}
    c = min(tried, key=lambda c: log_loss(tried[c], winners))
    return c, log_loss(tried[c], winners), tried[c]


def variant_report(c: float, loss: float, p_oof: np.ndarray, pairs: list[JudgeItem]) -> dict:
    return {
        "C": c,
        "cross-validated log loss": round(loss, 4),
        "agreement": agreement_by_source(verdicts(p_oof), pairs),
    }


def log_loss(p_a: np.ndarray, winners: list[str]) -> float:
    rows = [(p, w) for p, w in zip(p_a, winners) if w in ("A", "B")]
    return float(-np.mean([np.log(max(p if w == "A" else 1 - p, 1e-9)) for p, w in rows]))


def verdicts(p_a: np.ndarray, tie_margin: float = 0.0) -> list[str]:
    return ["tie" if abs(p - 0.5) <= tie_margin else "A" if p > 0.5 else "B" for p in p_a]


def agreement_by_source(found: list[str], pairs: list[JudgeItem]) -> dict[str, float]:
    table: dict[str, list[bool]] = {}
    for verdict, item in zip(found, pairs):
        table.setdefault(source_of(item), []).append(verdict == item.label.winner)
    return {name: round(100 * float(np.mean(hits)), 1) for name, hits in sorted(table.items())}


def fit(args: argparse.Namespace) -> int:
    from app.deciding.state_head import StateHead
    from training.datasets.examples import write_single_rows
    from training.decision.head_records import grade_rule, head_record
    from training.decision.record_file import write_record_file
    from training.evaluation.meta_metrics import longer_answer

    cache = cache_for(args.gguf)
    pairs = saved_fitting_pairs(args.alpacaeval, RUN_DIR)
    winners = [p.label.winner for p in pairs]
    groups = [p.question for p in pairs]
    decisive = np.array([w in ("A", "B") for w in winners])
    y = np.array([1 if w == "A" else 0 for w in winners])
    report: dict = {"gguf": args.gguf.name, "pairs": len(pairs), "variants": {}}
    longer = [longer_answer((len(p.answers[0]), len(p.answers[1]))) for p in pairs]
    report["longer answer wins"] = agreement_by_source(longer, pairs)
    states, extra = signals_of(cache, pairs)
    best = None
    for name, signals in VARIANTS.items():
        x = design(states, extra, signals)
        c, loss, p_oof = best_strength(x, winners, groups, CS, len(signals))
        report["variants"][name] = variant_report(c, loss, p_oof, pairs)
        if best is None or loss < best[0]:
            best = (loss, name, signals, c, p_oof, x)
    report["relevance alone"] = agreement_by_source(verdicts(extra["relevance"] * 1e3), pairs)
    assert best is not None
    _, name, signals, c, p_oof, x = best
    tie_margin = choose_tie_margin(p_oof, pairs)
    chosen = verdicts(p_oof, tie_margin)
    report["chosen"] = {
        "variant": name,
        "tie margin": tie_margin,
        "agreement with the tie margin": agreement_by_source(chosen, pairs),
    }
    weights = fit_logistic(x[decisive], y[decisive], c, len(signals))
    hidden = states.shape[1]
    extra_weights = dict(zip(signals, weights[hidden:]))
    grade_weights, grade_intercept, report["grades"] = fit_grades(cache)
    head = StateHead(
        base_file=args.gguf.name,
        weights=tuple(_round(w) for w in weights[:hidden]),
        grade_weights=tuple(_round(w) for w in grade_weights),
        fitted_on={
            "pairs": int(decisive.sum()),
            "autoj_pairs": sum(source_of(p) == "autoj" for p in pairs),
            "alpacaeval_pairs": args.alpacaeval,
            "single_rows": report["grades"]["rows"],
            "C": c,
            "variant": name,
            "tie_margin": tie_margin,
        },
    )
    write_single_rows(single_rows()[1], HELDOUT_FILE)  # the held-out grades, for the evaluation
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "state_head.json").write_text(head.model_dump_json() + "\n", encoding="utf-8")
    fitted = {
        "by": "python -m training.heads.state_head fit",
        "rows": f"{int(decisive.sum())} decisive training pairs: every Auto-J pair and "
        f"{args.alpacaeval} AlpacaEval pairs, with counterexamples",
        "cv": f"C {c}, variant '{name}'",
    }
    grade_fit = {"by": fitted["by"], "rows": f"{report['grades']['rows']} rated single answers"}
    grade = grade_rule({"grade_states": 1.0}, _round(grade_intercept), grade_fit, hidden)
    own = {"states": 1.0} | {n: _round(w) for n, w in extra_weights.items()}
    record = head_record(args.out.name, own, fitted, hidden, grade)
    by = "`python -m training.heads.state_head fit`"
    write_record_file(args.out / "decision.yaml", record, tables=False, by=by)
    (args.out / "fit_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


def fit_grades(cache: FeatureCache) -> tuple[np.ndarray, float, dict]:
    """Ridge regression from one answer's features to its 1-10 teacher grade."""
    from scipy.stats import spearmanr
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import cross_val_predict

    rows = grade_rows()
    x = np.stack([cache.get(state_text(r.question, r.answers[0])) for r in rows])
    y = np.array([float(r.label.score) for r in rows])
    scale = x.std(axis=0) + 1e-6
    model = RidgeCV(alphas=np.logspace(0, 5, 11))
    predicted = cross_val_predict(model, x / scale, y, cv=FOLDS)
    model.fit(x / scale, y)
    lengths = [len(r.answers[0]) for r in rows]
    report = {
        "rows": len(rows),
        "alpha": float(model.alpha_),
        "cross-validated Spearman": round(float(spearmanr(predicted, y).statistic), 3),
        "length Spearman": round(float(spearmanr(lengths, y).statistic), 3),
    }
    return model.coef_ / scale, float(model.intercept_), report


PART_VERDICTS = {  # what each signal alone (or a subset) says, from a judgment's parts
    "states alone": ("states",),
    "relevance alone": ("relevance",),
    "length alone": ("length",),
    "states + relevance": ("states", "relevance"),
    "all parts (no tie margin)": ("states", "relevance", "length"),
}


def part_agreement(judgments: Path) -> dict[str, dict[str, float]]:
    """Per evaluation file: agreement of the reported verdict (its leaning) and of each
    signal of the head alone, from the engine's saved judgments (`verdict_parts`)."""
    from app.io.judgments import read_judgments
    from training.heads.relevance_join import EVAL_FILES, labelled_items
    from training.lora.config import resolve_path

    items = {resolve_path(f).name: labelled_items(resolve_path(f)) for f in EVAL_FILES}
    table: dict[str, dict[str, list[bool]]] = {}
    for judgment in read_judgments(judgments):
        item = items.get(judgment.metadata.get("eval_file", ""), {}).get(judgment.line)
        if item is None or not judgment.verdict_parts:
            continue
        label = item.label.winner
        rows = table.setdefault(judgment.metadata["eval_file"], {})
        rows.setdefault("reported", []).append(judgment.leaning == label)
        for name, signals in PART_VERDICTS.items():
            score = sum(judgment.verdict_parts[s] for s in signals)
            said = "A" if score > 0 else "B" if score < 0 else "tie"
            rows.setdefault(name, []).append(said == label)
    return {
        name: {key: round(100 * float(np.mean(hits)), 1) for key, hits in rows.items()}
        for name, rows in table.items()
    }


def _round(value: float) -> float:
    return float(f"{value:.6g}")


if __name__ == "__main__":
    sys.exit(main())
