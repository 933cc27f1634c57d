"""The engine worker on the tiny real model: the same reads as in-process llama.cpp, and a
worker that dies (killed mid-call, or between calls) reported and replaced."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from models.backends.base import BackendOptions, Message, SamplingParams
from models.backends.exit_reason import describe_exit
from models.backends.worker_backend import WorkerBackend
from models.foundation.errors import EngineStopped, ModelFileError
from models.loader import open_judge
from tests.support.needs import need_module

need_module("llama_cpp", module_level=True)

from models.backends.llama_cpp_backend import LlamaCppBackend  # noqa: E402 - after the check

OPTIONS = BackendOptions(n_ctx=1024, n_threads=1)
REQUEST = "Name a primary colour."
ANSWERS = ["Red.", "Green is one, I think."]


@pytest.fixture
def worker(tiny_gguf_model: Path) -> Iterator[WorkerBackend]:
    backend = WorkerBackend("llama-cpp", str(tiny_gguf_model), OPTIONS)
    yield backend
    backend.close()


def wait_for_exit(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def test_the_worker_reads_what_llama_cpp_reads_in_process(
    worker: WorkerBackend, tiny_gguf_model: Path
) -> None:
    local = LlamaCppBackend(str(tiny_gguf_model), OPTIONS)
    try:
        here = local.read_answers(REQUEST, ANSWERS)
        there = worker.read_answers(REQUEST, ANSWERS)
        messages = [Message("user", REQUEST)]
        assert worker.count_tokens(messages) == local.count_tokens(messages)
        params = SamplingParams(max_tokens=8)
        assert worker.generate(messages, params).text == local.generate(messages, params).text
    finally:
        local.close()
    assert len(there) == len(here) == 2
    for near, far in zip(here, there, strict=True):
        np.testing.assert_allclose(far.states, near.states, rtol=1e-5, atol=1e-5)
    assert worker.name == local.name and worker.capabilities == local.capabilities
    assert worker.pid is not None and worker.pid != os.getpid()


def test_a_worker_killed_mid_call_raises_engine_stopped_naming_the_signal(
    worker: WorkerBackend,
) -> None:
    pid = worker.pid
    assert pid is not None
    long_answer = " ".join(["a colour"] * 300)
    killer = threading.Timer(0.3, os.kill, args=(pid, signal.SIGKILL))
    killer.start()
    began = time.perf_counter()
    with pytest.raises(EngineStopped) as stopped:
        for _ in range(200):  # calls until the kill lands in one
            worker.read_answers(REQUEST, [long_answer, long_answer])
    killer.join()
    assert time.perf_counter() - began < 60
    assert stopped.value.returncode == -signal.SIGKILL
    assert "SIGKILL" in str(stopped.value) and "memory" in str(stopped.value)
    assert worker.pid is None  # no worker now ...
    readings = worker.read_answers(REQUEST, ANSWERS)  # ... the next call starts a fresh one
    assert len(readings) == 2 and worker.engine.starts == 2 and worker.pid not in (None, pid)


def test_a_worker_that_died_between_calls_is_reported_at_the_next_call(
    worker: WorkerBackend,
) -> None:
    pid = worker.pid
    assert pid is not None
    os.kill(pid, signal.SIGSEGV)
    wait_for_exit(pid)
    with pytest.raises(EngineStopped, match="SIGSEGV"):
        worker.count_tokens([Message("user", REQUEST)])
    assert worker.count_tokens([Message("user", REQUEST)]) > 0


def test_a_load_error_in_the_worker_is_raised_with_its_own_type(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 10)
    with pytest.raises(ModelFileError) as error:
        WorkerBackend("llama-cpp", str(broken), OPTIONS)
    assert error.value.kind == "corrupt" and "broken.gguf" in str(error.value)


def test_open_judge_isolated_runs_llama_cpp_in_a_worker(tiny_gguf_model: Path) -> None:
    loaded = open_judge(str(tiny_gguf_model), OPTIONS, isolated=True)
    try:
        assert isinstance(loaded.backend, WorkerBackend)
        assert loaded.backend.state_features("Red.").shape[0] > 0
    finally:
        loaded.close()
    assert loaded.backend.pid is None


@pytest.mark.parametrize(
    ("returncode", "words"),
    [
        (-signal.SIGILL, ("SIGILL", "illegal instruction", "make clean-venv setup")),
        (-signal.SIGABRT, ("SIGABRT", "failed check")),
        (-signal.SIGKILL, ("SIGKILL", "memory")),
        (3, ("exited with code 3",)),
    ],
)
def test_each_exit_is_said_with_what_to_do(returncode: int, words: tuple[str, ...]) -> None:
    text = describe_exit(returncode)
    assert all(word.lower() in text.lower() for word in words), text
