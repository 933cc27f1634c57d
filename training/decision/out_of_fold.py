"""The judge's head's own fitting pairs in the one cache of reads, its states read out of fold.

    python -m training.decision.out_of_fold --cache READING_CACHE [--out DIR]

Every pair of the decision cache that the head's fitting set holds is in-sample for the
`states` signal (its 3,072 weights were fitted on it), so the decision fit leaves it out
(training/decision/in_sample.py): for the default judge that is every Auto-J and AlpacaEval
training pair. This gives the fit those pairs fairly: from a reading cache of the fitting set
(each answer's states and token log-probabilities, training/device/reading_cache.py; on a lent
GPU `training.device.gpu_reads` reads all 6,388 pairs in about a minute), the head's own fit
(its variant and L2 strength, as its file records them) is repeated on its 5 request-grouped folds,
and each pair's `states` value comes from the fold that did not see its request. The other
values are the engine's as they are: each likelihood feature's difference, request relevance
(MiniLM) and the log length ratio. Each pair becomes one row of the cache (`head-fitting`, its
`out_of_fold` naming `states`), which the fit then counts (its labels joined from the data, as
for every row).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.state_head import StateHead, length_log_ratio
from app.records import JudgeItem
from models.readings import FEATURES

SET = "head-fitting"
FILE = "head_fitting_out_of_fold.jsonl"


def out_of_fold_states(
    pairs: list[JudgeItem], readings: list, head: StateHead, relevance: np.ndarray
) -> np.ndarray:  # type: ignore[type-arg]
    """Each pair's `states` value (w . (f(A) - f(B))) from the head fitted as `head` was (its
    variant and C) on the folds that do not hold the pair's request."""
    from training.decision.head_fit import head_design
    from training.heads.state_head import fold_weights

    x, names = head_design(readings, head, relevance)
    hidden = x.shape[1] - len(names)
    winners = [p.label.winner for p in pairs]  # type: ignore[union-attr]
    groups = [p.question for p in pairs]
    found = np.zeros(len(pairs))
    c = float(head.fitted_on["C"])
    for test, weights in fold_weights(x, winners, groups, c, len(names)):
        found[test] = x[test, :hidden] @ weights[:hidden]
    return found


def head_fitting_rows(
    pairs: list[JudgeItem], readings: list, head: StateHead
) -> list[dict[str, Any]]:  # type: ignore[type-arg]
    """The cache's rows of the fitting pairs: `states` out of fold, the rest as read."""
    from app.deciding.relevance import relevance_differences
    from training.decision.reads import pair_row

    relevance = relevance_differences(pairs)
    states = out_of_fold_states(pairs, readings, head, relevance)
    rows = []
    for n, (item, (first, second)) in enumerate(zip(pairs, readings)):
        a, b = first.features(), second.features()
        values = {"states": float(states[n])} | {f: a[f] - b[f] for f in FEATURES}
        values |= {"relevance": float(relevance[n]), "length": length_log_ratio(*item.answers)}
        rounded = {name: round(value, 6) for name, value in values.items()}
        rows.append(pair_row(SET, item, rounded) | {"out_of_fold": ["states"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    from training.datasets.likelihood_data import cut
    from training.decision.fit_config import load_config
    from training.decision.in_sample import head_fitting_pairs, judge_head
    from training.decision.reads import OUT
    from training.device.reading_cache import ReadingCache
    from training.heads.likelihood_fit import readings_of

    parser = argparse.ArgumentParser(
        prog="python -m training.decision.out_of_fold", description=__doc__
    )
    parser.add_argument("--cache", type=Path, required=True, help="the fitting set's reads")
    parser.add_argument("--judge", help="a registry name (default: the decision fit's judge)")
    parser.add_argument("--out", type=Path, default=OUT, help="the one cache of reads")
    args = parser.parse_args(argv)
    judge = args.judge or load_config().judge
    head = judge_head(judge)[1]
    cache = ReadingCache(args.cache)
    every = head_fitting_pairs(judge)
    pairs = [p for p in every if all(cache.has(*cut(p.question, a)) for a in p.answers)]
    if not pairs:
        raise SystemExit(f"{args.cache}: no pair of {judge}'s fitting set is read")
    rows = head_fitting_rows(pairs, readings_of(cache, pairs), head)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (args.out / FILE).write_text(lines, encoding="utf-8")
    print(f"{len(rows)} of the {len(every)} fitting pairs written to {args.out / FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
