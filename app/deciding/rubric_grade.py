"""A single answer's rubric grade with a reference: the rubric read combined with what the
reference turn and the head read of the same answer.

The rubric read (criterion_reads.py: the expected level under the model's probabilities)
is compressed toward one high level. A single answer judged with a reference is also read
by the head (its own 1-10 grade) and by the reference turn (the reference's mean
log-probability after the answer, the log-odds of the judge's check that the answer gives
the reference's result). A linear combination of these, fitted by request-grouped CV on
Prometheus rows (training/decision/grade_fit.py, by training.decision.fit), is the grade the
page shows; the read level is kept beside it (the judgment's part `rubric_read`).

Each signal is held inside the range it took on the rows the combination was fitted on
(`bounds`): Prometheus references are paragraphs, and a one-word reference after a wrong
answer gives a likelihood far below any of them, where a linear weight would say anything.
The page says when a signal was held (the part `rubric_grade_held`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.catalog.criteria_types import CriterionSpec
from app.deciding.decision import RUBRIC_SIGNALS, GradeRule, grade_of
from app.deciding.reference_words import reference_words, stated_share
from app.records import JudgeItem, Judgment

READ_PART = "rubric_read"  # the rubric read's own level, kept where the combination replaced it
PEARSON_PART = "rubric_grade_pearson"  # the combination's out-of-fold Pearson, for the page
SHARE_PREFIX = "rubric_grade_"  # + a signal's name: its weight times its value
HELD_PART = "rubric_grade_held"  # how many signals lay outside the fitted range


def answer_length(answer: str) -> float:
    """log(1 + the answer's words): the length signal the combination may weigh."""
    return math.log1p(len(answer.split()))


def signals_of(
    judgment: Judgment, item: JudgeItem, needed: Sequence[str] = RUBRIC_SIGNALS
) -> dict[str, float] | None:
    """The signals of a single answer's judgment of `item`, or None where one of `needed`
    was not read (or, for the reference's words, the reference adds no word to the
    request)."""
    if not judgment.answers or not item.answers or item.reference is None:
        return None
    answer = item.answers[0]
    scores = judgment.answers[0]
    parts = judgment.verdict_parts or {}
    level = parts.get(READ_PART)
    if level is None and scores.expected_criteria and len(scores.expected_criteria) == 1:
        level = next(iter(scores.expected_criteria.values()))
    found = {
        "level": level,
        "grade": scores.expected_overall,
        "check": parts.get("reference_check"),
        "likelihood": parts.get("reference_likelihood"),
        "length": answer_length(answer),
        "reference_words": stated_share(answer, reference_words(item.reference, item.question)),
    }
    if any(found[name] is None for name in needed):
        return None
    return {name: float(value) for name, value in found.items() if value is not None}


def fits(grade: GradeRule, specs: Sequence[CriterionSpec]) -> bool:
    """Whether `grade` was fitted on criteria like these: one criterion with level texts
    (a rubric) on the grade's scale."""
    return (
        len(specs) == 1
        and bool(specs[0].levels)
        and (specs[0].scale_min, specs[0].scale_max) == grade.scale
    )


def with_rubric_grade(judgment: Judgment, item: JudgeItem, grade: GradeRule) -> Judgment:
    """A single answer's judgment with its rubric criterion graded by the combination, the
    read level kept as the part `rubric_read`; unchanged where a signal was not read."""
    signals = signals_of(judgment, item, ("level", *grade.weights()))
    if signals is None or READ_PART in (judgment.verdict_parts or {}):
        return judgment
    scores = judgment.answers[0]
    key = next(iter(scores.expected_criteria or {}))
    value = grade_of(grade, signals)
    combined = scores.model_copy(
        update={"criteria": {key: round(value, 1)}, "expected_criteria": {key: value}}
    )
    # each signal's part of the grade (its weight times its value, held in its fitted range)
    held = grade.held(signals)
    shares = {f"{SHARE_PREFIX}{n}": round(w * held[n], 4) for n, w in grade.weights().items()}
    outside = sum(held[name] != signals[name] for name in held)
    parts = {
        **(judgment.verdict_parts or {}),
        READ_PART: round(signals["level"], 4),
        PEARSON_PART: grade.cv_pearson,
        **shares,
        **({HELD_PART: float(outside)} if outside else {}),
    }
    return judgment.model_copy(
        update={"answers": (combined, *judgment.answers[1:]), "verdict_parts": parts}
    )
