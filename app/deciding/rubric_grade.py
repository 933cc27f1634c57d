"""A single answer's rubric grade with a reference: the rubric read combined with what the
reference turn and the head read of the same answer.

The rubric read (criterion_reads.py: the expected level under the model's probabilities)
is compressed toward one high level. A single answer judged with a reference is also read
by the head (its own 1-10 grade) and by the reference turn (the reference's mean
log-probability after the answer, the log-odds of the judge's check that the answer gives
the reference's result). A linear combination of these, fitted by request-grouped CV on
Prometheus rows (training/heads/rubric_grade_fit.py), is the grade the page shows; the read
level is kept beside it (the judgment's part `rubric_read`).

Each signal is held inside the range it took on the rows the combination was fitted on
(`bounds`): Prometheus references are paragraphs, and a one-word reference after a wrong
answer gives a likelihood far below any of them, where a linear weight would say anything.
The page says when a signal was held (the part `rubric_grade_held`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.catalog.criteria_types import CriterionSpec
from app.deciding.reference_words import reference_words, stated_share
from app.records import JudgeItem, Judgment
from models.foundation.errors import ConfigError

SIGNALS = ("level", "grade", "check", "likelihood", "length", "reference_words")
READ_PART = "rubric_read"  # the rubric read's own level, kept where the combination replaced it
PEARSON_PART = "rubric_grade_pearson"  # the combination's out-of-fold Pearson, for the page
SHARE_PREFIX = "rubric_grade_"  # + a signal's name: its weight times its value
HELD_PART = "rubric_grade_held"  # how many signals lay outside the fitted range


def answer_length(answer: str) -> float:
    """log(1 + the answer's words): the length signal the combination may weigh."""
    return math.log1p(len(answer.split()))


def signals_of(
    judgment: Judgment, item: JudgeItem, needed: Sequence[str] = SIGNALS
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


@dataclass(frozen=True)
class RubricGrade:
    """`intercept + sum(weights[s] * signal s)`, clipped to the rubric's scale."""

    weights: dict[str, float]
    intercept: float
    # with the label, out of fold on the rows it was fitted on (the signals and ridge chosen
    # inside each fold: training.heads.rubric_grade_fit's nested CV)
    cv_pearson: float
    rows: int
    scale: tuple[int, int] = (1, 5)
    # each weighed signal's lowest and highest value on the rows it was fitted on
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)

    def held(self, signals: dict[str, float]) -> dict[str, float]:
        """The weighed signals, each held inside its fitted range."""
        return {
            name: min(max(signals[name], self.bounds[name][0]), self.bounds[name][1])
            if name in self.bounds
            else signals[name]
            for name in self.weights
        }

    def grade(self, signals: dict[str, float]) -> float:
        held = self.held(signals)
        value = self.intercept + sum(w * held[name] for name, w in self.weights.items())
        return min(max(value, self.scale[0]), self.scale[1])

    def as_json(self) -> dict[str, Any]:
        return {
            "weights": self.weights,
            "intercept": self.intercept,
            "cv_pearson": self.cv_pearson,
            "rows": self.rows,
            "scale": list(self.scale),
            "bounds": {name: list(bound) for name, bound in self.bounds.items()},
        }

    @classmethod
    def load(cls, path: Path) -> RubricGrade:
        """The combination saved at `path`; a ConfigError names the file and the field."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(path, "", f"cannot be read as JSON ({exc})") from exc
        for name in ("weights", "intercept", "cv_pearson", "rows", "scale"):
            if name not in data:
                raise ConfigError(path, name, "missing")
        for name in ("weights", "bounds"):
            unknown = sorted(set(data.get(name) or {}) - set(SIGNALS))
            if unknown:
                raise ConfigError(path, name, f"unknown signals {unknown}; known: {SIGNALS}")
        read = {
            "weights": lambda v: {str(k): float(w) for k, w in v.items()},
            "intercept": float,
            "cv_pearson": float,
            "rows": int,
            "scale": _scale,
            "bounds": lambda v: {str(k): _bound(b) for k, b in v.items()},
        }
        values: dict[str, Any] = {}
        for name, convert in read.items():
            if name == "bounds" and name not in data:
                continue  # a combination saved before signals were held: none held
            try:
                values[name] = convert(data[name])
            except (TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(path, name, f"not a valid value: {data[name]!r}") from exc
        return cls(**values)


def _scale(value: Any) -> tuple[int, int]:
    """[lowest, highest] as whole numbers (a ValueError or TypeError otherwise)."""
    low, high = value
    return int(low), int(high)


def _bound(value: Any) -> tuple[float, float]:
    """[lowest, highest], lowest <= highest (a ValueError or TypeError otherwise)."""
    low, high = (float(v) for v in value)
    if low > high:
        raise ValueError(f"{low} > {high}")
    return low, high


def fits(grade: RubricGrade, specs: Sequence[CriterionSpec]) -> bool:
    """Whether `grade` was fitted on criteria like these: one criterion with level texts
    (a rubric) on the grade's scale."""
    return (
        len(specs) == 1
        and bool(specs[0].levels)
        and (specs[0].scale_min, specs[0].scale_max) == grade.scale
    )


def with_rubric_grade(judgment: Judgment, item: JudgeItem, grade: RubricGrade) -> Judgment:
    """A single answer's judgment with its rubric criterion graded by the combination, the
    read level kept as the part `rubric_read`; unchanged where a signal was not read."""
    signals = signals_of(judgment, item, ("level", *grade.weights))
    if signals is None or READ_PART in (judgment.verdict_parts or {}):
        return judgment
    scores = judgment.answers[0]
    key = next(iter(scores.expected_criteria or {}))
    value = grade.grade(signals)
    combined = scores.model_copy(
        update={"criteria": {key: round(value, 1)}, "expected_criteria": {key: value}}
    )
    # each signal's part of the grade (its weight times its value, held in its fitted range)
    held = grade.held(signals)
    shares = {f"{SHARE_PREFIX}{n}": round(w * held[n], 4) for n, w in grade.weights.items()}
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
