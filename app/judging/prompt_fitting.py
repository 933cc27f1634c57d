"""A prompt fitted to the model's context: its texts cut from the middle until the prompt
and the room its reply needs fit."""

from __future__ import annotations

from app.catalog.criteria_resolution import ResolvedCriteria
from app.formats.prompts import PromptTemplate
from app.formats.text_fitting import input_budget_chars, scaled_budget
from app.judging.config import JudgeConfig
from app.judging.item_checks import prompt_input
from app.records import JudgeItem
from models.backends.base import Backend, Message, OutputSpec

FIT_ROUNDS = 3


def fitted_messages(
    backend: Backend,
    item: JudgeItem,
    config: JudgeConfig,
    resolved: ResolvedCriteria,
    template: PromptTemplate,
    order: tuple[int, ...],
    output: OutputSpec,
) -> tuple[list[Message], bool]:
    """The prompt for answers in `order`, its texts cut (from the middle) to fit the
    context with room for the reply; True when something was cut."""
    protocol = config.protocol
    assert protocol is not None
    reference = item.reference if config.use_reference else None
    answers = [item.answers[i] for i in order]
    chars = sum(len(t) for t in (item.question, reference or "", *answers))
    reply = reply_tokens(config, output, backend)
    budget = config.judge.max_input_chars
    if not backend.capabilities.tokenizer:
        budget = min(budget or chars, input_budget_chars(config.parts.context_tokens, reply))
    prompt = prompt_input(protocol, item.question, answers, reference, resolved, budget)
    messages = template.render(prompt)
    if backend.capabilities.tokenizer:
        room = config.parts.context_tokens - reply
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


def reply_tokens(config: JudgeConfig, output: OutputSpec, backend: Backend) -> int:
    """Tokens to keep free for the reply: max_tokens when generating, else the backend's
    bound on a score-mode reply, or an estimate (about 8 tokens a value and 48 for the
    structure) where it has none."""
    if config.mode == "generate":
        return config.sampling.max_tokens
    bound = backend.score_reply_tokens(output)
    if bound is not None:
        return bound
    values = str(output.json_schema).count("'enum'")
    return 48 + 8 * values
