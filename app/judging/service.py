"""The judging service: items and a configuration in, judgments out.

The CLI, the Streamlit pages and the training evaluation all call this. It
never raises for one bad row: every input row becomes exactly one judgment,
with status ok, unparsed (raw text kept) or error (message kept). It keeps the row loop
(windows of rows scored together, error rows, the cascade, critiques). A run's
configuration is settled once (app/judging/settled_run.py); each item is then planned and
decided by a decider holding only the settings it reads: from the model's reply, or from
a head on its states and likelihoods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from app.batches.tally import Tally
from app.catalog.scenario_detection import chosen_scenario
from app.catalog.scenarios import Catalog, load_catalog
from app.io.reader import InputRow
from app.io.writer import error_judgment
from app.judging.config import JudgeConfig
from app.judging.critique import Critic
from app.judging.item_checks import checked, scenario_guesses
from app.judging.plans import Plan
from app.judging.settled_run import SettledRun, settle
from app.records import JudgeItem, Judgment, Mode, Protocol, Status
from models.backends.base import Backend, Generation, SamplingParams, ScoreRequest
from models.foundation.errors import BackendError, PocketJudgeError

WINDOW_ROWS = 16  # rows read ahead and scored together (grouped by their instructions)


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
        on_judgment: Callable[[Judgment, Tally], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
        window: int = WINDOW_ROWS,
    ) -> Iterator[Judgment]:
        """One judgment per input row, in order. Stops early only when asked to.

        Rows are read `window` at a time and scored together, so rows that share
        instructions run over one evaluated prefix; judgments still come in row order.
        """
        run = self._settle(config)
        progress = Tally(total=total)
        iterator = iter(rows)
        while True:
            if should_stop is not None and should_stop():
                return
            chunk = list(islice(iterator, window))
            if not chunk:
                return
            for judgment in self._judged(self._entries(chunk), run):
                progress.add(judgment)
                if on_judgment is not None:
                    on_judgment(judgment, progress)
                yield judgment

    def judge_many(self, rows: Sequence[InputRow], config: JudgeConfig) -> list[Judgment]:
        """Judgments of `rows`, in order; score mode sends all their calls in one batch."""
        return list(self._judged(self._entries(rows), self._settle(config)))

    # -- one item --------------------------------------------------------------
    def judge(self, item: JudgeItem, config: JudgeConfig, line: int | None = None) -> Judgment:
        return next(self._judged([(item, line)], self._settle(config)))

    def judge_in_steps(self, item: JudgeItem, config: JudgeConfig) -> Iterator[Judgment]:
        """The judgment of `item` in two steps where a state head decides and criterion
        scores are asked for: first the head's verdict alone (at a verdict's cost, no
        criterion scores, no reference metrics), then the whole judgment, as `judge` gives
        it, from the same reads. Otherwise the whole judgment alone."""
        run = self._settle(config)
        plan = self._plan(item, run, None)
        if isinstance(plan, Judgment) or not (plan.by_head and plan.calls) or not run.heads:
            yield next(self._decided([plan], run))
            return
        decided = run.heads.verdict(plan)  # with the reference's parts its reads hold
        if decided.status is not Status.ERROR:
            verdict = decided.model_copy(update={"criteria": ()})
            yield run.finishing.finished(plan, verdict, metrics=False)
            self._run([plan], "score", run.sampling)  # a head's criterion reads
            decided = run.heads.with_criteria(plan, decided)
        yield self._completed(plan, run.finishing.finished(plan, decided), run)

    def score_requests(self, item: JudgeItem, config: JudgeConfig) -> list[ScoreRequest]:
        """The score-mode replies judging `item` reads (a state head's criterion reads, or a
        score-mode judge's calls), e.g. to read them elsewhere first; none for a bad row."""
        run = self._settle(config)
        plan = self._plan(item, run, None)
        if isinstance(plan, Judgment):
            return []
        return [ScoreRequest(tuple(c.messages), c.output, run.sampling) for c in plan.calls]

    def explain(self, item: JudgeItem, judgment: Judgment, config: JudgeConfig) -> Judgment:
        """A critique of a judgment already made: the reply generated again with its
        decision fixed (decision-first templates), feedback included."""
        run = self._settle(config)
        if (unexplained := run.critic.unexplained(judgment)) is not None:
            return unexplained
        checked = self._checked(item, run, judgment.line, judgment.protocol)
        if isinstance(checked, Judgment):
            return judgment.model_copy(update={"feedback_note": checked.error})
        return run.critic.critique(checked, judgment)

    def _settle(self, config: JudgeConfig) -> SettledRun:
        return settle(config, self.backend, self.model_name)

    @staticmethod
    def _entries(rows: Sequence[InputRow]) -> list[tuple[JudgeItem, int | None] | InputRow]:
        return [(row.item, row.line) if row.item is not None else row for row in rows]

    def _judged(
        self, entries: Sequence[tuple[JudgeItem, int | None] | InputRow], run: SettledRun
    ) -> Iterator[Judgment]:
        """Each entry's judgment, in order, as soon as it is finished.

        Score mode scores every entry's calls in one batch first; then each
        judgment is finished (state head, critique) and given out before the next
        starts, so a caller that writes each one as it comes loses at most the
        row in progress when the run is killed (or the window's batch, in score mode).
        """
        plans: list[Plan | Judgment] = []
        for entry in entries:
            if isinstance(entry, InputRow):  # a row that could not be read
                stamp = self._stamp(run) | {"protocol": run.rules.protocol}
                plans.append(error_judgment(entry, None).model_copy(update=stamp))
            else:
                plans.append(self._plan(entry[0], run, entry[1]))
        yield from self._decided(plans, run)

    def _decided(self, plans: Sequence[Plan | Judgment], run: SettledRun) -> Iterator[Judgment]:
        """Each plan's judgment (a bad row's error judgment as it is), in order."""
        if run.mode == "score":
            self._run([plan for plan in plans if isinstance(plan, Plan)], "score", run.sampling)
        for plan in plans:
            if isinstance(plan, Judgment):
                yield plan
                continue
            if run.mode != "score":
                # a head's criterion calls are always scored: they hold no critique
                self._run([plan], "score" if plan.by_head else run.mode, run.sampling)
            decider = run.heads if plan.by_head else run.replies
            assert decider is not None  # the plan was made by it
            yield self._completed(plan, run.finishing.finished(plan, decider.decide(plan)), run)

    def _completed(self, plan: Plan, judgment: Judgment, run: SettledRun) -> Judgment:
        """A finished judgment sent to the second judge when unsure (cascade), and given
        its critique where one is asked for (planned from the same checks and criteria)."""
        if run.cascade is not None:
            judgment = run.cascade.reconsider(plan.item, judgment)
            if judgment.cascade and judgment.cascade["decided_by"] == "second":
                return judgment
        critic: Critic = run.critic
        if not critic.wanted(plan):
            return judgment
        return critic.critique(plan, judgment)

    # -- planning --------------------------------------------------------------
    def _plan(self, item: JudgeItem, run: SettledRun, line: int | None) -> Plan | Judgment:
        """`item`'s plan by the decider that decides it, or its error judgment."""
        checked = self._checked(item, run, line, None)
        if isinstance(checked, Judgment):
            return checked
        item, protocol, resolved = checked.item, checked.protocol, checked.resolved
        if run.heads is not None and run.heads.decides(protocol):
            return run.heads.plan(item, protocol, resolved, checked.base)
        assert run.replies is not None  # checked: the template is known
        return run.replies.plan(item, protocol, resolved, checked.base)

    def _stamp(self, run: SettledRun) -> dict[str, Any]:
        """What every judgment of `run` records of it, a bad row's too: the judge, its
        template and the mode."""
        return {"model": self.model_name, "template": run.rules.template_name, "mode": run.mode}

    def _checked(
        self, item: JudgeItem, run: SettledRun, line: int | None, protocol: Protocol | None
    ) -> Plan | Judgment:
        """`item` checked under `run`'s rules (its scenario guessed where left open, its
        criteria resolved), as a plan without calls; or its error judgment."""
        rules = run.rules
        protocol = protocol or rules.protocol_of(item)
        base = Judgment(
            id=item.id,
            protocol=protocol,
            status=Status.ERROR,
            line=line,
            metadata=dict(item.metadata),
            **self._stamp(run),
        )
        guesses = scenario_guesses(self.backend, self.catalog, item, rules)
        if guesses:
            item = item.model_copy(update={"scenario": chosen_scenario(guesses)})
            base = base.model_copy(
                update={"scenario_guesses": {g.scenario: round(g.probability, 4) for g in guesses}}
            )
        try:
            _, resolved = checked(item, protocol, rules, self.catalog)
        except (PocketJudgeError, ValueError) as exc:
            return base.model_copy(update={"error": str(exc)})
        base = base.model_copy(update={"scenario": resolved.label, "criteria": resolved.rule.keys})
        return Plan(item, protocol, resolved, base, calls=[])

    # -- running ---------------------------------------------------------------
    def _run(self, plans: Sequence[Plan], mode: Mode, sampling: SamplingParams) -> None:
        """Give every plan its generations: one score batch, or one generation per call."""
        if mode == "score":
            requests = [
                ScoreRequest(tuple(call.messages), call.output, sampling)
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
                    self.backend.generate(call.messages, sampling, call.output)
                    for call in plan.calls
                ]
            except BackendError as exc:
                plan.generations = [Generation(text="", error=str(exc))] * len(plan.calls)
