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

The rows go through the batch loop the CLI runs (`app.batches.run.write_batch`): when
the backend fails on several rows in a row (a server down), the job stops in state
"failed" saying so, those rows unjudged, and `resume()` judges them.

When the engine worker that runs the model dies (a native crash: an illegal
instruction, a failed assertion, memory run out), the job stops in state "failed"
with `engine_stopped` set and the reason; the rows judged are kept, the row in
progress stays unjudged, and `resume()` goes on with a fresh worker.

`JudgeService.judge` never raises for a bad row, so any other exception that reaches
this module is unexpected (a bug, the machine out of memory): the job stops in
state "failed" with the message, the row it was on stays unjudged, and
`resume()` tries that row again.

With `history=RunStart(...)` the job also records its run in the run history
(`app.runs`): the run starts with the thread, each row goes in as it is
judged (with its input item), and the run is finished when the last row is in
or marked incomplete when the job stops or fails, before the new state shows.
A history that cannot be opened or written never stops the batch: the job keeps
judging and `history_warning` says what went wrong.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from app.batches.run import write_batch
from app.io.reader import InputRow
from app.io.resumable import settings_key
from app.io.writer import error_judgment
from app.judging.config import ItemJudge, JudgeConfig
from app.records import JudgeItem, Judgment, Status
from app.runs.recorder import RunRecorder, run_versions
from app.runs.store import RunStart, RunStore
from models.foundation.errors import EngineStopped

