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
  app.deciding.state_judging.with_reference_reading) and without it (the head alone);
- the decision of the criterion scores alone, read with and without the reference;
- the longer answer.

It also fits the reference weight: the head's logit plus w times A's lead in the
criterion scores read with the reference (0-1 of the rubric's range), w by maximum
likelihood with the head's logit as a fixed offset, in 5 folds grouped by request. The
fold accuracies are the honest figure; the weight fitted on all pairs is what a head
ships (`reference_weight`). This file is the only one the weight has seen: the
vicuna figures of a head that ships it are in-sample, which the report says.
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
FOLDS = 5


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
    """The head's own logit for A, before any reference reading."""
    parts = judgment.verdict_parts or {}
    return parts.get("score", 0.0) - parts.get("reference", 0.0)


def criteria_lead(judgment: Judgment, span: float) -> float:
    """A's lead in the criterion scores, on 0-1 of the scale (`span` = its max - min)."""
    first, second = (a.expected_overall or 0.0 for a in judgment.answers)
    return (first - second) / span


def fit_weights(offsets: np.ndarray, leads: np.ndarray, a_wins: np.ndarray) -> np.ndarray:
    """The weights >= 0 that maximise the likelihood of sigmoid(offset + leads . w), one
    weight per column of `leads` (one column: a vector of leads)."""
    leads = np.asarray(leads, dtype=float).reshape(len(offsets), -1)
    signs = 2.0 * a_wins - 1.0

    def loss(w: np.ndarray) -> float:
        return float(np.logaddexp(0.0, -signs * (offsets + leads @ w)).sum())

    if leads.shape[1] == 1:
        from scipy.optimize import minimize_scalar

        found = minimize_scalar(
            lambda w: loss(np.array([w])), bounds=(0.0, 100.0), method="bounded"
        )
        return np.array([float(found.x)])
    from scipy.optimize import minimize

    start = np.zeros(leads.shape[1])
    bounds = [(0.0, 100.0)] * leads.shape[1]
    return minimize(loss, start, bounds=bounds, method="L-BFGS-B").x


def fit_weight(offsets: np.ndarray, leads: np.ndarray, a_wins: np.ndarray) -> float:
    """The w >= 0 that maximises the likelihood of sigmoid(offset + w * lead)."""
    return float(fit_weights(offsets, leads, a_wins)[0])


def cross_validated_weights(
    offsets: np.ndarray, leads: np.ndarray, a_wins: np.ndarray, groups: list[str]
) -> dict[str, Any]:
    """Request-grouped folds: each fold's weights judged on the requests it did not see
    (fewer folds where there are fewer requests; none under two). `leads`: one column a
    signal, as `fit_weights` takes them."""
    from sklearn.model_selection import GroupKFold

    leads = np.asarray(leads, dtype=float).reshape(len(offsets), -1)
    folds = min(FOLDS, len(set(groups)))
    if folds < 2:
        return {"accuracy": None, "fold_weights": [], "weights_on_all_pairs": None}
    right = np.zeros(len(a_wins), dtype=bool)
    weights = []
    for train, test in GroupKFold(folds).split(offsets, a_wins, groups):
        w = fit_weights(offsets[train], leads[train], a_wins[train])
        weights.append([round(float(v), 3) for v in w])
        right[test] = ((offsets[test] + leads[test] @ w) > 0) == (a_wins[test] == 1)
    on_all = fit_weights(offsets, leads, a_wins)
    return {
        "accuracy": float(right.mean()),
        "fold_weights": weights,
        "weights_on_all_pairs": [round(float(v), 3) for v in on_all],
    }


def cross_validated_weight(
    offsets: np.ndarray, leads: np.ndarray, a_wins: np.ndarray, groups: list[str]
) -> dict[str, Any]:
    """`cross_validated_weights` of one signal, its weights as numbers."""
    found = cross_validated_weights(offsets, leads, a_wins, groups)
    on_all = found.pop("weights_on_all_pairs")
    return {
        **found,
        "fold_weights": [w[0] for w in found["fold_weights"]],
        "weight_on_all_pairs": on_all[0] if on_all else None,
    }


def report(
    pairs: Sequence[InputRow], judged: dict[str, list[Judgment]], model: str
) -> dict[str, Any]:
    a_wins = np.array([p.item.label.winner == "A" for p in pairs], dtype=float)  # type: ignore[union-attr]
    span = 4.0  # the Prometheus rubric: 1-5
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
    leads = np.array([criteria_lead(j, span) for j in given])
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
    groups = [p.item.question for p in pairs]  # type: ignore[union-attr]
    lead_without = np.array([criteria_lead(j, span) for j in without])
    return {
        "model": model,
        "pairs": len(pairs),
        "label": "the answer with the higher mean of GPT-4's three grades",
        "verdicts": table,
        "reference_weight_cv": cross_validated_weight(offsets, leads, a_wins, groups),
        "same_weight_fit_without_the_reference": cross_validated_weight(
            offsets, lead_without, a_wins, groups
        ),
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
    for key, what in (
        ("reference_weight_cv", "criterion scores read with the reference"),
        ("same_weight_fit_without_the_reference", "criterion scores read without it"),
    ):
        cv = result[key]
        if cv["accuracy"] is None:
            lines.append(f"\nhead + w x ({what}): too few requests to fit w across folds")
            continue
        lines.append(
            f"\nhead + w x ({what}): request-grouped {len(cv['fold_weights'])}-fold accuracy "
            f"{cv['accuracy']:.3f}; fold weights {cv['fold_weights']}; "
            f"on all pairs {cv['weight_on_all_pairs']}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parser("python -m training.datasets.reference_pairs", __doc__, RUNS_DIR).parse_args(argv)
    return run(args, file_pairs, "pairwise", report, render)


if __name__ == "__main__":
    sys.exit(main())
