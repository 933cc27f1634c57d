"""A prompt fitted to the model's context: its texts cut from the middle until the prompt
and the room its reply needs fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.catalog.criteria_resolution import ResolvedCriteria
from app.formats.prompts import AnswerSlot, PromptInput, PromptTemplate
from app.judging.config import JudgeConfig
from app.records import JudgeItem, Protocol
from models.backends.base import Backend, Message, OutputSpec

FIT_ROUNDS = 3
PAIR_LABELS = ("A", "B")


@dataclass(frozen=True)
class PromptFit:
    """What fitting a prompt reads of a run: whether the reference goes in, the judge's cap
    on input characters, the model's context, and the reply's room when generating."""

    use_reference: bool
    input_chars_cap: int | None
    context_tokens: int
    generate_tokens: int | None  # generate mode: max_tokens kept free; None: score mode

    @classmethod
    def of(cls, config: JudgeConfig) -> PromptFit:
        generating = config.mode == "generate"
        return cls(
            use_reference=config.use_reference,
            input_chars_cap=config.judge.max_input_chars,
            context_tokens=config.parts.context_tokens,
            generate_tokens=config.sampling.max_tokens if generating else None,
        )


def prompt_input(
    protocol: Protocol,
    question: str,
    answers: Sequence[str],
    reference: str | None,
    resolved: ResolvedCriteria,
    max_input_chars: int | None,
) -> PromptInput:
    """What the template renders for answers in this order, texts cut to fit.

    Training renders its examples through this too (training/datasets/examples.py), so a
    trained judge sees exactly the prompts it meets at inference.
    """
    texts = fit_texts([question, reference or "", *answers], max_input_chars)
    labels = PAIR_LABELS if protocol is Protocol.PAIRWISE else _numbers(len(answers))
    return PromptInput(
        protocol=protocol,
        question=texts[0],
        answers=tuple(AnswerSlot(label, text) for label, text in zip(labels, texts[2:])),
        rule=resolved.rule,
        reference=texts[1] or None,
        scenario=resolved.scenario,
    )


def _numbers(count: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(1, count + 1))


@dataclass(frozen=True)
class PromptAsk:
    """What one call asks: its protocol, the prompt template that writes it and its reply's
    form."""

    protocol: Protocol
    writer: PromptTemplate
    output: OutputSpec


def fitted_messages(
    backend: Backend,
    item: JudgeItem,
    fit: PromptFit,
    resolved: ResolvedCriteria,
    ask: PromptAsk,
    order: tuple[int, ...],
) -> tuple[list[Message], bool]:
    """The prompt for answers in `order`, its texts cut (from the middle) to fit the
    context with room for the reply; True when something was cut."""
    protocol, template, output = ask.protocol, ask.writer, ask.output
    reference = item.reference if fit.use_reference else None
    answers = [item.answers[i] for i in order]
    chars = sum(len(t) for t in (item.question, reference or "", *answers))
    reply = reply_tokens(fit, output, backend)
    budget = fit.input_chars_cap
    if not backend.capabilities.tokenizer:
        budget = min(budget or chars, input_budget_chars(fit.context_tokens, reply))
    prompt = prompt_input(protocol, item.question, answers, reference, resolved, budget)
    messages = template.render(prompt)
    if backend.capabilities.tokenizer:
        room = fit.context_tokens - reply
        empty = template.render(prompt_input(protocol, "", [""] * len(answers), "", resolved, 0))
        overhead = backend.count_tokens(empty) or 0
        for _ in range(FIT_ROUNDS):
            tokens = backend.count_tokens(messages) or 0
            if tokens <= room:
                break
            current = min(budget or chars, chars)
            budget = scaled_budget(current, tokens - overhead, room - overhead)
            prompt = prompt_input(protocol, item.question, answers, reference, resolved, budget)
            messages = template.render(prompt)
    return messages, budget is not None and chars > budget


def reply_tokens(fit: PromptFit, output: OutputSpec, backend: Backend) -> int:
    """Tokens to keep free for the reply: max_tokens when generating, else the backend's
    bound on a score-mode reply, or an estimate (about 8 tokens a value and 48 for the
    structure) where it has none."""
    if fit.generate_tokens is not None:
        return fit.generate_tokens
    bound = backend.score_reply_tokens(output)
    if bound is not None:
        return bound
    values = str(output.json_schema).count("'enum'")
    return 48 + 8 * values


# Long texts are cut from the middle: the start of a text states the task and its end
# usually holds the conclusion (as Auto-J does for long queries). The cut is marked, so the
# judge sees that something is missing.
CUT_MARK = "\n[... {n} characters cut ...]\n"


def cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    # The mark counts the characters really removed; sized for the widest count it can show.
    keep = max(limit - len(CUT_MARK.format(n=len(text))), 2)
    mark = CUT_MARK.format(n=len(text) - keep)
    head = keep // 2
    return text[:head] + mark + text[len(text) - (keep - head) :]


def fit_texts(texts: Sequence[str], budget: int | None) -> list[str]:
    """Shorten the longest texts until the total length fits `budget` characters."""
    if budget is None or sum(len(t) for t in texts) <= budget:
        return list(texts)
    limits = [len(t) for t in texts]
    while sum(limits) > budget:
        longest = max(range(len(limits)), key=limits.__getitem__)
        others = sum(limits) - limits[longest]
        second = max((v for i, v in enumerate(limits) if i != longest), default=0)
        limits[longest] = max(budget - others, second, budget // (2 * len(limits)))
        if sum(limits) > budget and limits[longest] == second:
            share = budget // len(limits)
            limits = [min(v, share) for v in limits]
            break
    return [cut_middle(t, limit) for t, limit in zip(texts, limits)]


PROMPT_OVERHEAD_TOKENS = 1300  # instructions and 10 criteria; the rest is for the item
CHARS_PER_TOKEN = 3  # conservative for English text


def input_budget_chars(n_ctx: int, reply_tokens: int) -> int:
    """How many characters of question, reference and answers fit the context, for
    backends that cannot count tokens (a conservative guess)."""
    return max(1000, (n_ctx - reply_tokens - PROMPT_OVERHEAD_TOKENS) * CHARS_PER_TOKEN)


def scaled_budget(chars: int, item_tokens: int, room_tokens: int) -> int:
    """A character budget that should bring `item_tokens` (for `chars` characters) down to
    `room_tokens`, with a little slack for tokens that cost more characters when cut."""
    if item_tokens <= 0:
        return chars
    return max(200, int(chars * room_tokens / item_tokens * 0.95))
