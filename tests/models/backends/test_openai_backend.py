"""OpenAIBackend against the real llama-cpp-python server serving the tiny GGUF.

The server runs as a subprocess for this module. It is started with an API
key, so a request only gets through when the backend read that key from the
environment variable named by `api_key_env`.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.needs import need_module
from tests.support.replies import pair_reply_parses

need_module(
    "llama_cpp.server.app", install="run `make setup` (llama-cpp-python[server])", module_level=True
)

from app.catalog.criteria_resolution import CriteriaChoice, resolve  # noqa: E402 - after the check above
from app.catalog.scenarios import load_catalog  # noqa: E402 - after the check above
from app.judging.config import JudgeConfig  # noqa: E402 - after the check above
from app.judging.service import JudgeService  # noqa: E402 - after the check above
from app.records import JudgeItem, Protocol, Status  # noqa: E402 - after the check above
from models.backends.base import BackendOptions, Message, OutputSpec, SamplingParams  # noqa: E402 - after the check above
from models.backends.openai_backend import OpenAIBackend  # noqa: E402 - after the check above
from models.foundation.errors import BackendError, BackendUnavailable  # noqa: E402 - after the check above
from models.loader import open_judge  # noqa: E402 - after the check above

API_KEY = "test-key-7f3a"
KEY_ENV = "POCKETJUDGE_TEST_API_KEY"
START_TIMEOUT_S = 60
ITEM = JudgeItem(
    id="pair-1",
    question="What is the capital of France?",
    answers=("Paris is the capital of France.", "The capital of France is Rome."),
)
# Few criteria and tokens: the tiny tokenizer spells the prompt in ~1000 tokens of 2048.
CONFIG = JudgeConfig(
    mode="generate",
    choice=CriteriaChoice(criteria=("accuracy", "relevance", "clarity")),
    sampling=SamplingParams(temperature=0.0, max_tokens=600, seed=0),
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(url: str) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {API_KEY}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200 and "data" in json.loads(response.read())
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def server(tiny_gguf_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a running llama-cpp-python server; stopped after the module."""
    port = _free_port()
    log_file = tmp_path_factory.mktemp("server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(tiny_gguf_model),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", "2048",
        "--n_threads", "1",
        "--n_threads_batch", "1",
        "--api_key", API_KEY,
    ]  # fmt: skip
    with log_file.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(f"{base_url}/models"):
            if process.poll() is not None:
                pytest.fail(f"the server exited ({process.returncode}):\n{log_file.read_text()}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the server did not answer in {START_TIMEOUT_S}s:\n{log_file.read_text()}"
                )
            time.sleep(0.1)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _options(base_url: str, **fields: object) -> BackendOptions:
    return BackendOptions(  # type: ignore[arg-type]
        base_url=base_url, api_key_env=KEY_ENV, extra={"schema_form": "json_object"}, **fields
    )


