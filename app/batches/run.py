"""The batch loop of every front end, and the exit code a CLI run ends with.

`write_batch` takes judgments as they stream in row order and keeps each in a sink as it
comes: the CLI's `judge` command streams `JudgeService.judge_rows` (or Ray's) into its
resumable partial file (`app.io.resumable`), and how the run ended decides its exit
code; the app's `BatchJob` streams its rows one at a time into its own list, from a
background thread it can stop and resume. Both record each row in the run history as it
is kept (`on_written`).

When the backend fails (a server down, a model crashed), the rows it failed on
are held back. If it recovers, they are written as error rows and the run goes
on; after `BACKEND_STREAK` failures in a row the run stops without writing them,
so the same command, run again once the backend is back, judges them then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from app.records import Judgment, Status, backend_failed

BACKEND_STREAK = 3  # rows in a row the backend failed on before a run gives up


class ExitCode(IntEnum):
    """What `python -m app judge` exits with (the README's "Reliability" lists them)."""

    OK = 0  # every row ok
    ROWS_FAILED = 1  # the output is complete; some rows are error or unparsed
    USAGE = 2  # bad arguments, input file or model: nothing was judged
    BACKEND = 3  # the backend failed on some rows (the run may have stopped: resume it)
    WRITE = 4  # the results could not be written (a full disk): the rows written are kept
    INTERRUPTED = 130  # Ctrl-C: the rows written are kept; the same command resumes


class RowSink(Protocol):
    """Where a batch keeps its rows, in order: a resumable output file, a job's list."""

    def append(self, judgment: Judgment) -> None: ...


@dataclass
class BatchWrite:
    """What a run wrote: `judgments` are the rows now in the partial file from this run."""

    judgments: list[Judgment] = field(default_factory=list)
    backend_failures: int = 0  # rows the backend failed on (written or held back)
    stopped: str | None = None  # why the run stopped before the last row, if it did


def write_batch(
    stream: Iterable[Judgment],
    output: RowSink,
    on_written: Callable[[Judgment], None] | None = None,
) -> BatchWrite:
    """Append each judgment of `stream` to `output`; stop after a backend failure streak.

    `on_written` is called with each row once it is in the output (the run history).
    An OSError from writing (a full disk) goes up to the caller once the partial
    file has been cut back to whole rows.
    """
    result = BatchWrite()
    held: list[Judgment] = []
    for judgment in stream:
        if backend_failed(judgment):
            result.backend_failures += 1
            held.append(judgment)
            if len(held) >= BACKEND_STREAK:
                result.stopped = (
                    f"the backend failed on {len(held)} rows in a row (line {held[0].line} "
                    f"on): {judgment.error}"
                )
                return result
            continue
        for row in [*held, judgment]:
            _write(row, output, result, on_written)
        held.clear()
    for row in held:  # the last rows failed, too few to call the backend down: keep them
        _write(row, output, result, on_written)
    return result


def _write(
    row: Judgment,
    output: RowSink,
    result: BatchWrite,
    on_written: Callable[[Judgment], None] | None,
) -> None:
    output.append(row)
    result.judgments.append(row)
    if on_written is not None:
        on_written(row)


def exit_code(judgments: Iterable[Judgment], write: BatchWrite) -> ExitCode:
    """The exit code of a run whose output holds `judgments` (earlier runs' rows included)."""
    if write.stopped is not None or write.backend_failures:
        return ExitCode.BACKEND
    if any(j.status is not Status.OK for j in judgments):
        return ExitCode.ROWS_FAILED
    return ExitCode.OK
