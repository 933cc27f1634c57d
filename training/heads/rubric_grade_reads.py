"""What the default judge reads of each Prometheus row, judged as a user's row: the signals a
rubric grade's combination is fitted on (training/heads/rubric_grade_fit.py).

    python -m training.heads.rubric_grade_reads [FILE] --out DIR [--part K --parts N]

Each row (a request, one answer, its rubric and its reference) is judged through the engine
with the reference in use, as `python -m app judge` would; the judgment keeps the rubric
read's expected level, the head's grade and what the reference turn read (its mean
log-probability after the answer and the log-odds of the judge's check, in its parts).
Rows are taken `K, K+N, K+2N, ...` so that N processes (one per core) share a file, and each
judgment is appended to `DIR/judgments-partK.jsonl` as it is done: a run stopped anywhere
goes on from the next row it has not judged.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from app.io.reader import InputRow, read_rows
from training.evaluation.reference_runs import DEFAULT_FILE

RUNS_DIR = Path(__file__).resolve().parents[1] / "runs" / "rubric-grade"


def done_ids(path: Path) -> set[str]:
    """The ids of the rows a part's file already holds (a torn last line is judged again)."""
    if not path.is_file():
        return set()
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ids.add(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError):
            continue
    return ids


def part_rows(file: Path, part: int, parts: int) -> list[InputRow]:
    """This part's rows, every request's answers together (a file lists them by answering
    model): a run stopped early holds whole requests, as a request-grouped fit needs."""
    rows = [row for row in read_rows(file) if row.item is not None]
    first: dict[str, int] = {}
    for i, row in enumerate(rows):
        first.setdefault(row.item.question, i)
    rows.sort(key=lambda row: first[row.item.question])  # stable: answers keep their order
    return rows[part::parts]


def judge_part(file: Path, out: Path, part: int, parts: int, model: str | None) -> int:
    """Judge this part's rows not yet in its file; the number judged."""
    from app.batches.progress_bar import ProgressBar
    from models.backends.base import BackendOptions
    from models.run_settings import RUN_DEFAULTS
    from training.evaluation.evaluate import open_evaluated

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"judgments-part{part}.jsonl"
    seen = done_ids(path)
    todo = [row for row in part_rows(file, part, parts) if row.item.id not in seen]
    if not todo:
        return 0
    options = BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=1)
    judge = open_evaluated(model, options, kind="single")
    config = replace(judge.config, use_reference=True)
    try:
        with ProgressBar(total=len(todo)) as bar, path.open("a", encoding="utf-8") as sink:
            for judgment in judge.judge_rows(todo, config, on_judgment=bar.update):
                sink.write(judgment.model_dump_json() + "\n")
                sink.flush()
    finally:
        judge.close()
    return len(todo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.rubric_grade_reads", description=__doc__
    )
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT_FILE)
    parser.add_argument("--out", type=Path, default=RUNS_DIR)
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    args = parser.parse_args(argv)
    if not args.file.is_file():
        print(f"{args.file}: not found (see ../shared/data/README.md, prometheus/)")
        return 2
    judged = judge_part(args.file, args.out, args.part, args.parts, args.model)
    print(f"judged {judged} rows into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
