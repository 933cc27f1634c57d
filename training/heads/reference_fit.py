"""The reference's part of a head's verdict, fitted on pairs whose reference decides them.

    python -m training.heads.reference_fit [--model NAME] [--data DIR] [--out DIR] [--threads 1]
                                           [--reading-cache DIR]

The pairs are training/datasets/reference_decided.py's (one answer agrees with the reference, the
label). Each pair is judged once through the engine, criteria and reference read on from
the head's reads as a user's page reads them; the judgment keeps the head's own logit,
A's lead in the reference's likelihood after each answer
(`reference_likelihood_difference`), A's lead in the log-odds of the judge's check of each
answer against the reference (`reference_check_difference`: asked after the reference
whether the answer gives its result, the judge's true against false) and the criterion
scores read with the reference. Judgments are saved row by row, so a stopped run goes on.

Four signals of the reference are candidates: the likelihood lead, the check's lead, A's
lead in the share of the reference's own words each answer states
(app/deciding/reference_words.py) and, where the reference restates the request's items in
an order, A's lead in the share of them it states in that order
(app/deciding/reference_order.py); the last two are read from the text, at no cost. Each
candidate (`CANDIDATES`) gets the maximum-likelihood weights >= 0 with the head's logit as
a fixed offset (training/datasets/reference_pairs.fit_weights), and the one with the best
request-grouped cross-validation on `train.jsonl` alone is chosen (the cheaper on a tie).
`test.jsonl` is read after, with the weights fitted on all training pairs: the verdict
with the reference against the head alone (the verdict without it), each signal alone,
and the longer and the shorter answer, overall and per family. The issue's coding pair
(a right answer against a polished one that sorts the caller's list in place) is judged
too. `--write-head` puts the chosen weights into a judge's state_head.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.code_run.behaviour import BehaviourReading, behaviour_reading
from app.deciding.reference_order import reference_order_lead
from app.deciding.reference_words import reference_words_lead
from app.io.reader import InputRow, read_rows
from app.records import JudgeItem, Judgment, Label
from models.run_settings import RUN_DEFAULTS
from training.datasets.reference_decided import OUT as DATA
from training.datasets.reference_pairs import (
    cross_validated_weights,
    fit_weights,
    fitted_on_top,
    head_score,
)
from training.evaluation.report_files import write_report

OUT = Path(__file__).resolve().parents[1] / "runs" / "reference-fit"
# the candidates, cheapest first (a tie goes to the earlier): feature names of `features`
CANDIDATES = {
    "the reference's words": ("words",),
    "the words and the order": ("words", "order"),
    "the reference's likelihood": ("lead",),
    "both": ("words", "lead"),
    "both and the order": ("words", "lead", "order"),
    "the judge's check": ("check",),
    "both and the check": ("words", "lead", "check"),
    "both, the check and the order": ("words", "lead", "check", "order"),
}
# where each chosen signal's weight goes in a state head (app/deciding/state_head.py)
HEAD_FIELDS = {
    "words": "reference_words_weight",
    "lead": "reference_likelihood_weight",
    "check": "reference_check_weight",
    "order": "reference_order_weight",
    "behaviour": "reference_behaviour_weight",
}
# fitted on top of the chosen signals (they stay as they are for a user who does not run code)
STACKED = "behaviour"
CODING_PAIR = JudgeItem(
    id="coding-pair",
    question="Write a Python function that returns the second largest distinct value of a "
    "list, or None when there are fewer than two.",
    answers=(
        "def second_largest(xs):\n    values = sorted(set(xs))\n    return values[-2] if "
        "len(values) >= 2 else None",
        "Here is a clean and efficient solution!\n\n```python\ndef second_largest(xs):\n"
        "    xs.sort()\n    return xs[-2]\n```\n\nThis sorts the list and returns the second "
        "to last element, which is the second largest.",
    ),
    reference="def second_largest(xs):\n    distinct = sorted(set(xs))\n    return "
    "distinct[-2] if len(distinct) > 1 else None",
    label=Label(winner="A"),  # the right answer
)


def judged(judge: Any, rows: Sequence[InputRow], saved: Path, quiet: bool) -> list[Judgment]:
    """Each row's judgment, from `saved` where it was judged before (one JSON per line)."""
    done = [Judgment.model_validate_json(line) for line in _lines(saved)]
    with saved.open("a", encoding="utf-8") as out:
        for row in rows[len(done) :]:
            assert row.item is not None
            judgment = judge.judge(row.item, judge.config, line=row.line)
            out.write(judgment.model_dump_json() + "\n")
            out.flush()
            done.append(judgment)
            if not quiet and len(done) % 10 == 0:
                print(f"{saved.stem}: {len(done)} of {len(rows)} pairs", file=sys.stderr)
    return done


