"""The OpenAI-compatible backend with requests in flight at once (score mode,
`parallel`): never more than the bound, results in request order, a failed
request failing alone; then the real CLI against a llama-cpp-python server."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openai
import pytest

from app.records import Judgment, Status
from models.backends.base import BackendOptions, Message, OutputSpec, SamplingParams, ScoreRequest
from models.backends.openai_backend import OpenAIBackend
from tests.app.cli.test_cli_backend_down import free_port, run, start_server

ROOT = Path(__file__).resolve().parents[3]


class EchoServer(ThreadingHTTPServer):
    """Answers each chat request with its own user message after `delay_s`, counting how
    many are being answered at once; a message "fail" gets a 400."""

    daemon_threads = True

    def __init__(self, delay_s: float) -> None:
        super().__init__(("127.0.0.1", 0), EchoHandler)
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0


class EchoHandler(BaseHTTPRequestHandler):
    server: EchoServer

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        text = request["messages"][-1]["content"]
        with self.server.lock:
            self.server.in_flight += 1
            self.server.most = max(self.server.most, self.server.in_flight)
        time.sleep(self.server.delay_s)
        with self.server.lock:
            self.server.in_flight -= 1
        if text == "fail":
            status, body = 400, {"error": {"message": "bad request"}}
        else:
            status, body = 200, {
                "id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
            }  # fmt: skip
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer(delay_s=0.2)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def backend(server: EchoServer, parallel: int) -> OpenAIBackend:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    options = BackendOptions(base_url=url, parallel=parallel, max_retries=0, timeout_s=10)
    return OpenAIBackend(openai, "m", options)


def requests(texts: list[str]) -> list[ScoreRequest]:
    return [
        ScoreRequest((Message("user", text),), OutputSpec(), SamplingParams(max_tokens=8))
        for text in texts
    ]


@pytest.mark.parametrize("parallel", [1, 4])
def test_requests_in_flight_stay_within_the_bound_and_keep_their_order(
    echo: EchoServer, parallel: int
) -> None:
    texts = [f"row {n}" for n in range(8)]
    started = time.perf_counter()
    results = backend(echo, parallel).score(requests(texts))
    elapsed = time.perf_counter() - started
    assert [r.text for r in results] == texts
    assert echo.most == parallel
    if parallel == 4:
        assert elapsed < 8 * 0.2  # side by side: about 2 rounds of 0.2 s, not 8


def test_a_failed_request_fails_alone(echo: EchoServer) -> None:
    results = backend(echo, 4).score(requests(["a", "fail", "c"]))
    assert [r.text for r in results] == ["a", "", "c"]
    assert results[0].error is None and results[2].error is None
    assert "refused" in (results[1].error or "")


def test_the_cli_with_parallel_4_against_a_real_server_equals_one_at_a_time(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    rows = [{"id": f"q{n}", "question": f"What is {n} + {n}?", "answers": [str(2 * n), str(n)]}
            for n in range(1, 9)]  # fmt: skip
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    port = free_port()
    server = start_server(tiny_gguf_model, port, tmp_path / "server.log")
    outs = {}
    try:
        for parallel in (1, 4):
            out = tmp_path / f"out{parallel}.jsonl"
            args = [sys.executable, "-m", "app", "judge", str(source), "--out", str(out),
                    "--backend", "openai", "--model", "tiny", "--base-url",
                    f"http://127.0.0.1:{port}/v1", "--schema-form", "json_object",
                    "--criteria", "accuracy", "--max-tokens", "200", "--quiet",
                    "--parallel", str(parallel)]  # fmt: skip
            done = run(args)
            outs[parallel] = [
                Judgment.model_validate(json.loads(line)) for line in out.read_text().splitlines()
            ]
            # exit 1 when some row is unparsed (the tiny model is random), else 0
            failed = any(j.status is not Status.OK for j in outs[parallel])
            assert done.returncode == (1 if failed else 0), done.stderr
    finally:
        server.terminate()
        server.wait(timeout=30)
    one, four = outs[1], outs[4]
    assert [j.id for j in four] == [f"q{n}" for n in range(1, 9)]
    assert all(j.mode == "score" for j in four)  # score mode: the windows go to score()

    def result(judgment: Judgment) -> tuple:
        return (judgment.status, judgment.winner, judgment.answers, judgment.raw_output)

    assert [result(j) for j in four] == [result(j) for j in one]
