"""One loaded judge model per process, shared by every browser tab, with its lock.

`shared_judge(settings)` returns the `SharedJudge` for the model and load options the
settings name. Streamlit's `st.cache_resource` keeps one entry (`max_entries=1`): asking for
another model (or other load options) loads it and releases the previous one.

A released model is closed as soon as nobody is using it: `retire()` waits in a daemon
thread for the batch jobs that still run on it and for its lock (a single-item judgment in
another tab), then closes the backend. The cache calls `retire()` while holding its own
lock, so it must not block.

Every model call goes through the model's `threading.Lock`: batch jobs get it as their
`lock`, single items take it with `SharedJudge.use()`. Two tabs judging at once therefore
take turns call by call instead of sharing one llama.cpp context at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import streamlit as st

from app.api import Judge, load_judge
from app.ui.settings import Settings, is_model_file
from models.backends.base import BackendOptions
from models.foundation.errors import PocketJudgeError

RUNNING_STATES = ("running", "stopping")


class ModelReleased(PocketJudgeError):
    """The model was unloaded (another tab switched models) before it could be used."""


class ModelLoadFailed(PocketJudgeError):
    """The model could not be loaded; the message says what to do."""


class Job(Protocol):
    """What retiring needs from a batch job."""

    @property
    def state(self) -> str: ...

    def wait(self, timeout: float | None = None) -> object: ...


class SharedJudge:
    """A loaded judge (opened through `app.api`, as every front end opens one), the lock
    around its calls, and the jobs running on it."""

    def __init__(self, judge: Judge, key: tuple) -> None:
        self.judge = judge
        self.key = key
        self.lock = threading.Lock()
        self._guard = threading.Lock()  # protects the fields below
        self._jobs: list[Job] = []
        self._retired = False
        self._closed = threading.Event()

    @property
    def name(self) -> str:
        return self.judge.name

    @property
    def retired(self) -> bool:
        return self._retired

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def track(self, job: Job) -> None:
        """Keep the model open while `job` runs. Raises ModelReleased once retired."""
        with self._guard:
            if self._retired:
                raise ModelReleased(_released_message(self.name))
            self._jobs = [j for j in self._jobs if j.state in RUNNING_STATES]
            self._jobs.append(job)

    @contextmanager
    def use(self) -> Iterator[Judge]:
        """Hold the model's lock for a call; raises ModelReleased if it was closed meanwhile."""
        with self.lock:
            if self.closed:
                raise ModelReleased(_released_message(self.name))
            yield self.judge

    def retire(self) -> None:
        """Close the model once no job runs on it and no call holds its lock (never blocks)."""
        with self._guard:
            if self._retired:
                return
            self._retired = True
            jobs = list(self._jobs)
        threading.Thread(
            target=self._close_when_idle, args=(jobs,), name="pocketjudge-release", daemon=True
        ).start()

    def wait_closed(self, timeout: float | None = None) -> bool:
        return self._closed.wait(timeout)

    def _close_when_idle(self, jobs: list[Job]) -> None:
        for job in jobs:
            job.wait(None)
        with self.lock:
            try:
                self.judge.close()
            finally:
                self._closed.set()


def _released_message(name: str) -> str:
    return (
        f"the model '{name}' was unloaded because a tab switched to another model or to other "
        "load settings; judge again to load the model chosen now"
    )


def model_key(settings: Settings) -> tuple:
    """What makes two loads the same: the model and the options that apply at load time."""
    options = settings.backend_options()
    return (settings.model, options.n_ctx, options.n_threads, options.n_gpu_layers)


def open_shared(model: str, options: BackendOptions) -> Judge:
    """`app.api.load_judge`, with every failure turned into ModelLoadFailed saying what to do."""
    hint = (
        "check that the path is right and the file is a complete GGUF model llama.cpp can read"
        if is_model_file(model)
        else "run `make models` to build the registry's model files"
    )
    try:
        return load_judge(model, options=options, isolated=True)
    except PocketJudgeError as exc:
        text = str(exc)
        said = any(word in text for word in ("make models", "install", "check"))
        raise ModelLoadFailed(
            f"could not load the judge model: {text}" + ("" if said else f"; {hint}")
        ) from exc
    except Exception as exc:  # llama.cpp may raise ValueError/RuntimeError on a bad file
        raise ModelLoadFailed(f"could not load the judge model '{model}': {exc}; {hint}") from exc


_LOADED: dict[str, tuple] = {}  # "key": the key of the model loaded now, if any


def _release(shared: SharedJudge) -> None:
    if _LOADED.get("key") == shared.key:
        _LOADED.pop("key", None)
    shared.retire()


@st.cache_resource(max_entries=1, on_release=_release, show_spinner=False)
def _load_shared(model: str, n_ctx: int, n_threads: int | None, n_gpu_layers: int) -> SharedJudge:
    options = BackendOptions(n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)
    key = (model, n_ctx, n_threads, n_gpu_layers)
    shared = SharedJudge(open_shared(model, options), key)
    _LOADED["key"] = key
    return shared


def shared_judge(settings: Settings) -> SharedJudge:
    """The process's loaded model for these settings (loads it, and releases another, if new)."""
    return _load_shared(*model_key(settings))


@st.cache_resource(max_entries=1, on_release=lambda shared: shared.retire(), show_spinner=False)
def _load_second(model: str, n_ctx: int, n_threads: int | None, n_gpu_layers: int) -> SharedJudge:
    options = BackendOptions(n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)
    return SharedJudge(open_shared(model, options), (model, n_ctx, n_threads, n_gpu_layers))


def shared_second_judge(settings: Settings) -> SharedJudge | None:
    """The cascade's second judge (`settings.cascade_model`), loaded once for all tabs in a
    slot of its own, so it never unloads the first judge; None when there is none."""
    if not settings.cascade_model:
        return None
    return _load_second(settings.cascade_model, *model_key(settings)[1:])


def clear_models() -> None:
    """Release every cached model (tests, or a user asking to free memory)."""
    _load_shared.clear()


def loaded_key() -> tuple | None:
    """The key of the model loaded now, without loading anything (for the sidebar status)."""
    return _LOADED.get("key")
