"""A backend whose model lives in a child process, so a native crash cannot take its caller
down (the Streamlit server, a CLI run).

    backend = WorkerBackend("llama-cpp", "model.gguf", BackendOptions(n_threads=1))
    backend.read_answers("2+2?", ["4", "5"])   # runs in the engine worker
    backend.close()

The worker (models/backends/engine_worker.py) loads the model and answers each call over
a socket pair. When it dies (llama.cpp stopped by a signal: an illegal instruction, a
failed assertion, the machine out of memory), the call in progress raises EngineStopped
saying how it ended and what to do, with the worker's last line of output; the next call
starts a fresh worker and loads the model again. The worker's output (llama.cpp's log,
a Python traceback) goes to a file under the system's temporary folder, not to the
caller's terminal or page.

Calls are serialised (one at a time, as on one llama.cpp context); what crosses the
process boundary is pickled: messages, sampling settings and output specs going in,
generations and readings coming back.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any

from models.backends.base import (
    BackendOptions,
    Capabilities,
    Generation,
    Message,
    OutputSpec,
    SamplingParams,
    ScoreRequest,
)
from models.backends.exit_reason import describe_exit
from models.foundation.errors import EngineStopped

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER_MODULE = "models.backends.engine_worker"
POLL_S = 0.2  # how often a waiting call checks that the worker is alive
CLOSE_WAIT_S = 5.0
_TAIL_BYTES = 4000


class EngineProcess:
    """One engine worker process and the socket to it; `call` starts one when none runs.

    `opening`: the first call of every worker started (the model's "open"), so a
    restarted worker has the model loaded again before it answers. `label` (the model's
    file name, "minilm-encoder") ends the worker's command line.
    """

    def __init__(self, opening: tuple[str, tuple] | None = None, label: str = "engine") -> None:
        self.opening = opening
        self.label = label  # on the worker's command line, so `ps` tells workers apart
        self.opened: Any = None  # what the last opening call answered
        self.starts = 0  # workers started so far (1 + the restarts after a stop)
        self._lock = threading.RLock()
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The running worker's process id (None when none runs)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def start(self) -> None:
        """Start a worker (and make its opening call); raises what that call raised."""
        with self._lock:
            self._stop_worker()
            ours, theirs = socket.socketpair()
            # kept open for the worker's life, closed by _stop_worker
            self._log = tempfile.TemporaryFile(prefix="pocketjudge-engine-")  # noqa: SIM115
            env = dict(os.environ)
            paths = [str(REPO_ROOT), env.get("PYTHONPATH")]
            env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
            try:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", WORKER_MODULE, str(theirs.fileno()), self.label],
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=self._log,
                    stderr=self._log,
                    env=env,
                )
            finally:
                theirs.close()
            self._connection = Connection(ours.detach())
            self.starts += 1
            if self.opening is None:
                return
            try:
                self.opened = self._exchange(self.opening[0], self.opening[1], {})
            except BaseException:
                self._stop_worker()
                raise

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`method` in the worker; a worker that stopped is started again first."""
        with self._lock:
            if self._process is None:
                self.start()
            return self._exchange(method, args, kwargs)

    def _exchange(self, method: str, args: tuple, kwargs: dict) -> Any:
        """Send one call and wait for its answer, watching that the worker stays alive."""
        connection, process = self._connection, self._process
        assert connection is not None and process is not None
        try:
            connection.send((method, args, kwargs))
            while not connection.poll(POLL_S):
                if process.poll() is not None:
                    break
            status, value = connection.recv()
        except (EOFError, OSError, ConnectionError):
            raise self._stopped() from None
        if status == "error":
            raise value
        return value

    def _stopped(self) -> EngineStopped:
        """The worker has ended (or is ending): how, and its last output."""
        process = self._process
        assert process is not None
        try:
            returncode = process.wait(timeout=CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            returncode = process.wait()
        reason = describe_exit(returncode)
        last = self._last_output()
        self._stop_worker()
        return EngineStopped(reason + (f" (its last output: {last})" if last else ""), returncode)

    def _last_output(self) -> str:
        log = self._log
        if log is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            log.flush()
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - _TAIL_BYTES))
            lines = [ln.strip() for ln in log.read().decode("utf-8", "replace").splitlines()]
            lines = [ln for ln in lines if ln]
            return lines[-1][:300] if lines else ""
        return ""

    def _stop_worker(self) -> None:
        """Forget the worker (its process has ended, or is killed now)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        process = self._process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def close(self) -> None:
        """Ask the worker to end (it closes its model), then make sure it has."""
        with self._lock:
            connection, process = self._connection, self._process
            if connection is not None and process is not None and process.poll() is None:
                with contextlib.suppress(EOFError, OSError, ConnectionError):
                    connection.send(("close", (), {}))
                    if connection.poll(CLOSE_WAIT_S):
                        connection.recv()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=CLOSE_WAIT_S)
            self._stop_worker()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._stop_worker()


class WorkerBackend:
    """The Backend protocol (and llama.cpp's reads), answered by an engine worker process.

    The model is loaded when this is made, so a load error (a missing file, too little
    memory) is raised here, with the same type the backend raised in the worker.
    """

    def __init__(self, kind: str, model: str, options: BackendOptions) -> None:
        path = str(Path(model).expanduser().absolute())  # the worker may start elsewhere
        self.engine = EngineProcess(("open", (kind, path, options)), Path(model).name)
        self.engine.start()
        self.name: str
        self.capabilities: Capabilities
        self.name, self.capabilities = self.engine.opened

    @property
    def pid(self) -> int | None:
        """The running worker's process id (None after it stopped, until the next call)."""
        return self.engine.pid

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.engine.call(method, *args, **kwargs)

    def close(self) -> None:
        self.engine.close()

    # -- the Backend protocol ---------------------------------------------------
    def generate(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        output: OutputSpec | None = None,
    ) -> Generation:
        return self.call("generate", list(messages), params, output)

    def score(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        return self.call("score", list(requests))

    def count_tokens(self, messages: Sequence[Message]) -> int | None:
        return self.call("count_tokens", list(messages))

    def score_reply_tokens(self, output: OutputSpec) -> int | None:
        return self.call("score_reply_tokens", output)

    # -- StateSource and llama.cpp's reads ------------------------------------------
    def state_features(self, text: str) -> Any:
        return self.call("state_features", text)

    def read_answers(
        self,
        request: str,
        answers: Sequence[str],
        unconditioned: bool = True,
        criteria: Any = None,
        adapter: str | None = None,
    ) -> Any:
        return self.call("read_answers", request, list(answers), unconditioned, criteria, adapter)

    def read_reply(self, request: str, answer: str, states: bool = True) -> Any:
        return self.call("read_reply", request, answer, states)

    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        return self.call("prompt_tokens", list(messages))
