"""Any OpenAI-compatible chat server: llama-server, llama-cpp-python's server, vLLM, Ollama.

The API key is read from an environment variable (never from a file or a
flag, so it does not end up in shell history or results). Servers differ in
how they accept a JSON schema, so the request form is an option:

- `json_schema` (default): OpenAI's `{"type": "json_schema", "json_schema": {...}}`,
  understood by OpenAI, vLLM and llama.cpp's llama-server;
- `json_object`: `{"type": "json_object", "schema": ...}`, the form
  llama-cpp-python's server honours (it silently ignores `json_schema` in 0.3.36);
- `none`: no constraint; the parser checks the text.

A request that fails in a way worth retrying (no connection, a timeout, HTTP
408/429/5xx) is retried with exponential backoff (models/backends/retry.py); one
the server refuses (400, 401, 404, ...) fails at once, saying what to fix. The
openai client's own retries are off, so the counts and waits are ours alone.

In score mode, `parallel` requests are in flight at once (an asyncio semaphore
over worker threads), so a fleet behind a load balancer answers them side by
side; the results keep the request order and a failed request fails alone.

This backend cannot read score distributions, so its judgments carry no
expected scores or confidence.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any

from models.backends.base import (
    BackendOptions,
    Capabilities,
    Generation,
    Message,
    OutputSpec,
    SamplingParams,
    ScoreRequest,
    score_by_generation,
)
from models.backends.retry import RetryPolicy, parse_retry_after, retryable_status
from models.foundation.errors import BackendError, BackendUnavailable

SCHEMA_FORMS = ("json_schema", "json_object", "none")
DETAIL_CHARS = 200  # of a server's error body, in a message


def create(model: str, options: BackendOptions) -> OpenAIBackend:
    try:
        import openai
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise BackendUnavailable("the openai backend needs `pip install openai`") from exc
    return OpenAIBackend(openai, model, options)


class OpenAIBackend:
    name = "openai"

    def __init__(self, openai: Any, model: str, options: BackendOptions) -> None:
        if not options.base_url:
            raise BackendUnavailable(
                "the openai backend needs a base URL, e.g. http://127.0.0.1:8080/v1"
            )
        self.schema_form = options.extra.get("schema_form", "json_schema")
        if self.schema_form not in SCHEMA_FORMS:
            raise BackendUnavailable(
                f"schema_form '{self.schema_form}' is not one of {', '.join(SCHEMA_FORMS)}"
            )
        if options.timeout_s <= 0:
            raise BackendUnavailable(
                f"timeout_s must be more than 0 seconds, not {options.timeout_s}"
            )
        try:
            self.retry = RetryPolicy(
                options.max_retries, options.retry_backoff_s, options.retry_max_wait_s
            )
        except ValueError as exc:
            raise BackendUnavailable(f"the openai backend's retry settings: {exc}") from exc
        self.base_url = options.base_url
        self.timeout_s = float(options.timeout_s)
        self.api_key_env = options.api_key_env
        api_key = os.environ.get(options.api_key_env) or "not-needed"
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=options.base_url,
            api_key=api_key,
            timeout=self.timeout_s,
            max_retries=0,  # retried here, by self.retry
        )
        self.model = options.remote_model or model
        # requests in flight at once in score(): a serving fleet behind a load balancer (vLLM,
        # llama-server) answers them side by side
        self.concurrency = max(1, options.parallel)
        self.capabilities = Capabilities(
            grammar=self.schema_form != "none",
            score_distributions=False,
            gpu_offload=False,
            batching=False,
        )

    def generate(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        output: OutputSpec | None = None,
    ) -> Generation:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        }
        if params.stop:
            request["stop"] = list(params.stop)
        response_format = self._response_format(output)
        if response_format is not None:
            request["response_format"] = response_format
        started = time.perf_counter()
        response = self._create(request)
        latency = time.perf_counter() - started
        choice = response.choices[0]
        usage = response.usage
        return Generation(
            text=choice.message.content or "",
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            latency_s=latency,
            finish_reason=choice.finish_reason,
        )

    def _create(self, request: dict[str, Any]) -> Any:
        """One chat completion, retried by the policy; BackendError once it gives up."""
        openai = self._openai
        retry_after: float | None = None
        for attempt in range(self.retry.attempts):
            if attempt:
                time.sleep(self.retry.wait_s(attempt - 1, retry_after))
            retry_after = None
            try:
                return self._client.chat.completions.create(**request)
            except openai.APITimeoutError as exc:
                failure, cause = exc, f"no answer within the {self.timeout_s:g} s timeout"
            except openai.APIConnectionError as exc:
                failure, cause = exc, _connection_cause(exc)
            except openai.APIStatusError as exc:
                if not retryable_status(exc.status_code):
                    raise BackendError(self._refusal(exc)) from exc
                failure, cause = exc, _status_text(exc)
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            except openai.APIError as exc:  # an answer that is not the API's JSON
                raise BackendError(
                    f"{self.base_url} did not answer like an OpenAI-compatible server ({exc}): "
                    "check --base-url (it usually ends in /v1)"
                ) from exc
        raise BackendError(self._gave_up(failure, cause)) from failure

    def _gave_up(self, failure: Exception, cause: str) -> str:
        attempts = self.retry.attempts
        tried = f"after {attempts} attempt{'s' if attempts > 1 else ''} (last cause: {cause})"
        if isinstance(failure, self._openai.APITimeoutError):
            return (
                f"cannot get an answer from {self.base_url} {tried}: is the server running "
                "and not overloaded? Check --base-url, or allow more time (timeout_s)"
            )
        if isinstance(failure, self._openai.APIConnectionError):
            return (
                f"cannot reach {self.base_url} {tried}: is the server running? "
                "Start it, or check --base-url"
            )
        return (
            f"the server at {self.base_url} kept failing {tried}: it is up but cannot "
            "answer; check its log (is the model still loading?) and try again later"
        )

    def _refusal(self, exc: Any) -> str:
        """The message of a status not worth retrying: what the server said and what to fix."""
        said = f"the server refused the request: {_status_text(exc)} from {self.base_url}"
        if exc.status_code == 401:
            state = "set" if os.environ.get(self.api_key_env) else "not set"
            return f"{said}: check the API key in ${self.api_key_env} (it is {state})"
        if exc.status_code == 403:
            return f"{said}: the API key in {self.api_key_env} may not be allowed this model"
        if exc.status_code == 404:
            return (
                f"{said}: check --base-url (it usually ends in /v1) and that the server "
                f"serves the model '{self.model}'"
            )
        return (
            f"{said}: if the server does not accept the JSON schema form "
            f"'{self.schema_form}', try another --schema-form ({', '.join(SCHEMA_FORMS)})"
        )

    def _response_format(self, output: OutputSpec | None) -> dict[str, Any] | None:
        if output is None or output.json_schema is None or self.schema_form == "none":
            return None
        if self.schema_form == "json_object":
            return {"type": "json_object", "schema": output.json_schema}
        return {
            "type": "json_schema",
            "json_schema": {"name": "judgment", "schema": output.json_schema, "strict": True},
        }

    def score(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        """Score mode by plain generation (no token probabilities here), up to
        `concurrency` requests in flight at once; results in request order."""
        if self.concurrency == 1 or len(requests) < 2:
            return score_by_generation(self, requests)
        return asyncio.run(self._score_concurrently(requests))

    async def _score_concurrently(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        """Each request in a worker thread (the client and its retries are synchronous and
        thread-safe), at most `concurrency` at a time; a failed one fails alone."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(request: ScoreRequest) -> Generation:
            async with gate:
                try:
                    return await asyncio.to_thread(
                        self.generate, request.messages, request.params, request.output
                    )
                except BackendError as exc:
                    return Generation(text="", error=str(exc))

        return list(await asyncio.gather(*(one(request) for request in requests)))

    def count_tokens(self, messages: Sequence[Message]) -> int | None:
        return None

    def score_reply_tokens(self, output: OutputSpec) -> int | None:
        return None

    def close(self) -> None:
        self._client.close()


def _status_text(exc: Any) -> str:
    """`HTTP 503 Service Unavailable (detail)`, the detail cut to DETAIL_CHARS."""
    try:
        phrase = HTTPStatus(exc.status_code).phrase
    except ValueError:
        phrase = ""
    text = f"HTTP {exc.status_code} {phrase}".rstrip()
    detail = _body_detail(exc.body) or (exc.response.text if exc.response is not None else "")
    detail = " ".join(str(detail).split())
    if len(detail) > DETAIL_CHARS:
        detail = detail[: DETAIL_CHARS - 3] + "..."
    return f"{text} ({detail})" if detail else text


def _body_detail(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or body)
        return str(error)
    return str(body) if body else None


def _connection_cause(exc: BaseException) -> str:
    """The innermost reason of a connection error ("[Errno 111] Connection refused")."""
    reason: BaseException = exc
    while reason.__cause__ is not None or reason.__context__ is not None:
        reason = reason.__cause__ or reason.__context__  # type: ignore[assignment]
    text = str(reason) or type(reason).__name__
    return text if reason is not exc else f"{text} ({type(exc).__name__})"