def test_judges_a_pairwise_item_through_the_server(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    judge = open_judge(None, _options(server), backend="openai")
    try:
        assert judge.name == "openai:default"
        assert not judge.backend.capabilities.score_distributions
        judgment = JudgeService(judge.backend, judge.name).judge(ITEM, CONFIG, line=1)
    finally:
        judge.close()
    assert judgment.protocol is Protocol.PAIRWISE
    assert judgment.swapped
    raws = (judgment.raw_output, judgment.raw_output_swapped)
    for raw in raws:
        # The server turned the schema into a grammar: both orders are the judgment's JSON.
        assert raw is not None
        data = json.loads(raw, strict=False)  # that grammar lets raw newlines into strings
        assert set(data) == {"scores", "overall", "verdict", "feedback"}, raw
        assert set(data["scores"]) == {"A", "B"}
    # A random model under a plain schema grammar can still write an overall that disagrees
    # with its scores: the status must follow what the two replies hold.
    rule = resolve(CONFIG.choice, ITEM, load_catalog()).rule
    if all(pair_reply_parses(raw, rule) for raw in raws):
        assert judgment.status is Status.OK, judgment.error
        assert judgment.winner in ("A", "B", "tie")
        assert len(judgment.answers) == 2
        # No logits over the API: no expected scores, and the verdict's probabilities are
        # the share of the two orders that wrote each verdict (0, 1/2 or 1).
        assert all(a.expected_overall is None for a in judgment.answers)
        assert set(judgment.verdict_probs.values()) <= {0.0, 0.5, 1.0}, judgment.verdict_probs
        assert judgment.confidence == judgment.verdict_probs[judgment.winner]
        assert judgment.consistent is (judgment.confidence == 1.0)
    else:
        # The raw text is kept and the reason is stated.
        assert judgment.status is Status.UNPARSED, judgment
        assert judgment.error and judgment.answers == ()
    assert judgment.prompt_tokens and judgment.completion_tokens


def test_api_key_comes_from_the_named_environment_variable(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = (Message("user", "Say something."),)
    params = SamplingParams(max_tokens=4)
    monkeypatch.setenv(KEY_ENV, API_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
    backend = OpenAIBackend(openai, "tiny", _options(server))
    try:
        result = backend.generate(messages, params)
        assert result.completion_tokens and result.completion_tokens <= 4
    finally:
        backend.close()
    # The key is only read from KEY_ENV: without it the server refuses the request.
    monkeypatch.delenv(KEY_ENV)
    backend = OpenAIBackend(openai, "tiny", _options(server, max_retries=0))
    try:
        with pytest.raises(BackendError, match="refused"):
            backend.generate(messages, params)
    finally:
        backend.close()


def test_without_the_key_a_row_becomes_an_error_judgment(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    judge = open_judge(None, _options(server, max_retries=0), backend="openai")
    try:
        judgment = JudgeService(judge.backend, judge.name).judge(ITEM, CONFIG)
    finally:
        judge.close()
    assert judgment.status is Status.ERROR
    assert "backend failed" in judgment.error and "401" in judgment.error


def test_connection_refused_is_an_error_judgment_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    base_url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    judge = open_judge(None, _options(base_url, max_retries=0, timeout_s=5), backend="openai")
    service = JudgeService(judge.backend, judge.name)
    started = time.perf_counter()
    try:
        with pytest.raises(BackendError, match="cannot reach"):
            judge.backend.generate((Message("user", "hi"),), SamplingParams(max_tokens=4))
        judgment = service.judge(ITEM, CONFIG, line=3)
    finally:
        judge.close()
    assert time.perf_counter() - started < 15
    assert judgment.status is Status.ERROR
    assert judgment.line == 3 and judgment.id == ITEM.id
    assert "backend failed" in judgment.error and "is the server running" in judgment.error
    assert judgment.raw_output is None and judgment.answers == ()


def test_response_format_per_schema_form() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    spec = OutputSpec(json_schema=schema)
    forms = {}
    for form in ("json_schema", "json_object", "none"):
        options = BackendOptions(base_url="http://127.0.0.1:9/v1", extra={"schema_form": form})
        backend = OpenAIBackend(openai, "m", options)
        forms[form] = backend._response_format(spec)
        assert backend._response_format(None) is None
        backend.close()
    assert forms["json_object"] == {"type": "json_object", "schema": schema}
    assert forms["json_schema"]["json_schema"]["schema"] == schema
    assert forms["none"] is None


def test_bad_settings_are_unavailable() -> None:
    with pytest.raises(BackendUnavailable, match="base URL"):
        open_judge(None, BackendOptions(), backend="openai")
    with pytest.raises(BackendUnavailable, match="schema_form 'xml'"):
        open_judge(
            None,
            BackendOptions(base_url="http://127.0.0.1:9/v1", extra={"schema_form": "xml"}),
            backend="openai",
        )
