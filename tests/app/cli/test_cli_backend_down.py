"""A server that is down stops a CLI batch with exit code 3 and loses nothing.

The CLI judges through the openai backend against a port where nothing listens:
the rows it failed on are not written (so they are not taken as judged), the run
stops after three of them with exit code 3 and says how to go on. Then a real
llama-cpp-python server is started on that port, on the tiny model the tests
build, and the same command judges every row.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from app.batches.run import ExitCode
from app.records import Judgment, Status
from tests.support.needs import need_module

need_module(
    "llama_cpp.server.app", install="run `make setup` (llama-cpp-python[server])", module_level=True
)

ROOT = Path(__file__).resolve().parents[3]
ROWS = 4


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def judge_command(source: Path, out: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "app", "judge", str(source), "--out", str(out),
            "--backend", "openai", "--model", "tiny", "--base-url",
            f"http://127.0.0.1:{port}/v1", "--schema-form", "json_object", "--mode", "generate",
            "--criteria", "accuracy", "--no-swap", "--max-tokens", "200", "--retries", "1",
            "--timeout", "60", "--quiet"]  # fmt: skip


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "k"}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def start_server(model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
               "--n_threads", "1", "--n_threads_batch", "1"]  # fmt: skip
    with log.open("wb") as stream:
        process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return process
        except OSError:
            assert process.poll() is None, log.read_text()
            time.sleep(0.1)
    process.kill()
    pytest.fail(f"the server did not start:\n{log.read_text()}")


def test_a_down_server_stops_the_batch_with_exit_3_and_the_rerun_judges_every_row(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows = [{"id": f"q{n}", "question": f"What is {n} + {n}?", "answers": [str(2 * n)]}
            for n in range(1, ROWS + 1)]  # fmt: skip
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    port = free_port()
    args = judge_command(source, out, port)

    down = run(args)
    assert down.returncode == ExitCode.BACKEND, down.stderr
    assert "the backend failed on 3 rows in a row (line 1 on)" in down.stderr
    assert "Connection refused" in down.stderr and "run the same command again" in down.stderr
    assert not out.exists()
    # the failed rows are not recorded as judged (no row was: no partial file yet)
    assert all(p.read_text() == "" for p in tmp_path.glob("out.jsonl.*.partial"))

    server = start_server(tiny_gguf_model, port, tmp_path / "server.log")
    try:
        up = run(args)
    finally:
        server.terminate()
        server.wait(timeout=30)
    judged = [Judgment.model_validate(json.loads(line)) for line in out.read_text().splitlines()]
    # the tiny model may leave a row unparsed: the exit code says so, and only then
    failed = any(j.status is not Status.OK for j in judged)
    assert up.returncode == (ExitCode.ROWS_FAILED if failed else ExitCode.OK), up.stderr
    assert [j.id for j in judged] == [f"q{n}" for n in range(1, ROWS + 1)]
    assert not any((j.error or "").startswith("backend failed") for j in judged)
    assert list(tmp_path.glob("out.jsonl.*.partial")) == []
