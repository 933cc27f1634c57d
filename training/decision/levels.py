"""The one cache's criterion-head leads: each reference-decided pair (train and test,
training/datasets/reference_decided.py) read once as the verdict reads it, and the judge's
criterion head's lead of A over B kept (level points, no reference: `u_A - u_B`, the head's
linear part before any shift or the scale's bounds), so the record's `criterion_shift` is
fitted by the one procedure (`python -m training.decision.fit --sections criterion_shift`).

    python -m training.decision.levels --part K --parts N

Rows go to the cache's `levels/` folder (`partK.jsonl`: the pair's key, id, split and request
key; no text, no label), a row as it is read, so a stopped run goes on and N processes (one
per core) share the pairs by request.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.deciding.criterion_head import CriterionHead
from app.deciding.relevance import request_similarities
from app.deciding.state_head import StateHead
from app.deciding.state_judging import read_features
from app.records import JudgeItem
from training.decision.reads import OUT, as_item, cached_rows, pair_key, request_key

LEVELS = OUT / "levels"


def reference_pairs() -> list[tuple[str, JudgeItem]]:
    """Every reference-decided pair with its split, train first, in the files' order."""
    from training.datasets.reference_decided import build

    train, test = build()
    return [("train", as_item(row)) for row in train] + [("test", as_item(row)) for row in test]


def criterion_lead(item: JudgeItem, source: Any, head: StateHead, levels: CriterionHead) -> float:
    """The criterion head's lead of A over B from the verdict's read of each answer (`source`:
    the backend), read and computed as the engine does (state_judging.read_features)."""
    reads = read_features(item, head, source)
    near = request_similarities(item.question, item.answers)
    first, second = (
        levels.features(states, likelihood, len(answer), float(relevance))
        for states, likelihood, answer, relevance in zip(
            reads.features, reads.likelihoods, item.answers, near
        )
    )
    return float((first - second) @ levels.weights)


def part_pairs(
    pairs: Sequence[tuple[str, JudgeItem]], part: int, parts: int
) -> list[tuple[str, JudgeItem]]:
    """This part's pairs: every `parts`-th request from the `part`-th."""
    requests = list(dict.fromkeys(item.question for _, item in pairs))
    mine = set(requests[part::parts])
    return [(split, item) for split, item in pairs if item.question in mine]


def read(part: int, parts: int, folder: Path = LEVELS, model: str | None = None) -> int:
    """Read this part's pairs not cached yet, appending each as it is read; how many."""
    from tqdm import tqdm

    from models.backends.base import BackendOptions
    from models.run_settings import RUN_DEFAULTS
    from training.evaluation.evaluate import open_evaluated

    done = {row["key"] for row in cached_rows(folder)}
    pairs = part_pairs(reference_pairs(), part, parts)
    todo = [(split, item) for split, item in pairs if pair_key(item) not in done]
    if not todo:
        print(f"part {part}: every pair is cached")
        return 0
    judge = open_evaluated(model, BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=1))
    head, levels = judge.config.parts.head, judge.config.parts.criterion_levels
    if head is None or levels is None:
        judge.close()
        raise SystemExit(f"{judge.loaded.name}: no state head with a criterion head to read")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with (folder / f"part{part}.jsonl").open("a") as out:
            for split, item in tqdm(todo, desc="reading", unit="pair"):
                row = {
                    "key": pair_key(item),
                    "id": item.id,
                    "split": split,
                    "request": request_key(item.question),
                    "levels": criterion_lead(item, judge.backend, head, levels),
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
    finally:
        judge.close()
    return len(todo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.decision.levels", description=__doc__)
    parser.add_argument("--out", type=Path, default=LEVELS)
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    args = parser.parse_args(argv)
    print(f"read {read(args.part, args.parts, args.out, args.model)} pairs into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
