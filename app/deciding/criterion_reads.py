"""Criterion scores beside a state head's decision, read from the model's probabilities.

Each answer is graded on each criterion alone (template `pocketjudge-criterion`: the
criterion comes after the item, so one answer's prompts share the item and it is read
once). The score of a criterion is the expected level under the model's probabilities
of the levels, not the most likely level: a small model puts most of its mass on one
high level for nearly every answer, and the expectation keeps what separates them.

The head decides; the criteria are a second reading of the same model, read apart from
it. Their weighted mean gives a decision of its own (`criteria_verdict`, or
`criteria_ranking`), kept beside the head's so a disagreement is shown, never hidden.
A rubric grade is the same read with the rubric's one criterion and its level texts.

A reference is read on from the head's reads of each answer (`reference_turn`): the judge's
turn quoting it after the answer, read as the model's reply, gives how likely it is there,
and with a check the judge's true or false (models/backends/reply_criteria.py); that is what
the verdict's reference part reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.catalog.scoring import ScoringRule
from app.formats.output_format import ReplyLayout, output_spec
from app.formats.prompts import PromptInput, get_template, squeeze_blank_lines
from app.records import AnswerScores, Judgment, Protocol
from models.backends.base import Generation, OutputSpec
from models.readings import ReplyCriteria

TEMPLATE = "pocketjudge-criterion"
LAYOUT = ReplyLayout(decision_first=True, criteria=False, feedback=False)
VALUE_PATH = ("overall",)
REFERENCE_TEMPLATE = "pocketjudge-reference-turn"  # the turn's start: the reference alone
CHECK_TEMPLATE = "pocketjudge-reference-check"  # the reference, then: does the answer agree?
CHECK_KEY = "correct"  # the check's reply starts {"correct": and is read over true and false
TURN_REFERENCE_CHARS = 3000  # a reference is read once per answer: longer ones are cut


@dataclass(frozen=True)
class CriterionRead:
    """What one call read: answer `answer` (0-based) on criterion `key`."""

    answer: int
    key: str
    generation: Generation


def criterion_rules(rule: ScoringRule) -> list[ScoringRule]:
    """One rule per criterion: each is read on its own scale."""
    return [ScoringRule((spec,)) for spec in rule.specs]


def criterion_output(rule: ScoringRule) -> OutputSpec:
    """The reply of one read: {"overall": level}, the level read from its probabilities."""
    return output_spec(Protocol.SINGLE, rule, 1, LAYOUT)


def level_probs(generation: Generation) -> dict[int, float] | None:
    """The probability of each level where the reply wrote its score, or None."""
    for dist in generation.distributions:
        if tuple(dist.path) == VALUE_PATH:
            return {int(level): p for level, p in dist.probs.items()}
    return None


def expected_level(probs: dict[int, float]) -> float:
    total = sum(probs.values())
    return sum(level * p for level, p in probs.items()) / total


def reference_turn(reference: str, check: bool = False) -> ReplyCriteria:
    """What the backend reads on from each answer's read: the judge's turn quoting the
    reference (cut to TURN_REFERENCE_CHARS; its likelihood after the answer is read), and
    with `check` asking whether the answer gives the reference's result (the judge's true
    or false is read too)."""
    # as the rendered turn quotes it (tidied), so the backend finds its tokens there
    cut = squeeze_blank_lines(reference[:TURN_REFERENCE_CHARS]).strip()
    prompt = PromptInput(Protocol.SINGLE, "", (), ScoringRule(()), reference=cut)
    template = CHECK_TEMPLATE if check else REFERENCE_TEMPLATE
    message = get_template(template).render(prompt)[-1].content
    return ReplyCriteria(message, (), (), reference=cut, check=CHECK_KEY if check else None)


def with_criteria(
    judgment: Judgment, reads: Sequence[CriterionRead], rule: ScoringRule
) -> Judgment:
    """`judgment` (the head's) with each answer's criterion scores from `reads`; a read
    that failed or gave no probabilities leaves the scores out and says why."""
    expected: dict[int, dict[str, float]] = {}
    for read in reads:
        if read.generation.error:
            return _without(judgment, reads, f"the model failed: {read.generation.error}")
        probs = level_probs(read.generation)
        if not probs or not sum(probs.values()):
            return _without(
                judgment, reads, "the backend gave no probabilities for the levels (raw reply kept)"
            )
        expected.setdefault(read.answer, {})[read.key] = expected_level(probs)
    return with_levels(judgment, expected, rule, _raw(reads))


def with_levels(
    judgment: Judgment, expected: dict[int, dict[str, float]], rule: ScoringRule, raw: str
) -> Judgment:
    """`judgment` with each answer's expected criterion levels (read apart, read on, or
    given by a criterion head), and the decision of their weighted means beside the head's."""
    count = max(expected) + 1 if expected else 0
    answers = tuple(_answer_scores(expected[i], rule) for i in range(count))
    if judgment.answers:  # the head's grades stand; the criteria are read beside them
        answers = tuple(
            graded.model_copy(
                update={"criteria": a.criteria, "expected_criteria": a.expected_criteria}
            )
            for graded, a in zip(judgment.answers, answers)
        )
    update: dict = {"answers": answers, "raw_output": raw}
    overall = [a.expected_overall or a.overall for a in answers]
    if judgment.protocol is Protocol.PAIRWISE and len(overall) == 2:
        first, second = overall
        update["criteria_verdict"] = "A" if first > second else "B" if second > first else "tie"
    elif judgment.protocol is Protocol.MULTI:
        order = sorted(range(len(overall)), key=lambda i: -overall[i])
        update["criteria_ranking"] = tuple(i + 1 for i in order)
    return judgment.model_copy(update=update)


def _answer_scores(expected: dict[str, float], rule: ScoringRule) -> AnswerScores:
    ordered = {spec.key: expected[spec.key] for spec in rule.specs}
    overall = rule.overall(ordered)
    return AnswerScores(
        criteria={key: round(value, 1) for key, value in ordered.items()},
        overall=round(overall, 1),
        expected_criteria=ordered,
        expected_overall=overall,
    )


def _without(judgment: Judgment, reads: Sequence[CriterionRead], why: str) -> Judgment:
    note = f"the criterion scores could not be read ({why})"
    return judgment.model_copy(
        update={"criteria": (), "criteria_note": note, "raw_output": _raw(reads)}
    )


def _raw(reads: Sequence[CriterionRead]) -> str:
    """Every read's reply, one line each, named by answer and criterion."""
    return "\n".join(f"answer {r.answer + 1} {r.key}: {r.generation.text}" for r in reads)
