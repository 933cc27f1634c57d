"""A batch of rows judged in a background thread that a UI can start, watch, stop and resume.

    job = BatchJob(service, rows, config, lock=model_lock)
    job.start()
    ...                      # on every rerun of the page:
    snap = job.snapshot()    # judgments so far, counts, rate, ETA, state
    job.stop()               # stops after the row in progress; judged rows are kept
    job.resume()             # goes on from the first row without a judgment

Rows are judged one at a time, in order, so the judged rows are always a prefix
of the input: a stop never loses a judged row and a resume never judges one
again. Every input row ends with exactly one judgment; a row that could not be
read becomes an error judgment, as in `JudgeService.judge_rows`.

`JudgeService.judge` never raises for a bad row, so an exception that reaches
this module is unexpected (a bug, the machine out of memory): the job stops in
state "failed" with the message, the row it was on stays unjudged, and
`resume()` tries that row again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Literal

from app.io.reader import InputRow
from app.io.writer import error_judgment
from app.records import JudgeItem, Judgment, Status
from app.service import JudgeConfig, JudgeService

JobState = Literal["idle", "running", "stopping", "stopped", "done", "failed"]


@dataclass(frozen=True)
class BatchSnapshot:
    """A consistent copy of a job's progress at one moment (safe to keep and show).

    `rate` is rows per second over the job's active time (`elapsed_s`): the time
    its thread was judging, summed over every start and resume, without the time
    it stood stopped. `eta_s` is None until the rate is known.
    """

    judgments: list[Judgment]  # in row order, only the rows done
    done: int
    total: int
    ok: int
    unparsed: int
    errors: int
    rate: float
    eta_s: float | None
    elapsed_s: float
    state: JobState
    error: str | None = None

    @property
    def fraction(self) -> float:
        """Share of rows done, 0..1 (1 for an empty batch)."""
        return self.done / self.total if self.total else 1.0


class BatchJob:
    """Judges `rows` with `service` in a daemon thread.

    `lock`, when given, is held while each row is judged (around all of that
    row's model calls), so several jobs or pages can share one loaded model
    whose backend is not safe for two threads at once.
    """

    def __init__(
        self,
        service: JudgeService,
        rows: Sequence[InputRow],
        config: JudgeConfig,
        *,
        lock: threading.Lock | None = None,
    ) -> None:
        self._service = service
        self._rows = tuple(rows)
        self._config = config
        self._model_lock: AbstractContextManager[object] = (
            lock if lock is not None else nullcontext()
        )
        self._guard = threading.Lock()  # guards everything below
        self._judgments: list[Judgment] = []
        self._counts = {Status.OK: 0, Status.UNPARSED: 0, Status.ERROR: 0}
        self._state: JobState = "idle"
        self._error: str | None = None
        self._stop_requested = False
        self._thread: threading.Thread | None = None
        self._active_s = 0.0  # active time of the runs that ended
        self._run_started: float | None = None  # perf_counter at the start of the current run

    # -- control ----------------------------------------------------------------
    def start(self) -> None:
        """Start judging in a daemon thread. No-op while running or once done.

        After a stop or a failure this is the same as `resume()`.
        """
        with self._guard:
            if self._state in ("running", "done"):
                return
            if self._state == "stopping":  # the thread is still on its last row: keep it going
                self._stop_requested = False
                self._state = "running"
                return
            self._launch()

    def stop(self) -> None:
        """Ask the job to stop after the row in progress. Judged rows are kept."""
        with self._guard:
            if self._state == "running":
                self._stop_requested = True
                self._state = "stopping"

    def resume(self) -> None:
        """Go on from the first row without a judgment (the same as `start()`)."""
        self.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True when it has (or never started)."""
        with self._guard:
            thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    # -- watching ---------------------------------------------------------------
    @property
    def state(self) -> JobState:
        with self._guard:
            return self._state

    @property
    def error(self) -> str | None:
        """The message of the unexpected exception that failed the job, if it failed."""
        with self._guard:
            return self._error

    @property
    def total(self) -> int:
        return len(self._rows)

    @property
    def config(self) -> JudgeConfig:
        return self._config

    @property
    def items(self) -> list[JudgeItem | None]:
        """The input item of each row (None where unreadable), aligned with the judgments."""
        return [row.item for row in self._rows]

    def snapshot(self) -> BatchSnapshot:
        with self._guard:
            done = len(self._judgments)
            elapsed = self._active_s
            if self._run_started is not None:
                elapsed += time.perf_counter() - self._run_started
            rate = done / elapsed if elapsed > 0 else 0.0
            remaining = len(self._rows) - done
            eta = remaining / rate if rate > 0 else (0.0 if remaining == 0 else None)
            return BatchSnapshot(
                judgments=list(self._judgments),
                done=done,
                total=len(self._rows),
                ok=self._counts[Status.OK],
                unparsed=self._counts[Status.UNPARSED],
                errors=self._counts[Status.ERROR],
                rate=rate,
                eta_s=eta,
                elapsed_s=elapsed,
                state=self._state,
                error=self._error,
            )

    # -- the worker -------------------------------------------------------------
    def _launch(self) -> None:
        """Start a worker thread; the caller holds the guard."""
        self._stop_requested = False
        self._error = None
        self._state = "running"
        self._run_started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="pocketjudge-batch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self._guard:
                    index = len(self._judgments)
                    if index >= len(self._rows):
                        self._finish("done")
                        return
                    if self._stop_requested:
                        self._finish("stopped")
                        return
                judgment = self._judge(self._rows[index])
                with self._guard:
                    self._judgments.append(judgment)
                    self._counts[judgment.status] += 1
        except Exception as exc:
            with self._guard:
                self._error = f"{type(exc).__name__}: {exc}"
                self._finish("failed")
        finally:
            with self._guard:  # a BaseException got through: never stay "running"
                if self._state in ("running", "stopping"):
                    self._error = self._error or "the batch thread ended unexpectedly"
                    self._finish("failed")

    def _judge(self, row: InputRow) -> Judgment:
        config = self._config
        if row.item is None:
            return error_judgment(
                row, config.protocol, model=self._service.model_name, template=config.template
            )
        with self._model_lock:
            return self._service.judge(row.item, config, line=row.line)

    def _finish(self, state: JobState) -> None:
        """End the current run; the caller holds the guard. The thread does nothing after."""
        if self._run_started is not None:
            self._active_s += time.perf_counter() - self._run_started
            self._run_started = None
        self._stop_requested = False
        self._state = state
