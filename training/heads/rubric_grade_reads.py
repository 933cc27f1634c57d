"""What the default judge reads of each Prometheus row, judged as a user's row: the signals a
rubric grade's combination is fitted on (training/heads/rubric_grade_fit.py).

    python -m training.heads.rubric_grade_reads [FILE] --out DIR [--part K --parts N]

Each row (a request, one answer, its rubric and its reference) is judged through the engine
with the reference in use, as `python -m app judge` would; the judgment keeps the rubric
read's expected level, the head's grade and what the reference turn read (its mean
log-probability after the answer and the log-odds of the judge's check, in its parts).
Rows are taken `K, K+N, K+2N, ...` so that N processes (one per core) share a file. Each
judgment is written as it is done (app/io/resumable.py), and `DIR/judgments-partK.jsonl`
holds the part once every row is judged: a run stopped anywhere goes on from the next row it
has not judged.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from app.io.reader import InputRow, read_rows
from app.io.resumable import ResumableOutput
from training.evaluation.reference_runs import DEFAULT_FILE

RUNS_DIR = Path(__file__).resolve().parents[1] / "runs" / "rubric-grade"


def part_output(out: Path, part: int, parts: int) -> ResumableOutput:
    """Where a part's judgments go: `judgments-partK.jsonl` once every row is judged, a
    partial file beside it until then (app/io/resumable.py: a row torn by a kill is cut off
    and judged again)."""
    return ResumableOutput(out / f"judgments-part{part}.jsonl", f"of{parts}")


def remaining(rows: list[InputRow], output: ResumableOutput) -> list[InputRow]:
    """The rows an earlier run into `output` did not finish."""
    seen = {judgment.id for judgment in output.load()}
    return [row for row in rows if row.item.id not in seen]


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
    """Judge this part's rows an earlier run did not finish; the number judged."""
    from app.batches.progress_bar import ProgressBar
    from models.backends.base import BackendOptions
    from models.run_settings import RUN_DEFAULTS
    from training.evaluation.evaluate import open_evaluated

    output = part_output(out, part, parts)
    if output.out.is_file():  # this part was finished
        return 0
    todo = remaining(part_rows(file, part, parts), output)
    if not todo:
        output.finish()
        return 0
    options = BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=1)
    judge = open_evaluated(model, options, kind="single")
    config = replace(judge.config, use_reference=True)
    try:
        with ProgressBar(total=len(todo)) as bar:
            for judgment in judge.judge_rows(todo, config, on_judgment=bar.update):
                output.append(judgment)
    finally:
        judge.close()
        output.close()
    output.finish()
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
