"""OpenAIBackend against a real HTTP server that fails on purpose.

The server is Python's own `http.server` in a thread, answering each request
from a script (status, headers, delay), so every retry, refusal and timeout
below is a real HTTP exchange. Backoffs are tiny, so the module runs in seconds.
(The tests against a real llama-cpp-python server are in test_openai_backend.py.)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest

from models.backends.base import BackendOptions, Message, SamplingParams
from models.backends.openai_backend import OpenAIBackend
from models.backends.retry import RetryPolicy, parse_retry_after, retryable_status
from models.foundation.errors import BackendError, BackendUnavailable

MESSAGES = (Message("user", "Say something."),)
PARAMS = SamplingParams(max_tokens=4)
COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "tiny",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


@dataclass(frozen=True)
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Script:
    """The replies in order; the last one repeats. Counts the requests it answered."""

    replies: list[Reply]
    requests: int = 0
    release: threading.Event = field(default_factory=threading.Event)

    def next(self) -> Reply:
        reply = self.replies[min(self.requests, len(self.replies) - 1)]
        self.requests += 1
        return reply


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.script = script


class Handler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        reply = self.server.script.next()
        if reply.delay_s:
            self.server.script.release.wait(reply.delay_s)  # set when the test ends
        if reply.status == 200:
            body = json.dumps(COMPLETION).encode()
        else:
            body = json.dumps({"error": {"message": f"scripted {reply.status}"}}).encode()
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:  # the client gave up (a timeout test)
            pass

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator:
    """serve(*replies) -> (base URL, script): a server answering with those replies."""
    servers: list[ScriptedServer] = []

    def start(*replies: Reply) -> tuple[str, Script]:
        script = Script(list(replies))
        server = ScriptedServer(script)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1", script

    yield start
    for server in servers:
        server.script.release.set()
        server.shutdown()
        server.server_close()


def _backend(base_url: str, **options: object) -> OpenAIBackend:
    settings: dict[str, object] = {
        "base_url": base_url,
        "api_key_env": "POCKETJUDGE_TEST_FAULTS_KEY",
        "timeout_s": 5.0,
        "max_retries": 3,
        "retry_backoff_s": 0.01,
        "retry_max_wait_s": 0.05,
        **options,
    }
    return OpenAIBackend(openai, "tiny", BackendOptions(**settings))  # type: ignore[arg-type]


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there any more


def test_503_twice_then_an_answer_succeeds_after_retries(serve) -> None:
    url, script = serve(Reply(503), Reply(503), Reply(200))
    backend = _backend(url)
    try:
        result = backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    assert result.text == "ok" and result.completion_tokens == 1
    assert script.requests == 3


def test_always_500_gives_up_after_max_retries_plus_one_attempts(serve) -> None:
    url, script = serve(Reply(500))
    backend = _backend(url, max_retries=2)
    try:
        with pytest.raises(BackendError) as error:
            backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    assert script.requests == 3
    message = str(error.value)
    assert url in message and "after 3 attempts" in message
    assert "HTTP 500 Internal Server Error (scripted 500)" in message
    assert "check its log" in message


def test_no_retries_means_one_attempt(serve) -> None:
    url, script = serve(Reply(502))
    backend = _backend(url, max_retries=0)
    try:
        with pytest.raises(BackendError, match="after 1 attempt "):
            backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    assert script.requests == 1


def test_401_fails_at_once_naming_the_key(serve, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POCKETJUDGE_TEST_FAULTS_KEY", raising=False)
    url, script = serve(Reply(401))
    backend = _backend(url, retry_backoff_s=5.0, retry_max_wait_s=5.0)
    started = time.perf_counter()
    try:
        with pytest.raises(BackendError) as error:
            backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    assert script.requests == 1 and time.perf_counter() - started < 2
    assert str(error.value) == (
        f"the server refused the request: HTTP 401 Unauthorized (scripted 401) from {url}: "
        "check the API key in $POCKETJUDGE_TEST_FAULTS_KEY (it is not set)"
    )


@pytest.mark.parametrize(
    ("status", "hint"),
    [(404, "check --base-url (it usually ends in /v1)"), (400, "try another --schema-form")],
)
def test_other_client_errors_fail_at_once(serve, status: int, hint: str) -> None:
    url, script = serve(Reply(status))
    backend = _backend(url)
    try:
        with pytest.raises(BackendError, match="refused the request") as error:
            backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    assert script.requests == 1
    assert f"HTTP {status}" in str(error.value) and hint in str(error.value)


def test_a_slow_server_times_out_and_the_message_says_so(serve) -> None:
    url, script = serve(Reply(200, delay_s=10))
    backend = _backend(url, timeout_s=0.3, max_retries=1)
    started = time.perf_counter()
    try:
        with pytest.raises(BackendError) as error:
            backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    assert time.perf_counter() - started < 5
    assert script.requests == 2
    message = str(error.value)
    assert url in message and "after 2 attempts" in message
    assert "no answer within the 0.3 s timeout" in message
    assert "allow more time (timeout_s)" in message


def test_connection_refused_gives_up_with_what_to_do() -> None:
    url = _closed_port_url()
    backend = _backend(url, max_retries=2)
    try:
        with pytest.raises(BackendError) as error:
            backend.generate(MESSAGES, PARAMS)
    finally:
        backend.close()
    message = str(error.value)
    assert message.startswith(f"cannot reach {url} after 3 attempts (last cause: ")
    assert "refused" in message.lower()
    assert message.endswith("is the server running? Start it, or check --base-url")


def test_retry_after_replaces_the_backoff_within_the_cap(serve) -> None:
    # A backoff of 30 s would fail the time limit: Retry-After 0 is what is waited.
    url, script = serve(Reply(429, {"Retry-After": "0"}), Reply(200))
    backend = _backend(url, retry_backoff_s=30.0, retry_max_wait_s=30.0)
    started = time.perf_counter()
    try:
        assert backend.generate(MESSAGES, PARAMS).text == "ok"
    finally:
        backend.close()
    assert script.requests == 2 and time.perf_counter() - started < 5
    # A Retry-After beyond the cap waits the cap only.
    url, script = serve(Reply(503, {"Retry-After": "3600"}), Reply(200))
    backend = _backend(url, retry_max_wait_s=0.05)
    started = time.perf_counter()
    try:
        assert backend.generate(MESSAGES, PARAMS).text == "ok"
    finally:
        backend.close()
    assert script.requests == 2 and time.perf_counter() - started < 5


def test_the_policy_doubles_the_wait_up_to_the_cap() -> None:
    policy = RetryPolicy()  # the defaults BackendOptions uses
    assert (policy.attempts, BackendOptions().max_retries, BackendOptions().timeout_s) == (
        4,
        3,
        120.0,
    )
    assert [policy.wait_s(n) for n in range(3)] == [1.0, 2.0, 4.0]
    assert RetryPolicy(backoff_s=1, max_wait_s=3).wait_s(5) == 3
    assert policy.wait_s(0, retry_after_s=7.5) == 7.5
    assert policy.wait_s(0, retry_after_s=90) == 30
    assert [retryable_status(s) for s in (408, 429, 500, 503, 400, 401, 404, 422)] == (
        [True] * 4 + [False] * 4
    )
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None
    now = datetime(2015, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=now) == 30.0


def test_bad_timeout_or_retry_settings_are_unavailable() -> None:
    with pytest.raises(BackendUnavailable, match="timeout_s must be more than 0"):
        _backend("http://127.0.0.1:9/v1", timeout_s=0)
    with pytest.raises(BackendUnavailable, match="max_retries must be 0 or more"):
        _backend("http://127.0.0.1:9/v1", max_retries=-1)
