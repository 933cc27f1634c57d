"""The one cache's graded rows: each Prometheus row (a request, one answer, its rubric and its
reference) judged once by the engine as a user's single row with the reference in use, its
rubric grade's signal values kept (app/deciding/rubric_grade.signals_of).

    python -m training.decision.graded [FILE] --part K --parts N

The rows go to the cache's `graded/` folder (`partK.jsonl`), keyed as its pairs are, with
the request's group key, no text and no label (joined from the file when the fit reads them:
`labelled_graded`), so they are committed and a later fit reads no model. Rows are taken by
request, `K, K+N, ...` of the requests (a request's answers together: a stopped run holds
whole requests, as a request-grouped fit needs), so N processes (one per core) share the
file; each appends a row as it is judged and skips what any part holds, so a stopped run
goes on where it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.deciding.rubric_grade import signals_of
from app.io.reader import InputRow, read_rows
from app.records import JudgeItem, Judgment
from training.decision.reads import OUT, cached_rows, pair_key, request_key
from training.evaluation.reference_runs import DEFAULT_FILE

GRADED = OUT / "graded"


def graded_row(item: JudgeItem, judgment: Judgment) -> dict[str, Any]:
    """What the cache keeps of one judged row: its key, request and signal values (none where
    a signal was not read: the judgment's error, if any, says why)."""
    return {
        "key": pair_key(item),
        "id": item.id,
        "request": request_key(item.question),
        "values": signals_of(judgment, item) or {},
        "error": judgment.error,
    }


def part_rows(file: Path, part: int, parts: int) -> list[InputRow]:
    """This part's rows: every `parts`-th request from the `part`-th, its answers together."""
    rows = [row for row in read_rows(file) if row.item is not None]
    requests = list(dict.fromkeys(row.item.question for row in rows))  # type: ignore[union-attr]
    mine = set(requests[part::parts])
    return [row for row in rows if row.item.question in mine]  # type: ignore[union-attr]


def read(file: Path, part: int, parts: int, folder: Path = GRADED, model: str | None = None) -> int:
    """Judge this part's rows not cached yet, appending each as it is done; how many."""
    from app.batches.progress_bar import ProgressBar
    from models.backends.base import BackendOptions
    from models.run_settings import RUN_DEFAULTS
    from training.evaluation.evaluate import open_evaluated

    done = {row["key"] for row in cached_rows(folder)}
    todo = [row for row in part_rows(file, part, parts) if pair_key(row.item) not in done]  # type: ignore[arg-type]
    if not todo:
        print(f"part {part}: every row is cached")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    options = BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=1)
    judge = open_evaluated(model, options, kind="single")
    config = replace(judge.config, use_reference=True)
    items = {row.item.id: row.item for row in todo}  # type: ignore[union-attr]
    try:
        with ProgressBar(total=len(todo)) as bar, (folder / f"part{part}.jsonl").open("a") as out:
            for judgment in judge.judge_rows(todo, config, on_judgment=bar.update):
                row = graded_row(items[judgment.id], judgment)
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                out.flush()
    finally:
        judge.close()
    return len(todo)


def labelled_graded(file: Path = DEFAULT_FILE, folder: Path = GRADED) -> list[dict[str, Any]]:
    """The file's rows the cache holds, in the file's order, each with its label (the mean of
    the file's grades) joined by key."""
    cached = {row["key"]: row for row in cached_rows(folder)}
    found = []
    for row in read_rows(file):
        item = row.item
        if item is None or item.label is None or (kept := cached.get(pair_key(item))) is None:
            continue
        found.append(kept | {"label": item.label.score})
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.decision.graded", description=__doc__)
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT_FILE)
    parser.add_argument("--out", type=Path, default=GRADED)
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    args = parser.parse_args(argv)
    if not args.file.is_file():
        print(f"{args.file}: not found (see ../shared/data/README.md, prometheus/)")
        return 2
    judged = read(args.file, args.part, args.parts, args.out, args.model)
    print(f"judged {judged} rows into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