APP_SOURCE = "app"

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

    `history`, when given, records the run in the run history at `history_path`
    (None: the default one); see the module docstring.

    `engines` > 1 (a loaded judge, app.api.Judge): each start or resume opens that many less
    one more engines of the same judge, each judging rows of its own while the rows still
    come out in order (app/batches/engine_pool.py); a stop lets each finish its row, and
    the run closes them when it ends.
    """

    def __init__(
        self,
        service: ItemJudge,
        rows: Sequence[InputRow],
        config: JudgeConfig,
        *,
        lock: threading.Lock | None = None,
        history: RunStart | None = None,
        history_path: Path | str | None = None,
        engines: int = 1,
    ) -> None:
        self._service = service
        self._engines = engines
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
        self._engine_stopped = False  # the last failure was the engine worker's end
        self._stop_requested = False
        self._thread: threading.Thread | None = None
        self._active_s = 0.0  # active time of the runs that ended
        self._run_started: float | None = None  # perf_counter at the start of the current run
        # The run is started in the history before its thread, then only that thread records
        # (the next one starts after its final record): the recorder needs no lock of its own.
        self._history_warnings: list[str] = []
        self._history = history
        self._history_path = history_path
        self._recorder = (
            RunRecorder.open(history_path, self._history_warnings.append)
            if history is not None
            else None
        )

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
    def engine_stopped(self) -> bool:
        """Whether the job failed because the engine worker ended (a native crash): resume
        starts a fresh one."""
        with self._guard:
            return self._engine_stopped

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

    @property
    def history_run_id(self) -> str | None:
        """The run's id in the run history, once recorded there (None without a history)."""
        recorder = self._recorder
        return recorder.run_id if recorder is not None and recorder.active else None

    @property
    def history_warning(self) -> str | None:
        """Why the run is not (or no longer) recorded in the history, if it is not."""
        return self._history_warnings[0] if self._history_warnings else None

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
        if self._history is not None:  # again on a resume: it goes on in the same run
            self._record("start", self._history)
        self._stop_requested = False
        self._error = None
        self._engine_stopped = False
        self._state = "running"
        self._run_started = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="pocketjudge-batch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        """The rows from the first without a judgment, through the batch loop the CLI runs
        (app.batches.run.write_batch): each judgment kept and recorded as it comes, rows the
        backend failed on held back, and the run stopped when it fails on several in a row."""
        try:
            written = write_batch(self._remaining(), self, on_written=self._recorded)
            with self._guard:
                if written.stopped is not None:
                    self._error = f"{written.stopped}; fix the backend"
                    self._finish("failed")
                elif len(self._judgments) >= len(self._rows):
                    self._finish("done")
                else:
                    self._finish("stopped")
        except EngineStopped as exc:  # its message says how the engine ended and what to do
            with self._guard:
                self._error = str(exc)
                self._engine_stopped = True
                self._finish("failed")
        except Exception as exc:
            with self._guard:
                self._error = f"{type(exc).__name__}: {exc}"
                self._finish("failed")
        finally:
            with self._guard:  # a BaseException got through: never stay "running"
                if self._state in ("running", "stopping"):
                    self._error = self._error or "the batch thread ended unexpectedly"
                    self._finish("failed")

    def _remaining(self) -> Iterator[Judgment]:
        """A judgment for each row from the first without one, until a stop is asked."""
        with self._guard:
            start = len(self._judgments)
        if self._engines > 1:
            yield from self._pooled(self._rows[start:])
            return
        for row in self._rows[start:]:
            if self._stopping():
                return
            yield self._judge(row)

    def _stopping(self) -> bool:
        with self._guard:
            return self._stop_requested

    def _pooled(self, rows: Sequence[InputRow]) -> Iterator[Judgment]:
        """`rows` judged by this job's engines at once, in order (app/batches/engine_pool.py):
        the shared judge under its lock, and engines of its own opened for this run."""
        from app.batches.engine_pool import in_order

        more = self._service.more_engines(min(self._engines, len(rows)) - 1)  # type: ignore[attr-defined]
        try:
            workers = [partial(self._judged, self._service, self._model_lock)]
            workers += [partial(self._judged, engine, nullcontext()) for engine in more]
            yield from in_order(workers, rows, self._stopping)
        finally:
            for engine in more:
                engine.close()

    def _judged(
        self, judge: ItemJudge, lock: AbstractContextManager[object], rows: list[InputRow]
    ) -> list[Judgment]:
        return [self._judge(row, judge, lock) for row in rows]

    def append(self, judgment: Judgment) -> None:
        """Keep a judgment (the batch loop's sink: the rows in order)."""
        with self._guard:
            self._judgments.append(judgment)
            self._counts[judgment.status] += 1

    def _recorded(self, judgment: Judgment) -> None:
        with self._guard:
            row = self._rows[len(self._judgments) - 1]
        self._record("add", judgment, row.item)

    def _judge(
        self,
        row: InputRow,
        judge: ItemJudge | None = None,
        lock: AbstractContextManager[object] | None = None,
    ) -> Judgment:
        config, judge = self._config, judge or self._service
        if row.item is None:
            return error_judgment(
                row, config.protocol, model=judge.model_name, template=config.judge.template
            )
        with lock or self._model_lock:
            return judge.judge(row.item, config, line=row.line)

    def _record(self, method: str, *args: Any) -> None:
        """Call the recorder's `method` (start, add, finish, stop), if there is a recorder;
        whatever goes wrong there leaves the batch alone."""
        recorder = self._recorder
        if recorder is None:
            return
        try:
            getattr(recorder, method)(*args)
        except Exception as exc:  # the recorder warns of storage failures itself; this is a bug
            self._history_warnings.append(
                f"the run history failed ({type(exc).__name__}: {exc}); this run is not "
                "recorded there"
            )
            recorder.store = None  # recording stops here, as after a storage failure

    def _abandon_record(self) -> None:
        """A run whose recording failed midway is marked incomplete if the history lets us
        (else it would stay `running` for as long as this process lives)."""
        recorder = self._recorder
        if recorder is None or recorder.active or recorder.run_id is None:
            return
        with contextlib.suppress(Exception):  # broken: its warning has been given already
            RunStore(self._history_path).stop(recorder.run_id)

    def _finish(self, state: JobState) -> None:
        """End the current run; the caller holds the guard. The thread does nothing after.

        The history is written first, so whoever sees the new state finds it recorded.
        """
        if state == "done":
            items = {row.line: row.item for row in self._rows if row.item is not None}
            self._record("finish", self._judgments, items)
        else:
            self._record("stop")
        self._abandon_record()
        if self._run_started is not None:
            self._active_s += time.perf_counter() - self._run_started
            self._run_started = None
        self._stop_requested = False
        self._state = state


def upload_run_start(
    data: bytes,
    name: str,
    settings: Mapping[str, Any],
    *,
    model: str,
    template: str,
    protocol: str,
    scenario: str,
    total: int,
    model_file: Path | None = None,
) -> RunStart:
    """What the run history records up front of a batch of an uploaded file.

    The run key hashes the file's bytes and `settings` (JSON-serialisable: what the results
    depend on), as `app.io.resumable.run_key` does for the CLI's input file; the input hash
    is the sha256 of the bytes, as the CLI records it, so runs of the app and of the CLI on
    the same file are known to share their inputs.
    """
    digest = hashlib.sha256(data)
    return RunStart(
        run_key=settings_key(digest, settings),
        source=APP_SOURCE,
        input_name=name,
        input_hash=digest.hexdigest(),
        model=model,
        template=template,
        protocol=protocol,
        scenario=scenario,
        total=total,
        settings=dict(settings),
        versions=run_versions(template, model_file),
    )
