"""A scripted backend for service tests: it replies from a queue and records what it was sent.

    backend = FakeBackend()
    backend.queue('{"scores": ...}', BackendError("boom"), reply(text, dists={...}))
    service = JudgeService(backend, "fake-model")

A queued item is a reply text, a `Generation` (to carry distributions or token
counts), an exception instance (raised instead of replying) or a callable that
takes the messages and returns any of those. Importing this module registers it
as backend "fake" (`create_backend("fake", model, options)`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from models.backends import register_backend
from models.backends.base import (
    BackendOptions,
    Capabilities,
    Generation,
    JsonPath,
    Message,
    OutputSpec,
    SamplingParams,
    ScoreRequest,
    ValueDistribution,
    score_by_generation,
)
from models.foundation.errors import BackendError

Reply = str | Generation | BaseException | Callable[[Sequence[Message]], "Reply"]


@dataclass(frozen=True)
class Call:
    """One `generate` call as the backend received it."""

    messages: tuple[Message, ...]
    params: SamplingParams
    output: OutputSpec | None

    @property
    def system(self) -> str:
        return next(m.content for m in self.messages if m.role == "system")

    @property
    def user(self) -> str:
        return next(m.content for m in self.messages if m.role == "user")


class FakeBackend:
    """Implements models.backends.base.Backend with queued replies."""

    name = "fake"

    def __init__(
        self,
        replies: Sequence[Reply] = (),
        *,
        model: str = "fake-model",
        capabilities: Capabilities | None = None,
    ) -> None:
        self.model = model
        self.capabilities = capabilities or Capabilities(grammar=True, score_distributions=True)
        self.replies: deque[Reply] = deque(replies)
        self.calls: list[Call] = []
        self.closed = False

    def queue(self, *replies: Reply) -> FakeBackend:
        self.replies.extend(replies)
        return self

    @property
    def messages(self) -> list[tuple[Message, ...]]:
        """The messages of every call, in order."""
        return [call.messages for call in self.calls]

    @property
    def prompts(self) -> list[str]:
        """The user message (the item) of every call, in order."""
        return [call.user for call in self.calls]

    @property
    def instructions(self) -> list[str]:
        """The system message (task, criteria, reply format) of every call, in order."""
        return [m.content for call in self.calls for m in call.messages if m.role == "system"]

    def generate(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        output: OutputSpec | None = None,
    ) -> Generation:
        self.calls.append(Call(tuple(messages), params, output))
        if not self.replies:
            raise BackendError(f"FakeBackend: no reply queued for call {len(self.calls)}")
        item = self.replies.popleft()
        if callable(item):
            item = item(messages)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, Generation):
            return item
        return Generation(text=item, finish_reason="stop")

    def score(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        """Score mode by plain generation (no token probabilities here)."""
        return score_by_generation(self, requests)

    def count_tokens(self, messages: Sequence[Message]) -> int | None:
        return None

    def score_reply_tokens(self, output: OutputSpec) -> int | None:
        return None

    def close(self) -> None:
        self.closed = True


def reply(
    text: str,
    dists: Mapping[JsonPath, Mapping[int | str, float]] | None = None,
    *,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
    latency_s: float | None = None,
) -> Generation:
    """A Generation with score distributions: `{("scores", "A", "accuracy"): {7: 0.5, 8: 0.5}}`."""
    distributions = tuple(
        ValueDistribution(path=tuple(path), probs={str(k): float(p) for k, p in probs.items()})
        for path, probs in (dists or {}).items()
    )
    return Generation(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        latency_s=latency_s,
        distributions=distributions,
        finish_reason="stop",
    )


def create(model: str, options: BackendOptions) -> FakeBackend:
    return FakeBackend(model=model)


register_backend("fake", create)
