"""The decider that reads a judgment from the model's reply: a JSON reply scored or
generated (in one order or both), or a native judge's free-text format."""

from __future__ import annotations

from app.catalog.criteria_resolution import ResolvedCriteria
from app.deciding.judgment_builder import Attempt, build_judgment, combine_swapped
from app.deciding.native_judgment import NativeAttempt, native_judgment
from app.formats.native_formats import parse_native
from app.formats.output_format import ReplyLayout, output_spec
from app.formats.parsing import ParseFailure, parse_output
from app.formats.prompts import PromptTemplate, get_template
from app.judging.config import JudgeConfig
from app.judging.plans import Call, Plan
from app.judging.prompt_fitting import fitted_messages
from app.records import BACKEND_FAILED, JudgeItem, Judgment, Protocol
from models.backends.base import Backend, Generation, OutputSpec


class ReplyDecider:
    """Plans the calls of an item the model's reply decides, and reads their replies."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def calls(
        self,
        item: JudgeItem,
        config: JudgeConfig,
        resolved: ResolvedCriteria,
        template: PromptTemplate,
        layout: ReplyLayout,
        decision: str | tuple[int, ...] | None,
    ) -> tuple[list[Call], bool]:
        """One call per answer order the protocol reads; True when a text was cut."""
        protocol = config.protocol
        assert protocol is not None
        if protocol in (Protocol.SINGLE, Protocol.ANCHORED):
            orders = [(index,) for index in range(len(item.answers))]
        elif protocol is Protocol.PAIRWISE and config.swap:
            orders = [(0, 1), (1, 0)]
        else:
            orders = [tuple(range(len(item.answers)))]
        calls, truncated = [], False
        for order in orders:
            forced = decision if layout.decision_first else None
            if isinstance(forced, str) and order == (1, 0):
                forced = {"A": "B", "B": "A"}.get(forced, forced)
            output = (
                OutputSpec()  # a native template's reply is free text: no grammar
                if template.native
                else output_spec(protocol, resolved.rule, len(order), layout, forced)
            )
            messages, cut = fitted_messages(
                self.backend, item, config, resolved, template, order, output
            )
            truncated = truncated or cut
            calls.append(Call(order, messages, output, layout))
        return calls, truncated

    def build(self, plan: Plan) -> Judgment:
        failed = next((g.error for g in plan.generations if g.error), None)
        if failed is not None:
            return plan.base.model_copy(update={"error": f"{BACKEND_FAILED}{failed}"})
        template = get_template(plan.config.judge.template)
        if template.native:
            native = [
                NativeAttempt(call.order, generation, *self.parse(plan, call, generation))
                for call, generation in zip(plan.calls, plan.generations)
            ]
            return native_judgment(plan.base, native, template.reply_format, plan.resolved.rule)
        attempts = []
        for call, generation in zip(plan.calls, plan.generations):
            parsed, failure = self.parse(plan, call, generation)
            protocol = plan.config.protocol
            assert protocol is not None
            attempts.append(Attempt(call.order, generation, parsed, failure, call.layout, protocol))
        rule = plan.resolved.rule
        config = plan.config
        if config.protocol is Protocol.PAIRWISE and config.swap:
            return combine_swapped(
                plan.base,
                attempts[0],
                attempts[1],
                rule,
                config.judge.pair_combine,
                config.judge.tie_margin,
            )
        return build_judgment(plan.base, attempts, rule)

    def parse(self, plan: Plan, call: Call, generation: Generation):
        protocol = plan.config.protocol
        assert protocol is not None
        try:
            rule = plan.resolved.rule
            template = get_template(plan.config.judge.template)
            if template.native:
                reply = parse_native(
                    template.reply_format, generation.text, protocol, len(call.order)
                )
                return reply, None
            parsed = parse_output(generation.text, protocol, rule, len(call.order), call.layout)
            return parsed, None
        except ParseFailure as exc:
            failure = str(exc)
            if generation.finish_reason == "length":
                failure = (
                    f"the output stopped at max_tokens={plan.config.sampling.max_tokens} before "
                    f"the judgment was complete; raise max_tokens ({exc})"
                )
            return None, failure
