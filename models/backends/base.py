"""The one small protocol every backend implements.

A backend turns chat messages into text. What it can do beyond that is stated
in `Capabilities`, never probed with `hasattr`:

- `grammar`: it can constrain output to a JSON schema, so valid JSON is certain;
- `score_distributions`: it can read token probabilities at the value positions
  an `OutputSpec` marks, and restrict those values to the allowed candidates;
- `states`: it can read the model's hidden states of a text (`state_features`), which
  a judge with a state head (app/deciding/state_head.py) decides from;
- `gpu_offload`, `batching`: as named.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from models.run_settings import RUN_DEFAULTS

JsonPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings. Temperature 0 means greedy decoding."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = RUN_DEFAULTS.max_tokens
    seed: int = 0
    # >1 discourages repeating the last 64 tokens (free text only); the engine's neutral 1.0,
    # where a run starts from the declared setting (`run_sampling`)
    repeat_penalty: float = 1.0
    stop: tuple[str, ...] = ()


SAMPLING_SETTINGS = ("temperature", "top_p", "max_tokens", "seed", "repeat_penalty")


def sampling_of(source: Any, **changes: Any) -> SamplingParams:
    """The sampling settings `source` names (parsed arguments, the app's settings, the
    declared run settings), as the engine takes them, with `changes` over them."""
    named = {name: getattr(source, name) for name in SAMPLING_SETTINGS}
    return SamplingParams(**{**named, **changes})


def run_sampling(**changes: Any) -> SamplingParams:
    """The sampling a run starts from: the declared settings (models/run_settings.py)."""
    return sampling_of(RUN_DEFAULTS, **changes)


@dataclass(frozen=True)
class ValueRule:
    """Which literal values may stand at one JSON position.

    `candidates` are the JSON literal texts the position can hold (`7`, `"A"`);
    `allowed` narrows what may actually be written (None: all candidates).
    When `record` is true, the backend reports the probability the model gave
    each candidate there, before `allowed` is applied.
    """

    candidates: tuple[str, ...]
    allowed: tuple[str, ...] | None = None
    record: bool = True


class ValueRules(Protocol):
    """Decides the rule for a JSON position, given the values already emitted.

    Returning None leaves the position to the model (and the grammar).
    Rules may depend on earlier values: that is how a verdict is kept
    consistent with the scores that came before it.
    """

    def rule_for(self, path: JsonPath, done: Mapping[JsonPath, Any]) -> ValueRule | None: ...

    def constrains(self, path: JsonPath) -> bool:
        """True when `path` or a position inside it has a rule."""
        ...


@dataclass(frozen=True)
class OutputSpec:
    """What the caller wants back: a JSON schema and optional value rules."""

    json_schema: dict[str, Any] | None = None
    value_rules: ValueRules | None = None


@dataclass(frozen=True)
class ValueDistribution:
    """The model's probabilities over the candidates at one JSON position."""

    path: JsonPath
    probs: dict[str, float]
    # entropy (nats) of the full next-token distribution where the value starts;
    # None where the backend cannot read it
    entropy: float | None = None


@dataclass(frozen=True)
class Generation:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    distributions: tuple[ValueDistribution, ...] = ()
    finish_reason: str | None = None
    error: str | None = None  # score(): this request failed (the others did not)
    mean_logprob: float | None = None  # of the tokens written, where the backend reads them


@dataclass(frozen=True)
class ScoreRequest:
    """One reply to score: messages and an output spec without free text."""

    messages: tuple[Message, ...]
    output: OutputSpec
    params: SamplingParams = SamplingParams()


@dataclass(frozen=True)
class Capabilities:
    grammar: bool = False
    score_distributions: bool = False
    gpu_offload: bool = False
    batching: bool = False  # score() runs several requests at once
    tokenizer: bool = False  # count_tokens() is exact, so inputs are fitted to the context
    states: bool = False  # state_features(): pooled hidden states of a text (StateSource)
    likelihoods: bool = False  # read_answers(): an answer's likelihoods (StateSource)
    reply_criteria: bool = False  # read_answers(criteria=...): criterion scores on from them


@dataclass(frozen=True)
class BackendOptions:
    """Load-time options. Backends ignore those that do not apply to them."""

    n_ctx: int = RUN_DEFAULTS.n_ctx
    n_threads: int | None = None
    n_gpu_layers: int = 0
    load_in_8bit: bool = False
    # llama.cpp: read the weights into memory rather than map the file. On the CPU it
    # repacks most Q4_K weights into a buffer of its own; mapped, the file's pages of those
    # weights stay resident beside the copy (about 590 MB more at the 1.5B's peak, unused).
    use_mmap: bool = False
    # llama.cpp: a GGUF LoRA adapter applied to the model at load (a trained judge's adapter)
    lora_path: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    remote_model: str | None = None
    parallel: int = 1  # score mode: replies decoded side by side (llama.cpp sequences)
    prefix_cache: bool = True  # score mode: keep the shared instructions evaluated across calls
    # Server backends (openai): seconds one request may take, and retries of a request that
    # failed in a way worth retrying (no connection, a timeout, HTTP 408/429/5xx), waiting
    # retry_backoff_s * 2**n before retry n, never more than retry_max_wait_s.
    timeout_s: float = 120.0
    max_retries: int = 3
    retry_backoff_s: float = 1.0
    retry_max_wait_s: float = 30.0
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    name: str
    capabilities: Capabilities

    def generate(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        output: OutputSpec | None = None,
    ) -> Generation: ...

    def score(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        """Score mode: each request's reply with no free text, in request order.

        A request that fails gets a Generation with `error` set; the others go on.
        """
        ...

    def count_tokens(self, messages: Sequence[Message]) -> int | None:
        """Prompt tokens of these messages, or None when the backend cannot tell."""
        ...

    def score_reply_tokens(self, output: OutputSpec) -> int | None:
        """Context a score-mode reply of this shape may take at most, or None when the
        backend cannot tell (the caller then keeps its own estimate free)."""
        ...

    def close(self) -> None: ...


class StateSource(Protocol):
    """A backend with the `states` capability."""

    def state_features(self, text: str) -> Any:
        """The model's pooled hidden states of `text` (models.readings.pooled), a numpy vector."""
        ...

    def read_answers(
        self,
        request: str,
        answers: Sequence[str],
        unconditioned: bool = True,
        criteria: Any = None,
        adapter: str | None = None,
    ) -> Any:
        """Each answer read as the model's own reply, after the request and (`unconditioned`)
        after none (models.readings.AnswerReading, with the states of the request-read);
        with `criteria` (models.readings.ReplyCriteria, the `reply_criteria` capability)
        each one's level probabilities read on from the request-read; `adapter`: with that
        GGUF LoRA adapter on the same weights."""
        ...


def score_by_generation(backend: Backend, requests: Sequence[ScoreRequest]) -> list[Generation]:
    """score() for backends that can only generate: one generation per request."""
    from models.foundation.errors import BackendError

    results = []
    for request in requests:
        try:
            results.append(backend.generate(request.messages, request.params, request.output))
        except BackendError as exc:
            results.append(Generation(text="", error=str(exc)))
    return results
