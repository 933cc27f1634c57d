"""Does request relevance help the trained judge where it fails? (issue 13, step 4)

The decision-trained judge is confidently wrong on LLMBar's adversarial
neighbours, where an answer to a *similar* request competes with the answer to
the request; MiniLM request relevance alone is right on 72 % of them
(`training.heads.relevance_probe`). This joins the two and measures each part apart:

1. `prepare`: a fitting set from the training split only, pairs the judge never
   trained on: length-balanced decisive AlpacaEval pairs outside the ones its
   config sampled for training (one pair per instruction, references left out
   like the evaluation files), plus one counterexample per pair (the pair's
   winner against a longer answer to the most similar other instruction, which
   must lose; `training.datasets.examples.counterexamples`), written as our JSONL layout.
2. Judge it with the engine, exactly as the evaluation does (resumable):
   `python -m training.evaluation.evaluate FIT.jsonl --model pj-qwen05-decision --out DIR`.
3. `fit`: a logistic head without intercept over the judge's calibrated margin
   P(A) - P(B) and the relevance difference cos(request, A) - cos(request, B),
   fed both orders so it has no position preference, fitted on the fitting set;
   then scored on the saved judgments of the evaluation files beside the judge
   alone, relevance alone and "the longer answer wins".

A diagnostic like the probes: nothing here changes what the app runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.deciding.relevance import relevance_differences
from app.io.writer import write_jsonl
from app.records import JudgeItem
from models.judge_settings import JUDGE_DEFAULTS
from models.verdict_settings import RelevanceJoin
from training.evaluation.meta_metrics import longer_answer, percent
from training.lora.config import resolve_config_path, resolve_path

RUN_DIR = Path("training/runs/relevance-join")
EVAL_FILES = (
    "../shared/data/autoj/pairwise_dev.jsonl",
    "../shared/data/llmbar/natural.json",
    "../shared/data/llmbar/adversarial_neighbor.json",
)


def fitting_pairs(config_name: str, pairs: int, seed: int = 99) -> list[JudgeItem]:
    """`pairs` AlpacaEval pairs the config's judge never trained on, plus as many
    nearest-request counterexamples."""
    from app.catalog.scenarios import load_catalog
    from training.datasets.alpacaeval import length_balanced, read_decisive
    from training.datasets.examples import BuildReport, alpacaeval_training_pairs, counterexamples
    from training.lora.config import load_config

    config = load_config(resolve_config_path(config_name))
    trained = {item.id for item in alpacaeval_training_pairs(config.data, BuildReport())}
    seen: set[str] = set()
    pool = []
    for item in read_decisive(resolve_path(config.data.alpacaeval_file)):
        if item.id in trained or item.question in seen:
            continue
        seen.add(item.question)
        pool.append(item.model_copy(update={"reference": None}))
    chosen = length_balanced(pool, pairs, seed)
    made = counterexamples(chosen, 1.0, seed, load_catalog(), BuildReport(), "nearest")
    return chosen + made


def write_items(items: Sequence[JudgeItem], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as stream:
        for item in items:
            row = {
                "id": item.id,
                "question": item.question,
                "answers": list(item.answers),
                "label": {"winner": item.label.winner},
                "metadata": {"counterexample": bool(item.metadata.get("counterexample"))},
            }
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")


def labelled_items(path: Path) -> dict[int, JudgeItem]:
    from app.io.reader import read_rows

    return {r.line: r.item for r in read_rows(path) if r.item is not None and r.item.label}


def margins(judgments: Path, file_name: str) -> dict[int, float]:
    """line -> the judge's calibrated P(A) - P(B) (both orders averaged)."""
    found = {}
    for line in judgments.read_text(encoding="utf-8").splitlines():
        j = json.loads(line)
        if j.get("metadata", {}).get("eval_file") != file_name or j.get("status") != "ok":
            continue
        probs = j.get("verdict_probs") or {}
        found[j["line"]] = probs.get("A", 0.0) - probs.get("B", 0.0)
    return found


def features(judgments: Path, data_file: Path) -> tuple[np.ndarray, list[JudgeItem]]:
    items = labelled_items(data_file)
    judged = margins(judgments, data_file.name)
    lines = [line for line in sorted(items) if line in judged]
    chosen = [items[line] for line in lines]
    llm = np.array([judged[line] for line in lines])
    return np.stack([llm, relevance_differences(chosen)], axis=1), chosen


def apply_join(judgments: Path, weights: RelevanceJoin, uncertain_below: float) -> list:
    """Saved judgments of the evaluation files, pairwise ones joined with relevance as the
    engine joins them, then marked uncertain below the threshold (as the engine does)."""
    from app.deciding.relevance import join_relevance
    from app.deciding.verdicts import mark_uncertain
    from app.io.judgments import read_judgments

    items = {resolve_path(name).name: labelled_items(resolve_path(name)) for name in EVAL_FILES}
    joined = []
    for judgment in read_judgments(judgments):
        item = items.get(judgment.metadata.get("eval_file", ""), {}).get(judgment.line)
        if item is not None and judgment.relevance is None:
            judgment = judgment.model_copy(update={"winner": judgment.leaning})
            judgment = mark_uncertain(join_relevance(judgment, item, weights), uncertain_below)
        joined.append(judgment)
    return joined


