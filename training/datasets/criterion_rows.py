"""Auto-J training pairs in the order their criterion reads are taken for a criterion head.

    python -m training.datasets.criterion_rows [--parts 2] [--out training/runs/criterion-head]

Auto-J's `pairwise_train.jsonl` comes sorted by scenario (14 pairs each). A criterion head
must see every scenario's criteria early, because reads apart cost about a minute a pair on
this CPU and a run may stop anywhere: the rows are shuffled within each scenario (fixed
seed) and then dealt round-robin over the scenarios, so the first 58 rows hold one pair of
every scenario, the next 58 another, and so on. Part k of N gets every N-th row of that
order, so N processes (one core each) running `training.evaluation.evaluate` over their
part from the start together cover a prefix of it. The files are copies of training rows
written under the git-ignored run folder, never committed.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from training.datasets.examples import PAIRWISE_FILE
from training.lora.config import DataConfig, resolve_path

RUN_DIR = Path("training/runs/criterion-head")
SEED = 0


def dealt_rows(rows: list[dict], seed: int = SEED) -> list[dict]:
    """`rows` shuffled within their scenario, then dealt one per scenario in turn."""
    by_scenario: dict[str, list[dict]] = {}
    for row in rows:
        by_scenario.setdefault(str(row.get("scenario")), []).append(row)
    rng = random.Random(seed)
    for group in by_scenario.values():
        rng.shuffle(group)
    order: list[dict] = []
    for turn in range(max(len(g) for g in by_scenario.values())):
        order += [group[turn] for group in by_scenario.values() if turn < len(group)]
    return order


def write_parts(out: Path, parts: int, seed: int = SEED) -> list[Path]:
    """The dealt training pairs as `parts` files under `out` (part k: every parts-th row)."""
    source = resolve_path(DataConfig().autoj_dir) / PAIRWISE_FILE
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line]
    order = dealt_rows(rows, seed)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for part in range(parts):
        path = out / f"pairs-part{part}.jsonl"
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in order[part::parts])
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m training.datasets.criterion_rows")
    parser.add_argument("--parts", type=int, default=2, help="one per process (default 2)")
    parser.add_argument("--out", type=Path, default=RUN_DIR)
    args = parser.parse_args(argv)
    for path in write_parts(args.out, args.parts):
        print(path)


if __name__ == "__main__":
    main()
