"""Any OpenAI-compatible chat server: llama-server, llama-cpp-python's server, vLLM, Ollama.

The API key is read from an environment variable (never from a file or a
flag, so it does not end up in shell history or results). Servers differ in
how they accept a JSON schema, so the request form is an option:

- `json_schema` (default): OpenAI's `{"type": "json_schema", "json_schema": {...}}`,
  understood by OpenAI, vLLM and llama.cpp's llama-server;
- `json_object`: `{"type": "json_object", "schema": ...}`, the form
  llama-cpp-python's server honours (it silently ignores `json_schema` in 0.3.36);
- `none`: no constraint; the parser checks the text.

This backend cannot read score distributions, so its judgments carry no
expected scores or confidence.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from app.errors import BackendError, BackendUnavailable
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

SCHEMA_FORMS = ("json_schema", "json_object", "none")


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
        api_key = os.environ.get(options.api_key_env) or "not-needed"
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=options.base_url,
            api_key=api_key,
            timeout=float(options.extra.get("timeout_s", 600)),
            max_retries=int(options.extra.get("max_retries", 1)),
        )
        self.model = options.remote_model or model
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
        try:
            response = self._client.chat.completions.create(**request)
        except self._openai.APIConnectionError as exc:
            raise BackendError(
                f"cannot reach {self._client.base_url}: is the server running? ({exc})"
            ) from exc
        except self._openai.APIError as exc:
            raise BackendError(f"the server refused the request: {exc}") from exc
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
        """Score mode by plain generation (no token probabilities here)."""
        return score_by_generation(self, requests)

    def count_tokens(self, messages: Sequence[Message]) -> int | None:
        return None

    def score_reply_tokens(self, output: OutputSpec) -> int | None:
        return None

    def close(self) -> None:
        self._client.close()
