"""The trained reward model's lead of each pair, read for the decision fit (issue 64).

    python -m training.decision.reward_reads --part K --parts N   (N processes, a core each)

pj-qwen15-reward (its adapter on the default's base, trained on a lent GPU) gives each answer a
reward; a pair's value is its `states` lead (the reward difference at its fitted scale). A
decision record may weigh it only where it was fitted on pairs the reward model never trained
on: the requests of its loan's held-out fold (`held-out`: request-grouped fold FOLD of FOLDS,
as training/lora/reward_model.py held them out; their `states` come out of fold from the
head-fitting rows, training/decision/out_of_fold.py). The evaluation files (`dev`: measure's
files and the held-out reference-decided pairs, whose answers are the same without their
references) are read too, so `measure` applies a record weighing it. Held-out pairs are taken
in a seeded random order, so a run stopped at any point has read a fair sample; each process
appends to its own file and skips what any file holds, so a stopped run goes on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from app.records import JudgeItem, Status
from training.decision.reads import REWARD_READS, cached_rows, pair_key, request_key

READER = "pj-qwen15-reward"
SIGNAL = "reward"
FOLDS, FOLD = 5, 0  # the loan's held-out fold (training.lora.reward_loan --folds 5 --fold 0)
SETS = ("held-out", "dev")
SEED = 0


def held_out_pairs() -> list[JudgeItem]:
    """The head-fitting pairs of the requests the reward model's loan held out: a request's
    group is its order of first appearance among the labelled pairs
    (training/datasets/reward_data.py), held out where group % FOLDS == FOLD."""
    from training.datasets.reward_data import TARGETS
    from training.decision.fit_config import load_config
    from training.decision.in_sample import head_fitting_pairs

    labelled = [
        p
        for p in head_fitting_pairs(load_config().judge)
        if p.label is not None and p.label.winner in TARGETS
    ]
    groups: dict[str, int] = {}
    held = [p for p in labelled if groups.setdefault(p.question, len(groups)) % FOLDS == FOLD]
    return random.Random(SEED).sample(held, len(held))


def dev_pairs() -> list[tuple[str, int, JudgeItem]]:
    """Every pair of measure's evaluation files and the held-out reference-decided pairs."""
    from training.decision.measure import FILES, HELD_OUT, labelled_items

    return [
        (name, line, item)
        for name in [*FILES, HELD_OUT]
        for line, item in labelled_items(name).items()
    ]


def work(sets: list[str]) -> list[tuple[str, str | None, int | None, JudgeItem]]:
    """(set, file, line, pair) of `sets`, dev first where both (measure waits on them)."""
    found: list[tuple[str, str | None, int | None, JudgeItem]] = []
    if "dev" in sets:
        found += [("dev", name, line, item) for name, line, item in dev_pairs()]
    if "held-out" in sets:
        found += [("held-out", None, None, item) for item in held_out_pairs()]
    return found


def reward_row(
    name: str, file: str | None, line: int | None, item: JudgeItem, lead: float | None, error: str
) -> dict[str, Any]:
    """A cache row: the pair's key, where it is from and its reward lead (no text, no label)."""
    return {
        "key": pair_key(item),
        "set": name,
        "file": file,
        "line": line,
        "request": request_key(item.question),
        "values": {} if lead is None else {SIGNAL: lead},
        "error": error or None,
    }


def read(sets: list[str], part: int, parts: int, folder: Path = REWARD_READS) -> int:
    """Read this part's pairs not cached yet with the reward model, appending each."""
    from tqdm import tqdm

    from app.api import load_judge

    done = {(row["set"], row["key"]) for row in cached_rows(folder)}
    todo = [w for w in work(sets)[part::parts] if (w[0], pair_key(w[3])) not in done]
    if not todo:
        print(f"part {part}: every pair is read")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    opened = load_judge(READER, threads=1, criterion_scores=False, protocol="pairwise")
    with opened as judge, (folder / f"part{part}.jsonl").open("a", encoding="utf-8") as out:
        for name, file, line, item in tqdm(todo, desc=f"rewards part {part}", file=sys.stderr):
            judgment = judge.judge(item)
            parts_ = judgment.verdict_parts or {}
            ok = judgment.status is Status.OK and "states_difference" in parts_
            lead = parts_["states_difference"] if ok else None
            row = reward_row(name, file, line, item, lead, judgment.error or "")
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
    return 0


def held_out_rows(folder: Path = REWARD_READS) -> list[dict[str, Any]]:
    """The held-out pairs read so far as the fit's rows: each its head-fitting row (states out
    of fold, training/decision/out_of_fold.py) with its reward lead joined."""
    import gzip

    from training.datasets.likelihood_data import OUT_OF_FOLD

    rewards = {
        row["key"]: row["values"][SIGNAL]
        for row in cached_rows(folder)
        if row["set"] == "held-out" and SIGNAL in row["values"]
    }
    with gzip.open(OUT_OF_FOLD, "rt", encoding="utf-8") as lines:
        rows = [row for row in map(json.loads, lines) if row["key"] in rewards]
    return [row | {"values": row["values"] | {SIGNAL: rewards[row["key"]]}} for row in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.decision.reward_reads", description=__doc__
    )
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REWARD_READS)
    args = parser.parse_args(argv)
    return read(args.sets, args.part, args.parts, args.out)


if __name__ == "__main__":
    sys.exit(main())
