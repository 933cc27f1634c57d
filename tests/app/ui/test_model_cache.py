"""The shared model: one per process, a lock around calls, closed once nobody uses it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from app.api import Judge, JudgeConfig
from app.ui import model_cache
from app.ui.model_cache import ModelLoadFailed, ModelReleased, SharedJudge, open_shared
from app.ui.settings import Settings
from models.backends.base import BackendOptions
from models.loader import LoadedJudge
from tests.support.fake_backend import FakeBackend


class Job:
    """A stand-in batch job that runs until `finish()`."""

    def __init__(self) -> None:
        self.state = "running"
        self._done = threading.Event()

    def finish(self) -> None:
        self.state = "done"
        self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


def shared() -> tuple[SharedJudge, FakeBackend]:
    backend = FakeBackend()
    judge = Judge(LoadedJudge(backend, "fake-model", None), JudgeConfig())
    return SharedJudge(judge, ("fake-model",)), backend


def test_retired_model_closes_at_once_when_idle() -> None:
    handle, backend = shared()
    handle.retire()
    assert handle.wait_closed(5)
    assert backend.closed and handle.retired
    with pytest.raises(ModelReleased, match="was unloaded"), handle.use():
        pass
    with pytest.raises(ModelReleased):
        handle.track(Job())


def test_retiring_waits_for_running_jobs_and_the_lock() -> None:
    handle, backend = shared()
    job = Job()
    handle.track(job)
    handle.retire()
    assert not handle.wait_closed(0.2)  # the job still runs on it
    with handle.use():
        job.finish()
        assert not handle.wait_closed(0.2)  # a call holds the lock
    assert handle.wait_closed(5) and backend.closed


def test_use_holds_the_lock() -> None:
    handle, _ = shared()
    with handle.use() as judge:
        assert judge.name == "fake-model"
        assert handle.lock.locked()
    assert not handle.lock.locked()


def test_load_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadFailed, match="file not found"):
        open_shared(str(tmp_path / "missing.gguf"), BackendOptions())
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    with pytest.raises(ModelLoadFailed, match="complete GGUF model"):
        open_shared(str(broken), BackendOptions())


def test_switching_models_releases_the_previous_one(tiny_gguf_model: Path) -> None:
    model_cache.clear_models()
    first_settings = Settings(model=str(tiny_gguf_model), n_threads=1)
    first = model_cache.shared_judge(first_settings)
    assert model_cache.shared_judge(first_settings) is first  # loaded once, shared
    assert model_cache.loaded_key() == model_cache.model_key(first_settings)
    second = model_cache.shared_judge(Settings(model=str(tiny_gguf_model), n_threads=2))
    assert second is not first
    assert first.retired and first.wait_closed(10)
    assert not second.retired and not second.closed
    model_cache.clear_models()
    assert second.wait_closed(10)
    assert model_cache.loaded_key() is None
