"""The judging service: items and a configuration in, judgments out.

The CLI, the Streamlit pages and the training evaluation all call this. It
never raises for one bad row: every input row becomes exactly one judgment,
with status ok, unparsed (raw text kept) or error (message kept).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice

from app.catalog.scenario_detection import (
    ScenarioGuess,
    chosen_scenario,
    detect_scenarios,
)
from app.catalog.scenarios import Catalog, load_catalog
from app.criteria_resolution import AUTO, ResolvedCriteria, resolve
from app.deciding import criterion_reads
from app.deciding.judgment_builder import Attempt, build_judgment, combine_swapped
from app.deciding.native_judgment import NativeAttempt, native_judgment
from app.deciding.state_head import StateHead
from app.deciding.state_judging import (
    TurnAsk,
    decides,
    head_judgment,
    with_reference_reading,
)
from app.deciding.verdicts import mark_uncertain
from app.errors import BackendError, PocketJudgeError, UnknownNameError
from app.formats.native_formats import parse_native
from app.formats.output_format import ReplyLayout, output_spec
from app.formats.parsing import ParseFailure, parse_output
from app.formats.prompts import AnswerSlot, PromptInput, PromptTemplate, get_template
from app.formats.text_fitting import fit_texts, input_budget_chars, scaled_budget
from app.io.reader import InputRow
from app.io.writer import error_judgment
from app.judge_config import JudgeConfig
from app.model_settings import with_changes
from app.records import BACKEND_FAILED, JudgeItem, Judgment, Protocol, Status
from models.backends.base import (
    Backend,
    Generation,
    Message,
    OutputSpec,
    ScoreRequest,
)

PAIR_LABELS = ("A", "B")
WINDOW_ROWS = 16  # rows read ahead and scored together (grouped by their instructions)
FIT_ROUNDS = 3
CRITIQUE_SEPARATOR = "\n\n----- critique -----\n\n"


@dataclass
class Progress:
    done: int = 0
    total: int | None = None
    ok: int = 0
    unparsed: int = 0
    errors: int = 0
    started: float = field(default_factory=time.perf_counter)

    def add(self, judgment: Judgment) -> None:
        self.done += 1
        if judgment.status is Status.OK:
            self.ok += 1
        elif judgment.status is Status.UNPARSED:
            self.unparsed += 1
        else:
            self.errors += 1

    @property
    def rate(self) -> float:
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        if self.total is None or not self.rate:
            return None
        return (self.total - self.done) / self.rate


@dataclass
class _Call:
    """One model call of a plan: the answers in one order."""

    order: tuple[int, ...]
    messages: list[Message]
    output: OutputSpec
    layout: ReplyLayout
    criterion: str | None = None  # a criterion read beside a state head: its key


@dataclass
class _Plan:
    """Everything needed to judge one item, before any model call."""

    item: JudgeItem
    config: JudgeConfig
    resolved: ResolvedCriteria
    base: Judgment
    calls: list[_Call]
    generations: list[Generation] = field(default_factory=list)
    by_head: bool = False  # decided by the state head: no model call
    turn: TurnAsk | None = None  # criterion scores read on from the head's reads

    @property
    def wants_critique(self) -> bool:
        """A critique is written after the decision: score mode when asked, and always for
        a decision the state head made (generate mode asks for the whole reply)."""
        if self.by_head:
            return self.config.feedback or self.config.mode == "generate"
        return self.config.mode == "score" and self.config.feedback


class JudgeService:
    def __init__(self, backend: Backend, model_name: str, catalog: Catalog | None = None) -> None:
        self.backend = backend
        self.model_name = model_name
        self.catalog = catalog or load_catalog()

    # -- many rows -------------------------------------------------------------
    def judge_rows(
        self,
        rows: Iterable[InputRow],
        config: JudgeConfig,
        *,
        total: int | None = None,
        on_judgment: Callable[[Judgment, Progress], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        window: int = WINDOW_ROWS,
    ) -> Iterator[Judgment]:
        """One judgment per input row, in order. Stops early only when asked to.

        Rows are read `window` at a time and scored together, so rows that share
        instructions run over one evaluated prefix; judgments still come in row order.
        """
        progress = Progress(total=total)
        iterator = iter(rows)
        while True:
            if should_stop is not None and should_stop():
                return
            chunk = list(islice(iterator, window))
            if not chunk:
                return
            for judgment in self._judged(self._entries(chunk), config):
                progress.add(judgment)
                if on_judgment is not None:
                    on_judgment(judgment, progress)
                yield judgment

    def judge_many(self, rows: Sequence[InputRow], config: JudgeConfig) -> list[Judgment]:
        """Judgments of `rows`, in order; score mode sends all their calls in one batch."""
        return list(self._judged(self._entries(rows), config))

    # -- one item --------------------------------------------------------------
    def judge(self, item: JudgeItem, config: JudgeConfig, line: int | None = None) -> Judgment:
        return next(self._judged([(item, line)], config))

    def judge_in_steps(self, item: JudgeItem, config: JudgeConfig) -> Iterator[Judgment]:
        """The judgment of `item` in two steps where a state head decides and criterion
        scores are asked for: first the head's verdict alone (at a verdict's cost, no
        criterion scores, no reference metrics), then the whole judgment, as `judge` gives
        it, from the same reads. Otherwise the whole judgment alone."""
        config = _native_generate(config)
        plan = self._plan(item, config, None)
        if isinstance(plan, Judgment) or not (plan.by_head and plan.calls):
            yield self.judge(item, config)
            return
        decided = self._head_judgment(plan)
        if decided.status is not Status.ERROR:
            yield self._finished(plan, decided.model_copy(update={"criteria": ()}), metrics=False)
            self._run([plan], replace(config, mode="score"))  # a head's criterion reads
            decided = self._with_criteria(plan, decided)
        yield self._completed(plan, self._finished(plan, decided), config)

    def score_requests(self, item: JudgeItem, config: JudgeConfig) -> list[ScoreRequest]:
        """The score-mode replies judging `item` reads (a state head's criterion reads, or a
        score-mode judge's calls), e.g. to read them elsewhere first; none for a bad row."""
        plan = self._plan(item, config, None)
        if isinstance(plan, Judgment):
            return []
        return [ScoreRequest(tuple(c.messages), c.output, config.sampling) for c in plan.calls]

    @staticmethod
    def _entries(rows: Sequence[InputRow]) -> list[tuple[JudgeItem, int | None] | InputRow]:
        return [(row.item, row.line) if row.item is not None else row for row in rows]

    def _judged(
        self, entries: Sequence[tuple[JudgeItem, int | None] | InputRow], config: JudgeConfig
    ) -> Iterator[Judgment]:
        """Each entry's judgment, in order, as soon as it is finished.

        Score mode scores every entry's calls in one batch first; then each
        judgment is finished (state head, critique) and given out before the next
        starts, so a caller that writes each one as it comes loses at most the
        row in progress when the run is killed (or the window's batch, in score mode).
        """
        config = _native_generate(config)
        plans: list[_Plan | Judgment] = []
        for entry in entries:
            if isinstance(entry, InputRow):
                plans.append(
                    error_judgment(
                        entry,
                        config.protocol,
                        model=self.model_name,
                        template=config.judge.template,
                    )
                )
            else:
                plans.append(self._plan(entry[0], config, entry[1]))
        if config.mode == "score":
            self._run([plan for plan in plans if isinstance(plan, _Plan)], config)
        for plan in plans:
            if isinstance(plan, Judgment):
                yield plan
                continue
            if config.mode != "score":
                # a head's criterion calls are always scored: they hold no critique
                self._run([plan], replace(config, mode="score") if plan.by_head else config)
            yield self._completed(plan, self._finish(plan), config)

    def _completed(self, plan: _Plan, judgment: Judgment, config: JudgeConfig) -> Judgment:
        """A finished judgment sent to the second judge when unsure (cascade), and given
        its critique where one is asked for."""
        if config.cascade is not None:
            judgment = config.cascade.decide(plan.item, judgment)
            if judgment.cascade and judgment.cascade["decided_by"] == "second":
                return judgment
        return self.explain(plan.item, judgment, config) if plan.wants_critique else judgment

    def explain(self, item: JudgeItem, judgment: Judgment, config: JudgeConfig) -> Judgment:
        """A critique of a judgment already made: the reply generated again with its
        decision fixed (decision-first templates), feedback included."""
        if judgment.status is not Status.OK:
            return judgment
        if not config.judge.writes_critiques:
            note = (
                f"'{self.model_name}' does not write critiques (its model card says so): "
                "it gives verdicts and scores only"
            )
            return judgment.model_copy(update={"feedback": None, "feedback_note": note})
        config = replace(
            config,
            protocol=judgment.protocol,
            mode="generate",
            parts=replace(config.parts, head=None),
        )
        plan = self._plan(item, config, judgment.line, decision=_decision_of(judgment))
        if isinstance(plan, Judgment):
            return judgment.model_copy(update={"feedback_note": plan.error})
        calls = plan.calls[:1] if judgment.protocol is Protocol.PAIRWISE else plan.calls
        texts, raw = [], []
        for call in calls:
            try:
                generation = self.backend.generate(call.messages, config.sampling, call.output)
                parsed = self._parse(plan, call, generation)[0]
            except BackendError as exc:
                return judgment.model_copy(update={"feedback_note": f"{BACKEND_FAILED}{exc}"})
            raw.append(generation.text)
            if parsed is not None and parsed.feedback:
                texts.append(parsed.feedback)
        note = None
        if not texts:
            note = f"'{self.model_name}' wrote no critique for this item (an empty feedback field)"
        return judgment.model_copy(
            update={
                "feedback": "\n\n".join(texts) or None,
                "feedback_note": note,
                "raw_output": (judgment.raw_output or "") + CRITIQUE_SEPARATOR + "\n".join(raw),
            }
        )

    # -- planning --------------------------------------------------------------
    def _plan(
        self,
        item: JudgeItem,
        config: JudgeConfig,
        line: int | None,
        decision: str | tuple[int, ...] | None = None,
    ) -> _Plan | Judgment:
        if config.protocol is None:
            config = replace(config, protocol=infer_protocol(item))
        base = Judgment(
            id=item.id,
            protocol=config.protocol,
            status=Status.ERROR,
            model=self.model_name,
            template=config.judge.template,
            mode=config.mode,
            line=line,
            metadata=dict(item.metadata),
        )
        guesses = self._scenario_guesses(item, config)
        if guesses:
            item = item.model_copy(update={"scenario": chosen_scenario(guesses)})
            base = base.model_copy(
                update={"scenario_guesses": {g.scenario: round(g.probability, 4) for g in guesses}}
            )
        try:
            template, resolved = _checked(item, config, self.catalog)
        except (PocketJudgeError, ValueError) as exc:
            return base.model_copy(update={"error": str(exc)})
        base = base.model_copy(update={"scenario": resolved.label, "criteria": resolved.rule.keys})
        if decides(config.parts.head, config.protocol):
            return self._head_plan(item, config, resolved, base)
        layout = ReplyLayout(
            decision_first=template.decision_first,
            criteria=config.judge.criterion_scores,
            feedback=config.mode == "generate",
        )
        calls, truncated = self._calls(item, config, resolved, template, layout, decision)
        base = base.model_copy(update={"truncated": truncated})
        return _Plan(item, config, resolved, base, calls)

    def _head_plan(
        self, item: JudgeItem, config: JudgeConfig, resolved: ResolvedCriteria, base: Judgment
    ) -> _Plan:
        """A plan the state head decides. With criteria asked for, it also holds one call per
        answer and criterion (app/deciding/criterion_reads.py), read apart from the head's
        verdict, or (`criteria_read: with_verdict`) a turn read on from the head's reads; a
        reference is read on from them either way (`turn`)."""
        truncated = _cut_by_head(item, config.parts.head)
        head = config.parts.head
        assert head is not None
        reference = item.reference if config.use_reference else None
        on_reads = head.reads == "reply" and self.backend.capabilities.reply_criteria
        # the reference's likelihood is read where a weight uses it (or criteria come with it)
        wanted = reference if head.reference_likelihood_weight else None
        # no criterion reads for a judgment that will be an error (a backend the head
        # cannot read through): they would be sent and thrown away
        if not (config.judge.criterion_scores and resolved.rule.specs and self._reads_for(head)):
            base = base.model_copy(update={"truncated": truncated, "criteria": ()})
            turn = self._reference_turn(resolved, wanted) if on_reads else None
            return _Plan(item, config, resolved, base, calls=[], by_head=True, turn=turn)
        if on_reads and config.judge.criteria_read == "with_verdict":
            turn = TurnAsk(criterion_reads.turn_criteria(resolved.rule, reference), resolved.rule)
            base = base.model_copy(update={"truncated": truncated})
            return _Plan(item, config, resolved, base, calls=[], by_head=True, turn=turn)
        calls, truncated = self._criterion_calls(item, config, resolved, truncated)
        base = base.model_copy(update={"truncated": truncated})
        turn = self._reference_turn(resolved, wanted) if on_reads else None
        return _Plan(item, config, resolved, base, calls=calls, by_head=True, turn=turn)

    @staticmethod
    def _reference_turn(resolved: ResolvedCriteria, reference: str | None) -> TurnAsk | None:
        """The reference read on from the head's reads (its likelihood after each answer)."""
        if not reference:
            return None
        return TurnAsk(
            criterion_reads.turn_criteria(resolved.rule, reference, False), resolved.rule
        )

    def _criterion_calls(
        self, item: JudgeItem, config: JudgeConfig, resolved: ResolvedCriteria, truncated: bool
    ) -> tuple[list[_Call], bool]:
        """One call per answer and criterion (app/deciding/criterion_reads.py), read apart
        from the head's verdict."""
        template = get_template(criterion_reads.TEMPLATE)
        one = Protocol.ANCHORED if config.protocol is Protocol.ANCHORED else Protocol.SINGLE
        reading = with_changes(
            replace(config, protocol=one, mode="score"), {"template": template.name}
        )
        calls: list[_Call] = []
        for answer in range(len(item.answers)):
            for rule in criterion_reads.criterion_rules(resolved.rule):
                alone = replace(resolved, rule=rule)
                output = criterion_reads.criterion_output(rule)
                messages, cut = self._fitted_messages(
                    item, reading, alone, template, (answer,), output
                )
                truncated = truncated or cut
                call = _Call((answer,), messages, output, criterion_reads.LAYOUT, rule.keys[0])
                calls.append(call)
        return calls, truncated

    def _calls(
        self,
        item: JudgeItem,
        config: JudgeConfig,
        resolved: ResolvedCriteria,
        template: PromptTemplate,
        layout: ReplyLayout,
        decision: str | tuple[int, ...] | None,
    ) -> tuple[list[_Call], bool]:
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
            messages, cut = self._fitted_messages(item, config, resolved, template, order, output)
            truncated = truncated or cut
            calls.append(_Call(order, messages, output, layout))
        return calls, truncated

    def _scenario_guesses(self, item: JudgeItem, config: JudgeConfig) -> list[ScenarioGuess]:
        """The classifier's guesses when the scenario is left to it, else none."""
        choice = config.choice
        if not config.detect_scenario or choice.rubric or item.rubric or item.scenario:
            return []
        if choice.scenario not in (None, AUTO):
            return []
        states = self.backend.capabilities.states
        reads = getattr(self.backend, "state_features", None) if states else None
        found = detect_scenarios(
            [item.question],
            list(self.catalog.scenarios),
            classifier=config.parts.classifier,
            read_states=reads,
        )
        return found[0] if found else []

    def _fitted_messages(
        self,
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
        reply = _reply_tokens(config, output, self.backend)
        budget = config.judge.max_input_chars
        if not self.backend.capabilities.tokenizer:
            budget = min(budget or chars, input_budget_chars(config.parts.context_tokens, reply))
        prompt = prompt_input(protocol, item.question, answers, reference, resolved, budget)
        messages = template.render(prompt)
        if self.backend.capabilities.tokenizer:
            room = config.parts.context_tokens - reply
            empty = template.render(
                prompt_input(protocol, "", [""] * len(answers), "", resolved, 0)
            )
            overhead = self.backend.count_tokens(empty) or 0
            for _ in range(FIT_ROUNDS):
                tokens = self.backend.count_tokens(messages) or 0
                if tokens <= room:
                    break
                current = min(budget or chars, chars)
                budget = scaled_budget(current, tokens - overhead, room - overhead)
                prompt = prompt_input(protocol, item.question, answers, reference, resolved, budget)
                messages = template.render(prompt)
        return messages, budget is not None and chars > budget

    # -- running ---------------------------------------------------------------
    def _run(self, plans: Sequence[_Plan], config: JudgeConfig) -> None:
        """Give every plan its generations: one score batch, or one generation per call."""
        if config.mode == "score":
            requests = [
                ScoreRequest(tuple(call.messages), call.output, config.sampling)
                for plan in plans
                for call in plan.calls
            ]
            try:
                results = self.backend.score(requests) if requests else []
            except BackendError as exc:
                results = [Generation(text="", error=str(exc))] * len(requests)
            position = 0
            for plan in plans:
                plan.generations = results[position : position + len(plan.calls)]
                position += len(plan.calls)
            return
        for plan in plans:
            try:
                plan.generations = [
                    self.backend.generate(call.messages, config.sampling, call.output)
                    for call in plan.calls
                ]
            except BackendError as exc:
                plan.generations = [Generation(text="", error=str(exc))] * len(plan.calls)

    def _finish(self, plan: _Plan) -> Judgment:
        return self._finished(plan, self._by_head(plan) if plan.by_head else self._build(plan))

    def _finished(self, plan: _Plan, judgment: Judgment, metrics: bool = True) -> Judgment:
        """The decided `judgment` of `plan` given its relevance join, uncertainty mark,
        calibrated confidence and (`metrics`) reference metrics."""
        if plan.config.judge.relevance_join is not None and not plan.by_head:
            from app.deciding.relevance import join_relevance

            judgment = join_relevance(judgment, plan.item, plan.config.judge.relevance_join)
        judgment = mark_uncertain(judgment, plan.config.judge.uncertain_below)
        calibration = plan.config.parts.calibrator
        if calibration is not None and (calibrated := calibration.of(judgment)) is not None:
            judgment = judgment.model_copy(update={"calibrated_confidence": calibrated})
        item = plan.item
        wanted = metrics and plan.config.reference_metrics
        if wanted and item.reference and judgment.status is not Status.ERROR:
            from app.metrics import reference_metrics

            metrics = reference_metrics(list(item.answers), item.reference)
            judgment = judgment.model_copy(update={"reference_metrics": tuple(metrics)})
        return judgment

    def _reads_for(self, head: StateHead) -> bool:
        """Whether this backend reads what `head` decides from (likelihoods or states)."""
        capable = self.backend.capabilities
        return capable.likelihoods if head.reads == "reply" else capable.states

    def _by_head(self, plan: _Plan) -> Judgment:
        """The state head's judgment, from the model's states of each answer, with the
        criterion scores its plan's calls read."""
        judgment = self._head_judgment(plan)
        if judgment.status is Status.ERROR:
            return judgment
        if plan.calls:
            return self._with_criteria(plan, judgment)
        return self._with_reference(plan, judgment)

    def _head_judgment(self, plan: _Plan) -> Judgment:
        """The state head's decision alone (no criterion scores)."""
        head = plan.config.parts.head
        assert head is not None
        if not self._reads_for(head):
            what = "likelihoods" if head.reads == "reply" else "hidden states"
            error = (
                f"'{self.model_name}' decides from the model's {what}, which the "
                f"'{self.backend.name}' backend cannot read: use the llama-cpp backend"
            )
            return plan.base.model_copy(update={"error": error})
        started = time.perf_counter()
        try:
            judgment = head_judgment(
                plan.base, plan.item, head, self.backend, plan.config.judge.tie_margin, plan.turn
            )
        except (BackendError, ValueError) as exc:
            return plan.base.model_copy(update={"error": f"{BACKEND_FAILED}{exc}"})
        return judgment.model_copy(update={"latency_s": round(time.perf_counter() - started, 3)})

    def _with_criteria(self, plan: _Plan, judgment: Judgment) -> Judgment:
        """The head's judgment with the criterion scores its plan's calls read."""
        reads = [
            criterion_reads.CriterionRead(call.order[0], call.criterion or "", generation)
            for call, generation in zip(plan.calls, plan.generations)
        ]
        read_s = sum(g.latency_s or 0.0 for g in plan.generations)  # their share of the batch
        judgment = judgment.model_copy(
            update={"latency_s": round((judgment.latency_s or 0.0) + read_s, 3)}
        )
        judgment = criterion_reads.with_criteria(judgment, reads, plan.resolved.rule)
        return self._with_reference(plan, judgment)

    def _with_reference(self, plan: _Plan, judgment: Judgment) -> Judgment:
        """A pairwise head verdict with the reference's part, read through the criterion
        scores (state_judging.with_reference_reading), where the item has a reference."""
        head = plan.config.parts.head
        if head is None or not (plan.item.reference and plan.config.use_reference):
            return judgment
        if judgment.protocol is not Protocol.PAIRWISE:
            return judgment
        return with_reference_reading(
            judgment,
            head.reference_weight,
            plan.resolved.rule.overall_range(),
            plan.config.judge.tie_margin,
            head.reference_likelihood_weight,
        )

    def _build(self, plan: _Plan) -> Judgment:
        failed = next((g.error for g in plan.generations if g.error), None)
        if failed is not None:
            return plan.base.model_copy(update={"error": f"{BACKEND_FAILED}{failed}"})
        template = get_template(plan.config.judge.template)
        if template.native:
            native = [
                NativeAttempt(call.order, generation, *self._parse(plan, call, generation))
                for call, generation in zip(plan.calls, plan.generations)
            ]
            return native_judgment(plan.base, native, template.reply_format, plan.resolved.rule)
        attempts = []
        for call, generation in zip(plan.calls, plan.generations):
            parsed, failure = self._parse(plan, call, generation)
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

    def _parse(self, plan: _Plan, call: _Call, generation: Generation):
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


def reference_note(config: JudgeConfig) -> str | None:
    """What a judge whose state head decides does with a reference answer (its head reads
    none), for a front end to say once; None for a judge that reads it in its prompt."""
    if config.parts.head is None or not config.use_reference:
        return None
    pairs = config.protocol in (Protocol.PAIRWISE, None)  # None: pairs when a row has two
    head = config.parts.head
    if head.reference_likelihood_weight and head.reads == "reply" and pairs:
        return (
            "reads a reference answer after each answer: the verdict adds how much likelier "
            "the reference is after one answer than after the other to the head's reading "
            "(which reads none)"
        )
    if config.judge.criterion_scores and head.reference_weight and pairs:
        return (
            "reads a reference answer through the criterion scores: they are read with it, "
            "and the verdict adds their lead to the head's reading (which reads none)"
        )
    if config.judge.criterion_scores:
        return (
            "decides from the request and the answers alone: a reference answer reaches only "
            "the criterion scores, not the verdict or the grade"
        )
    return "reads no reference answer (its head decides; criterion scores are off)"


def row_problem(item: JudgeItem, config: JudgeConfig, catalog: Catalog) -> str | None:
    """Why `item` would be an error row under `config` before any model call, or None.

    The same checks as judging makes (answer count for the protocol, template,
    criteria), so a batch preview can flag rows against the settings that will be used.
    """
    if config.protocol is None:
        config = replace(config, protocol=infer_protocol(item))
    try:
        _checked(item, config, catalog)
    except (PocketJudgeError, ValueError) as exc:
        return str(exc)
    return None


def _checked(
    item: JudgeItem, config: JudgeConfig, catalog: Catalog
) -> tuple[PromptTemplate, ResolvedCriteria]:
    """The template and criteria for `item`; raises when the item cannot be judged so."""
    _check_answers(item, config)
    template = get_template(config.judge.template)
    assert config.protocol is not None
    template.check_protocol(config.protocol)  # native templates have only some protocols
    return template, resolve(config.choice, item, catalog)


def _native_generate(config: JudgeConfig) -> JudgeConfig:
    """`config` as a native template judges: in generate mode, whatever mode was asked
    for, since score mode reads values from a JSON reply and a native reply is free text
    (each judgment records mode "generate"); the template's stop strings added."""
    try:
        template = get_template(config.judge.template)
    except UnknownNameError:
        return config  # every row's plan reports the unknown template
    if not template.native:
        return config
    stop = config.sampling.stop + tuple(s for s in template.stop if s not in config.sampling.stop)
    return replace(config, mode="generate", sampling=replace(config.sampling, stop=stop))


def _reply_tokens(config: JudgeConfig, output: OutputSpec, backend: Backend) -> int:
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


def _cut_by_head(item: JudgeItem, head: StateHead | None) -> bool:
    """True when the head reads less than the whole request or an answer."""
    assert head is not None
    return len(item.question) > head.question_chars or any(
        len(a) > head.answer_chars for a in item.answers
    )


def _decision_of(judgment: Judgment) -> str | tuple[int, ...] | None:
    """The decision a critique must explain (a pair's leaning even when uncertain)."""
    if judgment.protocol is Protocol.PAIRWISE:
        return judgment.leaning or (judgment.winner if judgment.winner != "uncertain" else None)
    if judgment.protocol is Protocol.MULTI:
        return judgment.ranking
    if judgment.answers and len(judgment.answers) == 1:
        return str(round(judgment.answers[0].overall))
    return None


def prompt_input(
    protocol: Protocol,
    question: str,
    answers: Sequence[str],
    reference: str | None,
    resolved: ResolvedCriteria,
    max_input_chars: int | None,
) -> PromptInput:
    """What the template renders for answers in this order, texts cut to fit.

    Training renders its examples through this too (training/data.py), so a
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


def infer_protocol(item: JudgeItem) -> Protocol:
    count = len(item.answers)
    return Protocol.SINGLE if count == 1 else Protocol.PAIRWISE if count == 2 else Protocol.MULTI


def _numbers(count: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(1, count + 1))


def _check_answers(item: JudgeItem, config: JudgeConfig) -> None:
    protocol = config.protocol
    count = len(item.answers)
    if protocol is Protocol.PAIRWISE and count != 2:
        raise ValueError(f"pairwise judging needs exactly 2 answers; this row has {count}")
    if protocol is Protocol.MULTI and count < 2:
        raise ValueError(f"multi-answer ranking needs 2 to 6 answers; this row has {count}")
    if protocol is Protocol.ANCHORED and not item.reference:
        raise ValueError("reference-anchored grading needs a 'reference' field in this row")
    if protocol is Protocol.ANCHORED and not config.use_reference:
        raise ValueError("reference-anchored grading needs the reference: turn references on")
