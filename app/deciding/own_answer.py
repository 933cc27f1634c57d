"""The judge's own answer to a request: written before it judges answers without a reference.

A small judge knows more than it can tell from two answers read side by side: asked "What is 7
times 8?" it writes 56, yet its verdict may prefer a fluent "7 times 8 is 54". Given its own
answer as the reference, the page judged such pairs right (issue 64). So, for a request
without a reference, the judge first answers it: greedy, capped at `OWN_ANSWER_TOKENS`, in
the same chat turn its reads put the answers in (models/backends/chat_text.py's reply
prompt), so the request it answers is the one it reads. Its mean log-probability says how
sure it was. The answer is then read like a reference, under signals of its own
(`self_reference_*` in app/deciding/signals.py), whose weights a decision record fits apart
from a user's reference: the judge's own answer can be wrong. Where code may run, a
program the judge writes computes the answer first where it can (computed_answer.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from models.backends.base import Message, SamplingParams
from models.readings import SYSTEM_PROMPT

OWN_ANSWER_TOKENS = 96  # the cap on the answer written (its cost: bench/heads.md)
# asked after the request: unasked, the 1.5B explains step by step and the cap cuts it before
# its result ("To find 10% of 40, ... 1. Convert the percentage"); asked, it states the result
# ("10% of 40 is 4.", "7 times 8 equals 56."), and writes code where code is asked for
BRIEF = "\n\nAnswer in one or two sentences, the result first."


@dataclass(frozen=True)
class OwnAnswer:
    """What the judge wrote, how sure it was (the mean log-probability of its tokens) and
    whether it stopped by itself or at the cap."""

    text: str
    mean_logprob: float | None
    tokens: int
    finished: bool
    computed: bool = False  # the result of a program it wrote, run in the jail

    @property
    def sureness(self) -> float:
        """exp(its mean token log-probability) where it stopped by itself within its cap, 0
        where the cap cut it or nothing was read of it."""
        if not self.finished or self.mean_logprob is None or not self.text:
            return 0.0
        return math.exp(self.mean_logprob)


def own_answer_messages(question: str) -> list[Message]:
    """The turn the judge answers in: its reads' system prompt and the request, asked to be
    brief (BRIEF)."""
    return [Message("system", SYSTEM_PROMPT), Message("user", question + BRIEF)]


# answers written in this process, by (judge, request, cap): a batch that compares many
# answers to one request writes it once, and a fit's reads find the answers it kept (`keep`)
_KEPT: dict[tuple[str, str, int, bool], OwnAnswer] = {}
KEPT_MAX = 512


def keep(judge: str, question: str, cap: int, answer: OwnAnswer, compute: bool = False) -> None:
    """Remember `answer` as `judge`'s own to `question` (the oldest forgotten past KEPT_MAX)."""
    if len(_KEPT) >= KEPT_MAX:
        del _KEPT[next(iter(_KEPT))]
    _KEPT[(judge, question, cap, compute)] = answer


def write_own_answer(
    backend: Any,
    question: str,
    cap: int = OWN_ANSWER_TOKENS,
    judge: str = "",
    compute: bool = False,
    written: bool = True,
) -> OwnAnswer:
    """The judge's greedy answer to `question` (at most `cap` tokens), written once per
    process for each `judge` (its name) and request; with `compute`, the result of a program
    it writes for it where one gives a result (app/deciding/computed_answer.py); without
    `written`, no written answer where none is computed (an empty one: a record that weighs
    only computed answers needs none, and writing one is most of its cost)."""
    kept = _KEPT.get((judge, question, cap, compute))
    if kept is not None and (kept.text or kept.computed or not written):
        return kept
    if compute:
        from app.deciding.computed_answer import computed_answer

        if (found := computed_answer(backend, question)) is not None:
            result, program = found
            tokens = program.completion_tokens or 0
            answer = OwnAnswer(result, program.mean_logprob, tokens, True, computed=True)
            keep(judge, question, cap, answer, compute)
            return answer
    if not written:
        answer = OwnAnswer("", None, 0, True)
        keep(judge, question, cap, answer, compute)
        return answer
    params = SamplingParams(temperature=0.0, max_tokens=cap)
    generation = backend.generate(own_answer_messages(question), params)
    answer = OwnAnswer(
        generation.text.strip(),
        generation.mean_logprob,
        generation.completion_tokens or 0,
        generation.finish_reason == "stop",
    )
    keep(judge, question, cap, answer, compute)
    return answer