def with_reference_read(config: Any) -> Any:
    """`config` whose head reads the reference's likelihood: a head without a weight for it
    gets one too small to move a verdict (the lead is read where a weight uses it); the
    reference's share is taken out of the head's logit here anyway (`head_score`)."""
    from dataclasses import replace

    head = config.parts.head
    if head is None:
        return config
    fields = ("reference_likelihood_weight", "reference_check_weight")
    head = head.model_copy(update={f: getattr(head, f) or 1e-9 for f in fields})
    return replace(config, parts=replace(config.parts, head=head))


def features(rows: Sequence[InputRow], judgments: Sequence[Judgment]) -> dict[str, np.ndarray]:
    """Per pair: the head's logit, the likelihood lead, the reference's words' lead, the
    check's lead, the lead of A's function in the reference function's results (code run;
    0 where the reference is no function), the criteria's lead (where they were read), A's
    length lead, and whether A is right."""
    heads, leads, words, checks, criteria, longer, a_wins = [], [], [], [], [], [], []
    behaviours, orders = [], []
    for row, judgment in zip(rows, judgments, strict=True):
        assert row.item is not None and row.item.label is not None
        parts = judgment.verdict_parts or {}
        heads.append(head_score(judgment))
        leads.append(parts.get("reference_likelihood_difference", 0.0))
        checks.append(parts.get("reference_check_difference", 0.0))
        item = row.item
        words.append(reference_words_lead(item.answers, item.reference or "", item.question))
        orders.append(reference_order_lead(item.answers, item.reference or "", item.question))
        run = behaviour_reading(item.answers, item.reference or "", item.question)
        behaviours.append((run.lead() if isinstance(run, BehaviourReading) else None) or 0.0)
        overall = [a.expected_overall or 0.0 for a in judgment.answers] or [0.0, 0.0]
        criteria.append(overall[0] - overall[1])
        longer.append(len(row.item.answers[0]) - len(row.item.answers[1]))
        a_wins.append(row.item.label.winner == "A")
    return {
        "head": np.array(heads),
        "lead": np.array(leads),
        "words": np.array([w or 0.0 for w in words]),
        "check": np.array(checks),
        "order": np.array([o or 0.0 for o in orders]),
        "behaviour": np.array(behaviours),
        "criteria": np.array(criteria),
        "longer": np.array(longer, dtype=float),
        "a_wins": np.array(a_wins, dtype=float),
    }


