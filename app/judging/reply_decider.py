"""The decider that reads a judgment from the model's reply: a JSON reply scored or
generated (in one order or both), or a native judge's free-text format."""

from __future__ import annotations

from dataclasses import dataclass

from app.catalog.criteria_resolution import ResolvedCriteria
from app.deciding.judgment_builder import Attempt, build_judgment, combine_swapped
from app.deciding.native_judgment import NativeAttempt, native_judgment
from app.formats.native_formats import parse_native
from app.formats.output_format import ReplyLayout, output_spec
from app.formats.parsing import ParseFailure, parse_output
from app.formats.prompts import PromptTemplate
from app.judging.config import JudgeConfig
from app.judging.plans import Call, Plan
from app.judging.prompt_fitting import PromptAsk, PromptFit, fitted_messages
from app.records import BACKEND_FAILED, JudgeItem, Judgment, Protocol
from models.backends.base import Backend, Generation, OutputSpec
from models.verdict_settings import PairCombine


@dataclass(frozen=True)
class ReplySettings:
    """What deciding from the model's reply reads of a run."""

    prompt_template: PromptTemplate
    layout: ReplyLayout  # what the reply holds: decision first, criterion scores, feedback
    fit: PromptFit
    swap: bool  # pairwise: both orders
    combine: PairCombine  # how the two orders' replies make one verdict
    tie_within: float  # |expected A - B| up to this is a tie
    max_tokens: int  # named when a reply stops before it is complete

    @classmethod
    def of(cls, config: JudgeConfig, template: PromptTemplate) -> ReplySettings:
        layout = ReplyLayout(
            decision_first=template.decision_first,
            criteria=config.judge.criterion_scores,
            feedback=config.mode == "generate",
        )
        return cls(
            prompt_template=template,
            layout=layout,
            fit=PromptFit.of(config),
            swap=config.swap,
            combine=config.judge.pair_combine,
            tie_within=config.judge.tie_margin,
            max_tokens=config.sampling.max_tokens,
        )


@dataclass(frozen=True)
class ReplyDecider:
    """Plans the calls of an item the model's reply decides, and reads their replies."""

    backend: Backend
    settings: ReplySettings

    def plan(
        self,
        item: JudgeItem,
        protocol: Protocol,
        resolved: ResolvedCriteria,
        base: Judgment,
    ) -> Plan:
        """A plan of one call per answer order the protocol reads."""
        calls, truncated = self.calls(item, protocol, resolved, None)
        base = base.model_copy(update={"truncated": truncated})
        return Plan(item, protocol, resolved, base, calls)

    def calls(
        self,
        item: JudgeItem,
        protocol: Protocol,
        resolved: ResolvedCriteria,
        decision: str | tuple[int, ...] | None,
    ) -> tuple[list[Call], bool]:
        """One call per answer order the protocol reads; True when a text was cut. A
        `decision` is fixed in a decision-first reply (a critique explaining a decision
        already made)."""
        settings = self.settings
        if protocol in (Protocol.SINGLE, Protocol.ANCHORED):
            orders = [(index,) for index in range(len(item.answers))]
        elif protocol is Protocol.PAIRWISE and settings.swap:
            orders = [(0, 1), (1, 0)]
        else:
            orders = [tuple(range(len(item.answers)))]
        layout, template = settings.layout, settings.prompt_template
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
            ask = PromptAsk(protocol, template, output)
            messages, cut = fitted_messages(self.backend, item, settings.fit, resolved, ask, order)
            truncated = truncated or cut
            calls.append(Call(order, messages, output, layout))
        return calls, truncated

    def decide(self, plan: Plan) -> Judgment:
        """The judgment its plan's replies give."""
        failed = next((g.error for g in plan.generations if g.error), None)
        if failed is not None:
            return plan.base.model_copy(update={"error": f"{BACKEND_FAILED}{failed}"})
        settings = self.settings
        if settings.prompt_template.native:
            native = [
                NativeAttempt(call.order, generation, *self.parse(plan, call, generation))
                for call, generation in zip(plan.calls, plan.generations)
            ]
            reply_format = settings.prompt_template.reply_format
            return native_judgment(plan.base, native, reply_format, plan.resolved.rule)
        attempts = []
        for call, generation in zip(plan.calls, plan.generations):
            parsed, failure = self.parse(plan, call, generation)
            attempts.append(
                Attempt(call.order, generation, parsed, failure, call.layout, plan.protocol)
            )
        rule = plan.resolved.rule
        if plan.protocol is Protocol.PAIRWISE and settings.swap:
            return combine_swapped(
                plan.base,
                attempts[0],
                attempts[1],
                rule,
                settings.combine,
                settings.tie_within,
            )
        return build_judgment(plan.base, attempts, rule)

    def parse(self, plan: Plan, call: Call, generation: Generation):
        protocol = plan.protocol
        try:
            template = self.settings.prompt_template
            if template.native:
                reply = parse_native(
                    template.reply_format, generation.text, protocol, len(call.order)
                )
                return reply, None
            rule = plan.resolved.rule
            parsed = parse_output(generation.text, protocol, rule, len(call.order), call.layout)
            return parsed, None
        except ParseFailure as exc:
            failure = str(exc)
            if generation.finish_reason == "length":
                failure = (
                    f"the output stopped at max_tokens={self.settings.max_tokens} before "
                    f"the judgment was complete; raise max_tokens ({exc})"
                )
            return None, failure
