"""The decider that reads a verdict from a head on the model's states and likelihoods
(app/deciding/state_judging.py), with the criterion scores read apart from it or on from its
reads, and the reference's part of a pair's verdict."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from app.catalog.criteria_resolution import ResolvedCriteria
from app.code_run.answers import reference_function
from app.code_run.behaviour import CODE_OFF, CODE_ON, BehaviourReading, Unread, behaviour_reading
from app.code_run.jail import jail_status
from app.deciding import criterion_reads
from app.deciding.criterion_head import CriterionHead, reads_by_head
from app.deciding.decision import DecisionRecord, GradeRule, tie_threshold_for
from app.deciding.own_answer import OwnAnswer, write_own_answer
from app.deciding.reward import RewardReader
from app.deciding.rubric_grade import fits
from app.deciding.signals import OWN_ANSWER_SIGNALS, WRITTEN_ANSWER_SIGNALS
from app.deciding.state_head import PART_WORDS, StateHead
from app.deciding.state_judging import (
    Asks,
    LevelAsk,
    ReferenceAsk,
    head_judgment,
    with_rubric_part,
)
from app.formats.prompts import PromptTemplate, get_template
from app.judging.config import JudgeConfig
from app.judging.plans import Call, Plan
from app.judging.prompt_fitting import PromptAsk, PromptFit, fitted_messages
from app.records import BACKEND_FAILED, JudgeItem, Judgment, Protocol, Status
from models.backends.base import Backend
from models.foundation.errors import BackendError
from models.readings import ReplyCriteria
from models.run_settings import SelfReference


@dataclass(frozen=True)
class HeadSettings:
    """What deciding by a state head reads of a run."""

    head: StateHead
    use_reference: bool
    run_code: bool  # a reference function: run each answer's beside it in the jail
    with_criteria: bool  # criterion scores beside the head's verdict
    # criteria_read "head": the criterion head gives them from the verdict's reads, where it
    # can; else a call per answer and criterion
    level_head: CriterionHead | None
    decision: DecisionRecord  # the head's whole pairwise rule (app/deciding/decision.py)
    criterion_template: PromptTemplate  # the criterion reads' prompt (criterion_reads.py)
    fit: PromptFit  # the criterion reads' prompts, always scored
    # a single answer's rubric grade with a reference, combined from its reads
    rubric_combination: GradeRule | None = None
    # what moves (a weighed signal) or holds (a cap) the criterion head's levels with a
    # reference in use: the record's criterion_shift; empty: a reference moves none
    moved_by: frozenset[str] = frozenset()
    self_reference: SelfReference = "off"  # the judge's own answer where no reference is in use
    reward: RewardReader | None = None  # a trained reward model read on the judge's weights

    @classmethod
    def of(cls, config: JudgeConfig, head: StateHead) -> HeadSettings:
        return cls(
            head=head,
            use_reference=config.use_reference,
            run_code=config.run_code,
            with_criteria=config.judge.criterion_scores,
            level_head=(
                config.parts.criterion_levels if config.judge.criteria_read == "head" else None
            ),
            decision=run_decision(
                config.parts.decision, config.judge.uncertain_below, config.judge.tie_margin
            ),
            criterion_template=get_template(criterion_reads.TEMPLATE),
            fit=replace(PromptFit.of(config), generate_tokens=None),
            rubric_combination=config.parts.rubric_combination,
            moved_by=moved_by(config.parts.decision),
            self_reference=config.self_reference,
            reward=config.parts.reward,
        )


def moved_by(record: DecisionRecord | None) -> frozenset[str]:
    """The signals and rules that move or hold a criterion head's levels by `record`'s
    criterion_shift (none without one)."""
    shift = record.criterion_shift if record is not None else None
    if shift is None:
        return frozenset()
    return frozenset(shift.caps) | {signal.name for signal in shift.signals if signal.weight}


def run_decision(
    record: DecisionRecord | None, doubt_below: float, tie_band: float
) -> DecisionRecord:
    """The head's decision record (its judge's decision.yaml) with this run's doubt threshold
    and, where the run asks for a tie band, the tie threshold that makes pairs within it
    ties."""
    if record is None:
        raise ValueError("a state head decides by a decision record: the run's parts have none")
    update: dict[str, Any] = {"doubt_below": doubt_below}
    if tie_band:
        update["tie_threshold"] = tie_threshold_for(tie_band)
    return record.model_copy(update=update)


@dataclass(frozen=True)
class HeadDecider:
    """Plans and decides the items a state head decides, through `backend`."""

    backend: Backend
    model_name: str
    settings: HeadSettings

    def decides(self, protocol: Protocol) -> bool:
        """True when the head makes this protocol's judgment (grades only where its record
        has a grade rule)."""
        if protocol is Protocol.SINGLE:
            return self.settings.decision.grade is not None
        return protocol in (Protocol.PAIRWISE, Protocol.MULTI)

    def plan(
        self, item: JudgeItem, protocol: Protocol, resolved: ResolvedCriteria, base: Judgment
    ) -> Plan:
        """A plan the state head decides. With criteria asked for, the criterion head gives
        them, or it holds one call per answer and criterion (app/deciding/criterion_reads.py),
        read apart from the head's verdict; a reference is read on from the head's reads
        (`turn`). What running the answers' functions beside a reference function finds (no
        model call) is in it too."""
        settings = self.settings
        head = settings.head
        truncated = cut_by_head(item, head)
        reference = item.reference if settings.use_reference else None
        # the reference's likelihood (and check) is read where the record weighs it
        wanted = (
            reference if settings.decision.uses("reference_likelihood", "reference_check") else None
        )
        # nothing more is read for a judgment that will be an error (a backend the head
        # cannot read through): it would be thrown away
        readable = self.reads_for(head)
        found = self.behaviour(item) if readable else None
        asked = self.reference_ask(item, resolved, found)
        levels, calls = None, []
        if not (settings.with_criteria and resolved.rule.specs and readable):
            base = base.model_copy(update={"truncated": truncated, "criteria": ()})
        else:
            base = base.model_copy(update={"truncated": truncated})
            levels = self.level_ask(item, resolved)
            if levels is not None:  # no reads: the criterion head's levels (a reference read on)
                if asked and "reference_likelihood" in settings.moved_by:
                    wanted = reference
            else:
                calls, cut = self.criterion_calls(item, protocol, resolved)
                base = base.model_copy(update={"truncated": truncated or cut})
        return Plan(
            item,
            protocol,
            resolved,
            base,
            calls,
            by_head=True,
            levels=levels,
            reference=asked,
            turn=self.turn(wanted),
        )

    def turn(self, reference: str | None) -> ReplyCriteria | None:
        """What is read on from the head's reads of each answer, where the head reads replies
        and the backend reads on: the reference (its likelihood after each answer, and the
        judge's check of the answer against it where the record weighs that)."""
        if not (reference and self.reads_on()):
            return None
        return criterion_reads.reference_turn(
            reference, self.settings.decision.uses("reference_check")
        )

    def criterion_calls(
        self, item: JudgeItem, protocol: Protocol, resolved: ResolvedCriteria
    ) -> tuple[list[Call], bool]:
        """One call per answer and criterion (app/deciding/criterion_reads.py), read apart
        from the head's verdict; True when a prompt was cut to fit."""
        template, fit = self.settings.criterion_template, self.settings.fit
        one = Protocol.ANCHORED if protocol is Protocol.ANCHORED else Protocol.SINGLE
        calls: list[Call] = []
        truncated = False
        for answer in range(len(item.answers)):
            for rule in criterion_reads.criterion_rules(resolved.rule):
                alone = replace(resolved, rule=rule)
                output = criterion_reads.criterion_output(rule)
                ask = PromptAsk(one, template, output)
                messages, cut = fitted_messages(self.backend, item, fit, alone, ask, (answer,))
                truncated = truncated or cut
                call = Call((answer,), messages, output, criterion_reads.LAYOUT, rule.keys[0])
                calls.append(call)
        return calls, truncated

    def level_ask(self, item: JudgeItem, resolved: ResolvedCriteria) -> LevelAsk | None:
        """What the criterion head gives (criteria_read: head), where it can: a head that
        reads replies, criteria on the scale it was fitted on, without level texts. With a
        reference in use, only where the record moves its levels with one and the item has
        answers to compare (a single answer's criteria are read apart with it)."""
        settings = self.settings
        level_head = settings.level_head
        if level_head is None or not settings.with_criteria or settings.head.reads != "reply":
            return None
        referenced = item.reference and settings.use_reference
        if referenced and not (settings.moved_by and len(item.answers) > 1):
            return None
        return LevelAsk(level_head, resolved.rule) if reads_by_head(resolved.rule.specs) else None

    def reference_ask(
        self, item: JudgeItem, resolved: ResolvedCriteria, found: BehaviourReading | Unread | None
    ) -> ReferenceAsk | None:
        """The reference's part of the judgment, where the item has a reference in use: what
        running the answers' functions found and the rubric grade's rule where the judge has
        one fitted on such a rubric."""
        if not (item.reference and self.settings.use_reference):
            return None
        grade = self.settings.rubric_combination
        if grade is not None and not fits(grade, resolved.rule.specs):
            grade = None
        return ReferenceAsk(found, grade)

    def reads_on(self) -> bool:
        """Whether the backend reads on from the head's reads of each answer (a head that
        reads each answer as the model's reply)."""
        return self.settings.head.reads == "reply" and self.backend.capabilities.reply_criteria

    def reads_for(self, head: StateHead) -> bool:
        """Whether this backend reads what `head` decides from (likelihoods or states)."""
        capable = self.backend.capabilities
        return capable.likelihoods if head.reads == "reply" else capable.states

    def decide(self, plan: Plan) -> Judgment:
        """The state head's judgment, from the model's states of each answer, with the
        criterion scores its plan's calls read."""
        judgment = self.verdict(plan)
        if plan.calls and judgment.status is not Status.ERROR:
            judgment = self.with_criteria(plan, judgment)
        return judgment

    def behaviour(self, item: JudgeItem) -> BehaviourReading | Unread | None:
        """Each answer's function run beside a reference function on the same inputs, in
        the jail, where the head weighs it (app/code_run/behaviour.py); Unread where the
        reference is a function but no reading came (code running off, no jail, ...)."""
        settings = self.settings
        moved = settings.level_head is not None and "reference_behaviour" in settings.moved_by
        weighed = settings.decision.uses("reference_behaviour") or moved
        if not (settings.use_reference and item.reference and weighed):
            return None
        if len(item.answers) < 2:
            return None
        if not settings.run_code:
            if reference_function(item.reference, item.question) is None:
                return None
            return Unread(CODE_OFF, CODE_ON, "not_run")
        return behaviour_reading(item.answers, item.reference, item.question)

    def verdict(self, plan: Plan) -> Judgment:
        """The state head's decision before its plan's calls are read: from its own reads
        (the criterion scores given by the criterion head), with the
        reference's part and what running the answers' code found."""
        head = self.settings.head
        if not self.reads_for(head):
            what = "likelihoods" if head.reads == "reply" else "hidden states"
            error = (
                f"'{self.model_name}' decides from the model's {what}, which the "
                f"'{self.backend.name}' backend cannot read: use the llama-cpp backend"
            )
            return plan.base.model_copy(update={"error": error})
        started = time.perf_counter()
        try:
            asks = self.asks(plan)
            judgment = head_judgment(
                plan.base, plan.item, head, self.backend, self.settings.decision, asks
            )
        except (BackendError, ValueError) as exc:
            return plan.base.model_copy(update={"error": f"{BACKEND_FAILED}{exc}"})
        return judgment.model_copy(update={"latency_s": round(time.perf_counter() - started, 3)})

    def asks(self, plan: Plan) -> Asks:
        """What the head's reads also give: its plan's, and where the run asks for it, the
        judge's own answer written now and read on from them in a reference's place."""
        settings = self.settings
        reward = settings.reward if settings.decision.uses("reward") else None
        own = self.own_answer(plan)
        if own is None:
            return Asks(plan.turn, plan.levels, plan.reference, reward=reward)
        check = settings.self_reference == "on" or settings.decision.uses("self_reference_check")
        turn = criterion_reads.reference_turn(own.text, check) if own.text else None
        return Asks(turn, plan.levels, plan.reference, own if turn else None, reward)

    def own_answer(self, plan: Plan) -> OwnAnswer | None:
        """The judge's own answer to a pair's request where no reference is in use and the
        run asks for one (`self_reference` on, or auto where the record weighs its signals),
        on a backend that reads on from the head's reads."""
        settings, item = self.settings, plan.item
        wanted = settings.self_reference == "on" or (
            settings.self_reference == "auto" and settings.decision.uses(*OWN_ANSWER_SIGNALS)
        )
        referenced = bool(item.reference) and settings.use_reference
        if not wanted or referenced or plan.protocol != Protocol.PAIRWISE:
            return None
        if not self.reads_on():
            return None
        question = item.question[: settings.head.question_chars]
        compute = settings.run_code and jail_status().works  # its program runs in the jail
        # a written answer where no program computes one: where it is shown (on) or weighed
        written = settings.self_reference == "on" or settings.decision.uses(*WRITTEN_ANSWER_SIGNALS)
        return write_own_answer(
            self.backend, question, judge=self.model_name, compute=compute, written=written
        )

    def with_criteria(self, plan: Plan, judgment: Judgment) -> Judgment:
        """The head's judgment with the criterion scores its plan's calls read (and a single
        answer's rubric grade combined with them)."""
        reads = [
            criterion_reads.CriterionRead(call.order[0], call.criterion or "", generation)
            for call, generation in zip(plan.calls, plan.generations)
        ]
        read_s = sum(g.latency_s or 0.0 for g in plan.generations)  # their share of the batch
        judgment = judgment.model_copy(
            update={"latency_s": round((judgment.latency_s or 0.0) + read_s, 3)}
        )
        judgment = criterion_reads.with_criteria(judgment, reads, plan.resolved.rule)
        if plan.reference is None:
            return judgment
        return with_rubric_part(judgment, plan.item, plan.reference)


def cut_by_head(item: JudgeItem, head: StateHead) -> bool:
    """True when the head reads less than the whole request or an answer."""
    return len(item.question) > head.question_chars or any(
        len(a) > head.answer_chars for a in item.answers
    )


def code_run_note(run_code: bool) -> str:
    """What becomes of the answers' functions beside a reference function, in words."""
    if not run_code:
        return "nothing of the answers' code runs (code running is off): its text is read"
    jail = jail_status()
    if not jail.works:
        return (
            f"nothing of the answers' code runs, because {jail.sentence()}; its text is read "
            "instead"
        )
    return (
        "each answer's function run beside it on the same inputs, in a jail (bubblewrap: no "
        "network, none of this machine's files, capped memory and time)"
    )


def reference_note(config: JudgeConfig) -> str | None:
    """What a judge whose state head decides does with a reference answer (its head reads
    none), for a front end to say once; None for a judge that reads it in its prompt."""
    if config.parts.head is None or not config.use_reference:
        return None
    pairs = config.protocol in (Protocol.PAIRWISE, None)  # None: pairs when a row has two
    head = config.parts.head
    # what the decision record weighs of the reference, in its order
    record = config.parts.decision
    if record is None:
        return None
    weighed = [s for s in record.signals if s.weight] + list(record.rules)
    words = PART_WORDS | record.shares
    # a head that reads text reads nothing of the reference after an answer
    readable = {"text", "code_run"} | ({"reference_read"} if head.reads == "reply" else set())
    reads = [
        words[part.name]
        + (f" ({code_run_note(config.run_code)})" if part.name == "reference_behaviour" else "")
        for part in weighed
        if pairs and part.reference and set(part.reads) <= readable
    ]
    levels = config.parts.criterion_levels if config.judge.criteria_read == "head" else None
    by_head = levels is not None and bool(moved_by(record))
    moved = ""
    if config.judge.criterion_scores and by_head and pairs:
        moved = (
            "; the criterion head moves each answer's criterion scores by the same reading of "
            "the reference (all but style and format)"
        )
    if reads:
        return (
            f"reads a reference answer beside the head (which reads none): a pair's verdict "
            f"adds {'; '.join(reads)}, and says so where the reference turned it{moved}"
        )
    if config.judge.criterion_scores:
        return (
            "decides from the request and the answers alone: a reference answer reaches only "
            "the criterion scores, not the verdict or the grade"
        )
    return "reads no reference answer (its head decides; criterion scores are off)"


def own_answer_note(config: JudgeConfig) -> str | None:
    """What a head judge does for a pair without a reference in use, where it answers the
    request itself first (`self_reference`), for a front end to say once; None where it does
    not."""
    record, chosen = config.parts.decision, config.self_reference
    if config.parts.head is None or record is None or chosen == "off":
        return None
    written = record.uses(*WRITTEN_ANSWER_SIGNALS)
    computed = config.run_code and record.uses(*OWN_ANSWER_SIGNALS)
    program = "a short program it writes (run in the jail)"
    if chosen == "auto" and not written:
        if not computed:
            return None
        return (
            f"computes its own answer to a pair's request with {program} where no reference is "
            "in use and one gives a result, and weighs each answer against that result as its "
            "decision record says"
        )
    if written:
        counted = "weighs it as its decision record says"
    elif computed:
        counted = "weighs it where a program computed it (a written one is shown, not counted)"
    else:
        counted = "shows it (its decision record does not weigh it: the verdict is as without it)"
    computes = f" (where {program} computes the answer, its result)" if config.run_code else ""
    return (
        f"writes its own short answer to a pair's request where no reference is in use{computes}, "
        f"reads each answer against it as against a reference and {counted}"
    )
