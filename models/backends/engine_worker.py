"""The engine worker: a child process that owns one model and answers its parent's calls.

    python -m models.backends.engine_worker FD [LABEL]

FD is this end of a socket pair the parent made (models/backends/worker_backend.py);
LABEL (the model's file name) is only there for `ps` to show. A
crash of native code (llama.cpp) then ends this process only; the parent reports how it
ended and starts a fresh one for the next call. Each message is a pickled tuple
(method, args, kwargs), answered by ("ok", value) or ("error", exception):

- "open" (backend name, model path, BackendOptions) loads the model; it answers the
  backend's name and capabilities;
- "build_info" answers what llama.cpp was built with (models.backends.engine_info);
- "embed" (texts) answers their MiniLM embeddings (models.sentence_encoder);
- a backend method (`CALLS`) answers what the backend returned.

The process ends when the parent sends "close" or goes away (end of file).
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import sys
from multiprocessing.connection import Connection
from typing import Any

from models.backends import create_backend
from models.backends.base import Backend
from models.backends.engine_info import engine_build_info
from models.foundation.errors import BackendError, PocketJudgeError

# The backend methods a parent may call (what models.backends.worker_backend forwards: the
# Backend and StateSource protocols, and llama.cpp's reply read).
CALLS = frozenset(
    {
        "generate",
        "score",
        "count_tokens",
        "score_reply_tokens",
        "state_features",
        "read_answers",
        "read_reply",
        "prompt_tokens",
    }
)


def serve(connection: Connection) -> None:
    """Answer calls until "close" or the parent's end of file."""
    backend: Backend | None = None
    try:
        while True:
            try:
                method, args, kwargs = connection.recv()
            except (EOFError, OSError):
                return
            if method == "close":
                connection.send(("ok", None))
                return
            try:
                value = _call(backend, method, args, kwargs)
                if method == "open":
                    backend, value = value, (value.name, value.capabilities)
                reply: tuple[str, Any] = ("ok", value)
            except Exception as error:
                reply = ("error", _portable(error))
            _send(connection, reply)
    finally:
        if backend is not None:
            with contextlib.suppress(Exception):
                backend.close()


def _call(backend: Backend | None, method: str, args: tuple, kwargs: dict) -> Any:
    if method == "open":
        return create_backend(*args)
    if method == "build_info":
        return engine_build_info()
    if method == "embed":  # MiniLM embeddings (models/sentence_encoder.py), no model opened
        from models.sentence_encoder import embed

        return embed(*args)
    if method not in CALLS:
        raise BackendError(f"the engine worker has no call '{method}'")
    if backend is None:
        raise BackendError("the engine worker has no model open")
    return getattr(backend, method)(*args, **kwargs)


def _send(connection: Connection, reply: tuple[str, Any]) -> None:
    try:
        connection.send(reply)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        connection.send(("error", BackendError(f"the engine's answer could not be sent: {error}")))


def _portable(error: Exception) -> Exception:
    """`error` if it survives pickling (the parent raises the same type), else a BackendError
    (or a PocketJudgeError) with its message."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        kind = PocketJudgeError if isinstance(error, PocketJudgeError) else BackendError
        return kind(f"{type(error).__name__}: {error}")


def main(argv: list[str]) -> int:
    # Ctrl-C in a terminal reaches the whole process group: the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(Connection(int(argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