def with_weights(found: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """The verdict's score with the reference: the head's logit plus each weighted signal."""
    return found["head"] + sum(w * found[name] for name, w in weights.items() if w)


def percent_right(score: np.ndarray, a_wins: np.ndarray) -> float:
    """The share of pairs a score for A (positive: A) gets right; a zero counts as wrong."""
    won = a_wins == 1
    return round(100 * float(((score > 0) == won)[score != 0].sum()) / len(won), 1)


def accuracies(found: dict[str, np.ndarray], weights: dict[str, float]) -> dict[str, float]:
    """The share of pairs each decision gets right (a zero score counts as wrong)."""

    def right(score: np.ndarray) -> float:
        return percent_right(score, found["a_wins"])

    return {
        "verdict with the reference": right(with_weights(found, weights)),
        "verdict without it (the head)": right(found["head"]),
        "the reference's likelihood alone": right(found["lead"]),
        "the reference's words alone": right(found["words"]),
        "the judge's check alone": right(found["check"]),
        "the items' order alone": right(found["order"]),
        "the code's behaviour alone (run)": right(found["behaviour"]),
        "the longer answer": right(found["longer"]),
        "the shorter answer": right(-found["longer"]),
    }


def chosen_signals(fit: dict[str, np.ndarray], groups: list[str]) -> dict[str, Any]:
    """Each candidate's request-grouped cross-validation on the training pairs, and the
    one chosen (the best accuracy; the cheaper on a tie) with its weights on all of them."""
    found = {
        name: cross_validated_weights(
            fit["head"], np.column_stack([fit[n] for n in signals]), fit["a_wins"], groups
        )
        for name, signals in CANDIDATES.items()
    }
    best = max(CANDIDATES, key=lambda name: found[name]["accuracy"] or 0.0)  # first on ties
    signals = CANDIDATES[best]
    weights = fit_weights(fit["head"], np.column_stack([fit[n] for n in signals]), fit["a_wins"])
    chosen = {n: round(float(w), 3) for n, w in zip(signals, weights)}
    return {
        "candidates": found,
        "chosen": best,
        "weights": chosen,
        **stacked_fit(fit, chosen, groups),
    }


def stacked_fit(
    fit: dict[str, np.ndarray], chosen: dict[str, float], groups: list[str]
) -> dict[str, Any]:
    """The code's behaviour fitted on top of the chosen signals (it counts only where a
    user runs code, so they stay as they are): its request-grouped CV and its weight; none
    where no training pair has a function to run."""
    found, weight = fitted_on_top(
        with_weights(fit, chosen), fit.get(STACKED), fit["a_wins"], groups
    )
    return {"stacked": {"signal": STACKED, **found}, "stacked_weight": round(weight, 3)}


def report(
    train: tuple[Sequence[InputRow], Sequence[Judgment]],
    test: tuple[Sequence[InputRow], Sequence[Judgment]],
    coding: tuple[JudgeItem, Judgment],
) -> dict[str, Any]:
    fit = features(*train)
    groups = [row.item.question for row in train[0] if row.item is not None]
    choice = chosen_signals(fit, groups)
    weights = choice["weights"]
    with_code = {**weights, STACKED: choice["stacked_weight"]}
    held = features(*test)
    families = [(row.raw or {}).get("family", "?") for row in test[0]]
    by_family = {}
    for family in sorted(set(families)):
        keep = [n for n, f in enumerate(families) if f == family]
        part = {name: values[keep] for name, values in held.items()}
        run = accuracies(part, with_code)["verdict with the reference"]
        by_family[family] = {
            "pairs": len(keep),
            **accuracies(part, weights),
            "verdict with the reference, code run": run,
        }
    item, judged = coding
    one = features([InputRow(line=0, item=item, error=None, raw=None)], [judged])
    return {
        "train_pairs": len(train[0]),
        "test_pairs": len(test[0]),
        **choice,
        "train": accuracies(fit, weights),
        "test": accuracies(held, weights),
        "train_code_run": accuracies(fit, with_code)["verdict with the reference"],
        "test_code_run": accuracies(held, with_code)["verdict with the reference"],
        "test_by_family": by_family,
        "coding_pair": {
            "right_answer": "A",
            "head": "A" if one["head"][0] > 0 else "B",
            "with_the_reference": "A" if with_weights(one, weights)[0] > 0 else "B",
            "reference_likelihood_difference": round(float(one["lead"][0]), 4),
            "reference_words_difference": round(float(one["words"][0]), 4),
            "reference_check_difference": round(float(one["check"][0]), 4),
            "reference_order_difference": round(float(one["order"][0]), 4),
            "with_code_run": "A" if with_weights(one, with_code)[0] > 0 else "B",
            "reference_behaviour_difference": round(float(one["behaviour"][0]), 4),
        },
    }


def render(result: dict[str, Any]) -> str:
    weights = ", ".join(f"{name} {w}" for name, w in result["weights"].items())
    lines = [
        f"Reference-decided pairs: {result['train_pairs']} training pairs, "
        f"{result['test_pairs']} held out. The signals chosen by request-grouped "
        f"cross-validation on the training pairs:",
        "",
        "| candidate | CV accuracy % | weights on all training pairs |",
        "|---|---:|---|",
    ]
    for name, found in result["candidates"].items():
        mark = " (chosen)" if name == result["chosen"] else ""
        lines.append(
            f"| {name}{mark} | {100 * (found['accuracy'] or 0):.1f} | "
            f"{found['weights_on_all_pairs']} |"
        )
    lines += [
        "",
        f"With {result['chosen']} (weights: {weights}):",
        "",
        "| decision | train | test |",
        "|---|---:|---:|",
    ]
    for name, value in result["test"].items():
        lines.append(f"| {name} | {result['train'][name]} | {value} |")
    stacked = result["stacked"]
    lines += [
        f"| verdict with the reference, code run (+ {stacked['signal']} "
        f"{result['stacked_weight']}; CV {100 * (stacked['accuracy'] or 0):.1f} %) | "
        f"{result['train_code_run']} | {result['test_code_run']} |",
        "",
        "| family | pairs | with the reference | code run | without | the shorter answer |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for family, row in result["test_by_family"].items():
        lines.append(
            f"| {family} | {row['pairs']} | {row['verdict with the reference']} | "
            f"{row['verdict with the reference, code run']} | "
            f"{row['verdict without it (the head)']} | {row['the shorter answer']} |"
        )
    coding = result["coding_pair"]
    lines += [
        "",
        f"The coding pair (right answer A): the head says {coding['head']}, with the "
        f"reference {coding['with_the_reference']} (likelihood lead "
        f"{coding['reference_likelihood_difference']}, words lead "
        f"{coding['reference_words_difference']}, check lead "
        f"{coding['reference_check_difference']}); with code run "
        f"{coding['with_code_run']} (behaviour lead {coding['reference_behaviour_difference']}).",
    ]
    return "\n".join(lines) + "\n"


def write_head(path: Path, result: dict[str, Any]) -> None:
    """The chosen weights written into the state head at `path` (the other signal's weight
    set to 0), with where they were fitted."""
    data = json.loads(path.read_text(encoding="utf-8"))
    weights = {**result["weights"], result["stacked"]["signal"]: result["stacked_weight"]}
    for signal, field in HEAD_FIELDS.items():
        data[field] = weights.get(signal, 0.0)
    cv = result["candidates"][result["chosen"]]["accuracy"]
    stacked = result["stacked"]["accuracy"]
    data.setdefault("fitted_on", {})["reference_signals"] = (
        f"{result['chosen']}: {result['train_pairs']} reference-decided training pairs "
        f"(training.heads.reference_fit), request-grouped CV {100 * (cv or 0):.1f} %; "
        f"the code's behaviour on top (code run): CV {100 * (stacked or 0):.1f} %"
    )
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.reference_fit", description=__doc__
    )
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument(
        "--reading-cache",
        type=Path,
        help="keep each answer's read there (training.heads.reference_levels reads them)",
    )
    parser.add_argument(
        "--write-head", type=Path, help="a state_head.json to write the chosen weights into"
    )
    args = parser.parse_args(argv)
    if not (args.data / "train.jsonl").is_file():
        from training.datasets.reference_decided import main as build

        build(["--out", str(args.data)])
    from app.judging.settings import SettingsLayer
    from models.backends.base import BackendOptions
    from training.device.caches import cached_reads
    from training.evaluation.evaluate import Overrides, open_evaluated

    # the verdict's reference part is read without the criterion scores (the reference comes
    # first in the judge's turn, so its likelihood is the same with them)
    judge = open_evaluated(
        args.model,
        BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=args.threads),
        overrides=Overrides(SettingsLayer(criterion_scores=False)),
    )
    judge.config = with_reference_read(judge.config)
    args.out.mkdir(parents=True, exist_ok=True)
    cached = cached_reads(judge.backend, args.reading_cache, args.out / "train.jsonl")
    try:
        sets = {}
        for name in ("train", "test"):
            rows = [r for r in read_rows(args.data / f"{name}.jsonl") if r.item is not None]
            sets[name] = (rows, judged(judge, rows, args.out / f"{name}.jsonl", args.quiet))
        coding = (CODING_PAIR, judge.judge(CODING_PAIR, judge.config))
    finally:
        if cached is not None:
            cached.close()
        judge.close()
    result = report(sets["train"], sets["test"], coding)
    if args.write_head is not None:
        write_head(args.write_head, result)
    write_report(args.out, result, render(result))
    return 0


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