def fit_head(x: np.ndarray, winners: Sequence[str]):
    """Logistic regression without intercept on both orders: no position preference."""
    from sklearn.linear_model import LogisticRegression

    y = np.array([1 if w == "A" else 0 for w in winners])
    scale = x.std(axis=0) + 1e-9
    head = LogisticRegression(fit_intercept=False, C=1.0, max_iter=1000)
    head.fit(np.concatenate([x, -x]) / scale, np.concatenate([y, 1 - y]))
    return head, scale


def agreement(verdicts: Sequence[str], items: Sequence[JudgeItem]) -> float:
    hits = sum(v == i.label.winner for v, i in zip(verdicts, items))
    return round(percent(hits, len(items)), 1)


def verdicts_of(scores: np.ndarray) -> list[str]:
    return ["A" if s > 0 else "B" for s in scores]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.relevance_join", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="write the fitting set")
    prepare.add_argument("--config", default="qwen05-decision")
    prepare.add_argument("--pairs", type=int, default=80)
    prepare.add_argument("--out", type=Path, default=RUN_DIR / "fit.jsonl")
    fit = commands.add_parser("fit", help="fit the head and score the evaluation files")
    fit.add_argument("--fit-file", type=Path, default=RUN_DIR / "fit.jsonl")
    fit.add_argument("--fit-judgments", type=Path, default=RUN_DIR / "judge" / "judgments.jsonl")
    fit.add_argument(
        "--eval-judgments",
        type=Path,
        default=Path("training/runs/pj-qwen05-decision/eval/combined.jsonl"),
    )
    fit.add_argument("--out", type=Path, default=RUN_DIR / "results.json")
    apply = commands.add_parser(
        "apply",
        help="join saved judgments of the evaluation files with relevance through the "
        "engine's own join (app/deciding/relevance.py), for "
        "`training.evaluation.evaluate --judgments`",
    )
    apply.add_argument("judgments", type=Path)
    apply.add_argument("--margin", type=float, required=True)
    apply.add_argument("--relevance", type=float, required=True)
    apply.add_argument("--uncertain-below", type=float, default=JUDGE_DEFAULTS.uncertain_below)
    apply.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "apply":
        joined = apply_join(
            args.judgments,
            RelevanceJoin(margin=args.margin, relevance=args.relevance),
            args.uncertain_below,
        )
        write_jsonl(joined, args.out)
        print(f"{args.out}: {len(joined)} judgments")
        return 0
    if args.command == "prepare":
        items = fitting_pairs(args.config, args.pairs)
        write_items(items, args.out)
        made = sum(bool(i.metadata.get("counterexample")) for i in items)
        print(f"{args.out}: {len(items)} pairs ({made} counterexamples)")
        return 0

    results = fitted(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))
    return 0


def fitted(args: argparse.Namespace) -> dict:
    """The join fitted on the fitting set's judgments, and scored on each evaluation file
    beside the judge alone, relevance alone and the longer answer."""
    x_fit, fit_items = features(args.fit_judgments, args.fit_file)
    head, scale = fit_head(x_fit, [i.label.winner for i in fit_items])
    weights = (head.coef_[0] / scale).tolist()
    results: dict = {
        "fit_pairs": len(fit_items),
        "weights (margin, relevance)": [round(w, 3) for w in weights],
        "fit agreement": {
            "judge alone": agreement(verdicts_of(x_fit[:, 0]), fit_items),
            "relevance alone": agreement(verdicts_of(x_fit[:, 1]), fit_items),
            "joined": agreement(verdicts_of(x_fit @ np.array(weights)), fit_items),
        },
        "files": {},
    }
    for name in EVAL_FILES:
        path = resolve_path(name)
        x, items = features(args.eval_judgments, path)
        joined = verdicts_of(x @ np.array(weights))
        results["files"][path.name] = {
            "rows": len(items),
            "judge alone": agreement(verdicts_of(x[:, 0]), items),
            "relevance alone": agreement(verdicts_of(x[:, 1]), items),
            "joined": agreement(joined, items),
            "longer answer wins": agreement(
                [longer_answer((len(i.answers[0]), len(i.answers[1]))) for i in items], items
            ),
            "joined picks the longer answer %": round(
                percent(
                    sum(
                        v == longer_answer((len(i.answers[0]), len(i.answers[1])))
                        for v, i in zip(joined, items)
                    ),
                    len(items),
                ),
                1,
            ),
        }
    return results


if __name__ == "__main__":
    sys.exit(main())
