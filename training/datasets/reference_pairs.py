"""Does the reference move the default judge's verdicts the right way? Pairs with references.

    python -m training.datasets.reference_pairs [FILE] [--model NAME] [--score-cache DIR]
                                       [--reading-cache DIR] [--out DIR] [--limit N]

The only labelled rows with reference answers are Prometheus absolute-grading rows
(../shared/data/prometheus/vicuna_eval.json: 80 requests x 4 answers, a reference each,
three GPT-4 grades). Two answers to the same request whose GPT-4 means differ make a
labelled pair (the higher mean wins; equal means are left out): 322 pairs. Each pair is
judged by the engine pairwise on the row's rubric, once with the reference and once
without, and the report gives, on the same pairs:

- the verdict with the reference (the head plus its reference reading,
  app.deciding.state_judging.pair_verdict) and without it (the head alone);
- the decision of the criterion scores alone, read with and without the reference;
- the longer answer.

The criterion scores are a reading beside the verdict: their lead no longer moves it (the
signal `reference_criteria`, fitted here on this evaluation file, was retired).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from app.io.reader import InputRow, read_rows
from app.records import Judgment, Label
from training.evaluation.reference_runs import parser, run

RUNS_DIR = Path(__file__).resolve().parents[1] / "runs" / "reference-pairs"


def pairs_of(rows: list[InputRow]) -> list[InputRow]:
    """Every two graded answers to one request with different labels, as a labelled pair."""
    by_request: dict[str, list[InputRow]] = {}
    for row in rows:
        if row.item is not None and row.item.label and row.item.label.score is not None:
            by_request.setdefault(row.item.question, []).append(row)
    pairs = []
    for graded in by_request.values():
        for first, second in itertools.combinations(graded, 2):
            a, b = first.item, second.item
            assert a is not None and b is not None and a.label and b.label
            if a.label.score == b.label.score:
                continue
            winner = "A" if a.label.score > b.label.score else "B"  # type: ignore[operator]
            item = a.model_copy(
                update={
                    "id": f"{a.id}|{b.id}",
                    "answers": (a.answers[0], b.answers[0]),
                    "label": Label(winner=winner),
                    "metadata": {"scores": [a.label.score, b.label.score]},
                }
            )
            pairs.append(replace(first, item=item))
    return pairs


def file_pairs(args: argparse.Namespace) -> list[InputRow]:
    return pairs_of(list(read_rows(args.file)))[: args.limit]


def head_score(judgment: Judgment) -> float:
    """The head's own logit for A, before any reference reading (a user's reference or, with
    none, the judge's own answer)."""
    parts = judgment.verdict_parts or {}
    return parts.get("score", 0.0) - parts.get("reference", 0.0) - parts.get("own_answer", 0.0)


def report(
    pairs: Sequence[InputRow], judged: dict[str, list[Judgment]], model: str
) -> dict[str, Any]:
    a_wins = np.array([p.item.label.winner == "A" for p in pairs], dtype=float)  # type: ignore[union-attr]
    given, without = judged["with the reference"], judged["without it"]

    def accuracy(picks: list[str | None]) -> dict[str, float]:
        truth = ["A" if w else "B" for w in a_wins]
        decided = [(p, t) for p, t in zip(picks, truth) if p in ("A", "B")]
        return {
            "accuracy": float(np.mean([p == t for p, t in zip(picks, truth)])),
            "decided": len(decided) / len(picks),
            "accuracy_decided": float(np.mean([p == t for p, t in decided])) if decided else 0.0,
        }

    def sign(values: np.ndarray) -> list[str | None]:
        return ["A" if v > 0 else "B" if v < 0 else None for v in values]

    offsets = np.array([head_score(j) for j in given])
    lengths = np.array([len(p.item.answers[0]) - len(p.item.answers[1]) for p in pairs])  # type: ignore[union-attr]
    table = {
        "verdict with the reference (head + reference reading)": accuracy(
            [j.winner for j in given]
        ),
        "verdict without it (the head alone)": accuracy([j.winner for j in without]),
        "the head's leaning (no threshold)": accuracy(sign(offsets)),
        "criterion scores alone, with the reference": accuracy([j.criteria_verdict for j in given]),
        "criterion scores alone, without it": accuracy([j.criteria_verdict for j in without]),
        "the longer answer": accuracy(sign(lengths.astype(float))),
    }
    return {
        "model": model,
        "pairs": len(pairs),
        "label": "the answer with the higher mean of GPT-4's three grades",
        "verdicts": table,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"{result['model']} on {result['pairs']} vicuna_eval pairs (label: {result['label']}):",
        "",
        "| decision | accuracy | decided | accuracy where decided |",
        "|---|---:|---:|---:|",
    ]
    for name, v in result["verdicts"].items():
        lines.append(
            f"| {name} | {v['accuracy']:.3f} | {v['decided']:.2f} | {v['accuracy_decided']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parser("python -m training.datasets.reference_pairs", __doc__, RUNS_DIR).parse_args(argv)
    return run(args, file_pairs, "pairwise", report, render)


if __name__ == "__main__":
    sys.exit(main())
