"""A prompt fitted to the model's context: its texts cut from the middle until the prompt
and the room its reply needs fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.catalog.criteria_resolution import ResolvedCriteria
from app.formats.prompts import AnswerSlot, PromptInput, PromptTemplate
from app.formats.text_fitting import fit_texts, input_budget_chars, scaled_budget
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
