"""The judging service: items and a configuration in, judgments out.

The CLI, the Streamlit pages and the training evaluation all call this. It
never raises for one bad row: every input row becomes exactly one judgment,
with status ok, unparsed (raw text kept) or error (message kept). It keeps the row loop
(windows of rows scored together, error rows, the cascade, critiques); each item is
planned and decided by a decider (app/judging/): from the model's reply, or from a head
on its states and likelihoods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import islice

from app.batches.tally import Tally
from app.catalog.scenario_detection import chosen_scenario
from app.catalog.scenarios import Catalog, load_catalog
from app.deciding.state_judging import decides
from app.deciding.verdicts import mark_uncertain
from app.formats.output_format import ReplyLayout
from app.io.reader import InputRow
from app.io.writer import error_judgment
from app.judging.config import JudgeConfig
from app.judging.head_decider import HeadDecider
from app.judging.item_checks import (
    checked,
    decision_of,
    infer_protocol,
    native_generate,
    scenario_guesses,
)
from app.judging.plans import Plan
from app.judging.reply_decider import ReplyDecider
from app.records import BACKEND_FAILED, JudgeItem, Judgment, Protocol, Status
from models.backends.base import Backend, Generation, ScoreRequest
from models.foundation.errors import BackendError, PocketJudgeError

WINDOW_ROWS = 16  # rows read ahead and scored together (grouped by their instructions)
CRITIQUE_SEPARATOR = "\n\n----- critique -----\n\n"


class JudgeService:
    def __init__(self, backend: Backend, model_name: str, catalog: Catalog | None = None) -> None:
        self.backend = backend
        self.model_name = model_name
        self.catalog = catalog or load_catalog()
        self.heads = HeadDecider(backend, model_name)  # items a state head decides
        self.replies = ReplyDecider(backend)  # items the model's reply decides

    # -- many rows -------------------------------------------------------------
    def judge_rows(
        self,
        rows: Iterable[InputRow],
        config: JudgeConfig,
        *,
        total: int | None = None,
        on_judgment: Callable[[Judgment, Tally], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        window: int = WINDOW_ROWS,
    ) -> Iterator[Judgment]:
        """One judgment per input row, in order. Stops early only when asked to.

        Rows are read `window` at a time and scored together, so rows that share
        instructions run over one evaluated prefix; judgments still come in row order.
        """
        progress = Tally(total=total)
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
        config = native_generate(config)
        plan = self._plan(item, config, None)
        if isinstance(plan, Judgment) or not (plan.by_head and plan.calls):
            yield self.judge(item, config)
            return
        decided = self.heads.verdict(plan)
        if decided.status is not Status.ERROR:
            yield self._finished(plan, decided.model_copy(update={"criteria": ()}), metrics=False)
            self._run([plan], replace(config, mode="score"))  # a head's criterion reads
            decided = self.heads.with_criteria(plan, decided)
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
        config = native_generate(config)
        plans: list[Plan | Judgment] = []
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
            self._run([plan for plan in plans if isinstance(plan, Plan)], config)
        for plan in plans:
            if isinstance(plan, Judgment):
                yield plan
                continue
            if config.mode != "score":
                # a head's criterion calls are always scored: they hold no critique
                self._run([plan], replace(config, mode="score") if plan.by_head else config)
            yield self._completed(plan, self._finish(plan), config)

    def _completed(self, plan: Plan, judgment: Judgment, config: JudgeConfig) -> Judgment:
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
        plan = self._plan(item, config, judgment.line, decision=decision_of(judgment))
        if isinstance(plan, Judgment):
            return judgment.model_copy(update={"feedback_note": plan.error})
        calls = plan.calls[:1] if judgment.protocol is Protocol.PAIRWISE else plan.calls
        texts, raw = [], []
        for call in calls:
            try:
                generation = self.backend.generate(call.messages, config.sampling, call.output)
                parsed = self.replies.parse(plan, call, generation)[0]
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
    ) -> Plan | Judgment:
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
        guesses = scenario_guesses(self.backend, self.catalog, item, config)
        if guesses:
            item = item.model_copy(update={"scenario": chosen_scenario(guesses)})
            base = base.model_copy(
                update={"scenario_guesses": {g.scenario: round(g.probability, 4) for g in guesses}}
            )
        try:
            template, resolved = checked(item, config, self.catalog)
        except (PocketJudgeError, ValueError) as exc:
            return base.model_copy(update={"error": str(exc)})
        base = base.model_copy(update={"scenario": resolved.label, "criteria": resolved.rule.keys})
        if decides(config.parts.head, config.protocol):
            return self.heads.plan(item, config, resolved, base)
        layout = ReplyLayout(
            decision_first=template.decision_first,
            criteria=config.judge.criterion_scores,
            feedback=config.mode == "generate",
        )
        calls, truncated = self.replies.calls(item, config, resolved, template, layout, decision)
        base = base.model_copy(update={"truncated": truncated})
        return Plan(item, config, resolved, base, calls)

    # -- running ---------------------------------------------------------------
    def _run(self, plans: Sequence[Plan], config: JudgeConfig) -> None:
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

    def _finish(self, plan: Plan) -> Judgment:
        return self._finished(
            plan, self.heads.decide(plan) if plan.by_head else self.replies.build(plan)
        )

    def _finished(self, plan: Plan, judgment: Judgment, metrics: bool = True) -> Judgment:
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
