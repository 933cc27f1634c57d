"""Does "answers the request" separate the answers where length does not?

`python -m training.heads.relevance_probe` measures, on the evaluation files beside
"the longer answer wins":

- relevance alone: the answer whose MiniLM embedding is closer to the
  request's wins (the cosine of request and answer, A minus B);
- a small head on length and relevance features (log length ratio, relevance
  of the whole answer and of its opening, how alike the two answers are, the
  lower relevance), a 3-class logistic regression with pairwise products,
  fitted on the Auto-J training pairs (all of them: length is a real signal
  there) plus counterexamples, once with off-topic answers from the same
  scenario group and once from the most similar request.

Every feature that depends on the order flips sign when the answers swap, and
the head averages its probabilities over both orders, so it has no position
bias. Like `training.heads.probe`, this is a diagnostic, not a judge the app runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import numpy as np

from app.records import JudgeItem
from training.heads.probe import EVAL_FILES, agreement, load_eval, longer
from training.lora.config import CounterexampleMatch, DataConfig, resolve_path

QUESTION_CHARS = 1000
ANSWER_CHARS = 2000
OPENING_CHARS = 300
ORDERED = 3  # the first three features flip sign when the answers swap
SWAPPED = {"A": "B", "B": "A", "tie": "tie"}
VERDICTS = np.array(["A", "B", "tie"])


def relevance_features(items: Sequence[JudgeItem]) -> np.ndarray:
    """Per pair: log length ratio, relevance A-B (whole, opening), A~B similarity, min relevance."""
    from training.datasets.similarity import embed

    question = embed([i.question[:QUESTION_CHARS] for i in items])
    whole = [embed([i.answers[k][:ANSWER_CHARS] for i in items]) for k in (0, 1)]
    opening = [embed([i.answers[k][:OPENING_CHARS] for i in items]) for k in (0, 1)]
    relevance = [(question * whole[k]).sum(axis=1) for k in (0, 1)]
    length_ratio = [math.log((len(i.answers[0]) + 1) / (len(i.answers[1]) + 1)) for i in items]
    return np.stack(
        [
            np.asarray(length_ratio),
            relevance[0] - relevance[1],
            (question * opening[0]).sum(axis=1) - (question * opening[1]).sum(axis=1),
            (whole[0] * whole[1]).sum(axis=1),
            np.minimum(relevance[0], relevance[1]),
        ],
        axis=1,
    )


def swap_features(features: np.ndarray) -> np.ndarray:
    swapped = features.copy()
    swapped[:, :ORDERED] *= -1
    return swapped


class RelevanceHead:
    """3-class logistic regression on the features and their pairwise products, fitted on
    both orders of every pair and read as the average over both orders."""

    def __init__(self, seed: int = 0) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import PolynomialFeatures, StandardScaler

        self.model = make_pipeline(
            PolynomialFeatures(2),
            StandardScaler(),
            LogisticRegression(C=1.0, max_iter=5000, random_state=seed),
        )

    def fit(self, features: np.ndarray, labels: Sequence[str]) -> RelevanceHead:
        x = np.concatenate([features, swap_features(features)])
        y = list(labels) + [SWAPPED[label] for label in labels]
        self.model.fit(x, y)
        return self

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Columns A, B, tie; the same pair in the other order gets A and B exchanged."""
        classes = list(self.model.classes_)
        first = self.model.predict_proba(features)
        second = self.model.predict_proba(swap_features(features))

        def column(probabilities: np.ndarray, verdict: str) -> np.ndarray:
            if verdict not in classes:  # e.g. no tie among the training labels
                return np.zeros(len(probabilities))
            return probabilities[:, classes.index(verdict)]

        return np.stack(
            [
                (column(first, "A") + column(second, "B")) / 2,
                (column(first, "B") + column(second, "A")) / 2,
                (column(first, "tie") + column(second, "tie")) / 2,
            ],
            axis=1,
        )

    def verdicts(self, features: np.ndarray) -> list[str]:
        return VERDICTS[np.argmax(self.probabilities(features), axis=1)].tolist()


def relevance_verdicts(features: np.ndarray) -> list[str]:
    """Relevance alone: the answer closer to the request wins."""
    return ["A" if r > 0 else "B" if r < 0 else "tie" for r in features[:, 1]]


def training_sets(share: float, seed: int) -> tuple[list[JudgeItem], dict[str, list[JudgeItem]]]:
    """All labelled Auto-J training pairs (no length balance), and for each way of matching
    the counterexamples built from them."""
    from app.catalog.scenarios import load_catalog
    from training.datasets.examples import BuildReport, training_pairs

    catalog = load_catalog()
    pairs: list[JudgeItem] = []
    made: dict[str, list[JudgeItem]] = {}
    for match in get_args(CounterexampleMatch):
        config = DataConfig(
            length_balance=False, counterexamples=share, counterexample_match=match, seed=seed
        )
        items = training_pairs(config, catalog, BuildReport())
        pairs = [i for i in items if not i.metadata.get("counterexample")]
        made[match] = [i for i in items if i.metadata.get("counterexample")]
    return pairs, made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.relevance_probe", description=__doc__
    )
    parser.add_argument("--share", type=float, default=1.0, help="counterexamples per pair")
    parser.add_argument("--out", default="training/runs/probe", help="output folder")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    evals = {resolve_path(f).name: load_eval(resolve_path(f)) for f in EVAL_FILES}
    eval_features = {name: relevance_features(items) for name, items in evals.items()}
    results: dict = {"share": args.share, "files": {}}
    pairs, made = training_sets(args.share, args.seed)
    pair_features = relevance_features(pairs)  # shared by both heads: embedded once
    heads = {}
    for match, counter in made.items():
        heads[match] = RelevanceHead(args.seed).fit(
            np.concatenate([pair_features, relevance_features(counter)]),
            [i.label.winner for i in pairs + counter],
        )
        results[f"train_pairs_{match}"] = len(pairs) + len(counter)
    for name, items in evals.items():
        labels = [i.label.winner for i in items]
        row = {
            "rows": len(items),
            "longer answer wins": agreement([longer(i) for i in items], labels),
            "relevance alone": agreement(relevance_verdicts(eval_features[name]), labels),
        }
        for match, head in heads.items():
            row[f"head, {match} counterexamples"] = agreement(
                head.verdicts(eval_features[name]), labels
            )
        results["files"][name] = row
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "relevance-results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
