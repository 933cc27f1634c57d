"""The judging service: items and a configuration in, judgments out.

The CLI, the Streamlit pages and the training evaluation all call this. It
never raises for one bad row: every input row becomes exactly one judgment,
with status ok, unparsed (raw text kept) or error (message kept).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from app.criteria_resolution import CriteriaChoice, ResolvedCriteria, resolve
from app.errors import BackendError, PocketJudgeError
from app.io.reader import InputRow
from app.io.writer import error_judgment
from app.judgment_builder import Attempt, PairCombine, build_judgment, combine_swapped
from app.output_format import output_spec
from app.parsing import ParseFailure, parse_output
from app.prompts import DEFAULT_TEMPLATE, AnswerSlot, PromptInput, get_template
from app.records import JudgeItem, Judgment, Protocol, Status
from app.scenarios import Catalog, load_catalog
from app.text_fitting import fit_texts
from models.backends.base import Backend, SamplingParams

PAIR_LABELS = ("A", "B")


@dataclass(frozen=True)
class JudgeConfig:
    protocol: Protocol | None = None  # None: by answer count (1 single, 2 pairwise, 3+ multi)
    choice: CriteriaChoice = field(default_factory=CriteriaChoice)
    use_reference: bool = True
    swap: bool = True  # pairwise: judge both orders
    pair_combine: PairCombine = "agree"  # how both orders make one verdict (judgment_builder)
    tie_margin: float = 0.0  # calibrated combine: |expected A - B| at or below this is a tie
    template: str = DEFAULT_TEMPLATE
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(repeat_penalty=1.1))
    max_input_chars: int | None = 6000  # texts are cut from the middle beyond this
    reference_metrics: bool = False  # ROUGE / BLEU / BERTScore per answer when a reference exists


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
    ) -> Iterator[Judgment]:
        """One judgment per input row, in order. Stops early only when asked to."""
        progress = Progress(total=total)
        for row in rows:
            if should_stop is not None and should_stop():
                return
            if row.item is None:
                judgment = error_judgment(
                    row, config.protocol, model=self.model_name, template=config.template
                )
            else:
                judgment = self.judge(row.item, config, line=row.line)
            progress.add(judgment)
            if on_judgment is not None:
                on_judgment(judgment, progress)
            yield judgment

    # -- one item --------------------------------------------------------------
    def judge(self, item: JudgeItem, config: JudgeConfig, line: int | None = None) -> Judgment:
        judgment = self._judge(item, config, line)
        if config.reference_metrics and item.reference and judgment.status is not Status.ERROR:
            from app.metrics import reference_metrics

            metrics = reference_metrics(list(item.answers), item.reference)
            judgment = judgment.model_copy(update={"reference_metrics": tuple(metrics)})
        return judgment

    def _judge(self, item: JudgeItem, config: JudgeConfig, line: int | None) -> Judgment:
        if config.protocol is None:
            config = replace(config, protocol=infer_protocol(item))
        base = Judgment(
            id=item.id,
            protocol=config.protocol,
            status=Status.ERROR,
            model=self.model_name,
            template=config.template,
            line=line,
            metadata=dict(item.metadata),
        )
        try:
            _check_answers(item, config)
            get_template(config.template)
            resolved = resolve(config.choice, item, self.catalog)
        except (PocketJudgeError, ValueError) as exc:
            return base.model_copy(update={"error": str(exc)})
        base = base.model_copy(update={"scenario": resolved.label, "criteria": resolved.rule.keys})
        try:
            if config.protocol in (Protocol.SINGLE, Protocol.ANCHORED):
                return self._grade_each(item, config, resolved, base)
            if config.protocol is Protocol.PAIRWISE and config.swap:
                first = self._attempt(item, config, resolved, order=(0, 1))
                second = self._attempt(item, config, resolved, order=(1, 0))
                return combine_swapped(
                    base, first, second, resolved.rule, config.pair_combine, config.tie_margin
                )
            order = tuple(range(len(item.answers)))
            return build_judgment(
                base, [self._attempt(item, config, resolved, order)], resolved.rule
            )
        except BackendError as exc:
            return base.model_copy(update={"error": f"backend failed: {exc}"})

    def _grade_each(
        self, item: JudgeItem, config: JudgeConfig, resolved: ResolvedCriteria, base: Judgment
    ) -> Judgment:
        attempts = [
            self._attempt(item, config, resolved, order=(index,))
            for index in range(len(item.answers))
        ]
        return build_judgment(base, attempts, resolved.rule)

    def _attempt(
        self,
        item: JudgeItem,
        config: JudgeConfig,
        resolved: ResolvedCriteria,
        order: tuple[int, ...],
    ) -> Attempt:
        protocol = config.protocol
        reference = item.reference if config.use_reference else None
        answers = [item.answers[i] for i in order]
        prompt = prompt_input(
            protocol, item.question, answers, reference, resolved, config.max_input_chars
        )
        messages = get_template(config.template).render(prompt)
        spec = output_spec(protocol, resolved.rule, len(order))
        generation = self.backend.generate(messages, config.sampling, spec)
        try:
            parsed = parse_output(generation.text, protocol, resolved.rule, len(order))
            failure = None
        except ParseFailure as exc:
            parsed, failure = None, str(exc)
            if generation.finish_reason == "length":
                failure = (
                    f"the output stopped at max_tokens={config.sampling.max_tokens} before the "
                    f"judgment was complete; raise max_tokens ({exc})"
                )
        return Attempt(order=order, generation=generation, parsed=parsed, failure=failure)


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
