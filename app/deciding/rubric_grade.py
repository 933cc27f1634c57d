"""A single answer's rubric grade with a reference: the rubric read combined with what the
reference turn and the head read of the same answer.

The rubric read (criterion_reads.py: the expected level under the model's probabilities)
is compressed toward one high level. A single answer judged with a reference is also read
by the head (its own 1-10 grade) and by the reference turn (the reference's mean
log-probability after the answer, the log-odds of the judge's check that the answer gives
the reference's result). A linear combination of these, fitted by request-grouped CV on
Prometheus rows (training/heads/rubric_grade_fit.py), is the grade the page shows; the read
level is kept beside it (the judgment's part `rubric_read`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.catalog.criteria_types import CriterionSpec
from app.records import Judgment
from models.foundation.errors import ConfigError

SIGNALS = ("level", "grade", "check", "likelihood", "length")
READ_PART = "rubric_read"  # the rubric read's own level, kept where the combination replaced it
PEARSON_PART = "rubric_grade_pearson"  # the combination's out-of-fold Pearson, for the page
SHARE_PREFIX = "rubric_grade_"  # + a signal's name: its weight times its value


def answer_length(answer: str) -> float:
    """log(1 + the answer's words): the length signal the combination may weigh."""
    return math.log1p(len(answer.split()))


def signals_of(judgment: Judgment, answer: str) -> dict[str, float] | None:
    """Every signal of a single answer's judgment, or None where one was not read."""
    if not judgment.answers:
        return None
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
    }
    if any(value is None for value in found.values()):
        return None
    return {name: float(value) for name, value in found.items()}  # type: ignore[arg-type]


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

    def grade(self, signals: dict[str, float]) -> float:
        value = self.intercept + sum(w * signals[name] for name, w in self.weights.items())
        return min(max(value, self.scale[0]), self.scale[1])

    def as_json(self) -> dict[str, Any]:
        return {
            "weights": self.weights,
            "intercept": self.intercept,
            "cv_pearson": self.cv_pearson,
            "rows": self.rows,
            "scale": list(self.scale),
        }

    @classmethod
    def load(cls, path: Path) -> RubricGrade:
        """The combination saved at `path`; a ConfigError names the file and the field."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(path, "", f"cannot be read as JSON ({exc})") from exc
        for field in ("weights", "intercept", "cv_pearson", "rows", "scale"):
            if field not in data:
                raise ConfigError(path, field, "missing")
        unknown = sorted(set(data["weights"]) - set(SIGNALS))
        if unknown:
            raise ConfigError(path, "weights", f"unknown signals {unknown}; known: {SIGNALS}")
        read = {
            "weights": lambda v: {str(k): float(w) for k, w in v.items()},
            "intercept": float,
            "cv_pearson": float,
            "rows": int,
            "scale": _scale,
        }
        values: dict[str, Any] = {}
        for field, convert in read.items():
            try:
                values[field] = convert(data[field])
            except (TypeError, ValueError, AttributeError) as exc:
                raise ConfigError(path, field, f"not a valid value: {data[field]!r}") from exc
        return cls(**values)


def _scale(value: Any) -> tuple[int, int]:
    """[lowest, highest] as whole numbers (a ValueError or TypeError otherwise)."""
    low, high = value
    return int(low), int(high)


def fits(grade: RubricGrade, specs: Sequence[CriterionSpec]) -> bool:
    """Whether `grade` was fitted on criteria like these: one criterion with level texts
    (a rubric) on the grade's scale."""
    return (
        len(specs) == 1
        and bool(specs[0].levels)
        and (specs[0].scale_min, specs[0].scale_max) == grade.scale
    )


def with_rubric_grade(judgment: Judgment, answer: str, grade: RubricGrade) -> Judgment:
    """A single answer's judgment with its rubric criterion graded by the combination, the
    read level kept as the part `rubric_read`; unchanged where a signal was not read."""
    signals = signals_of(judgment, answer)
    if signals is None or READ_PART in (judgment.verdict_parts or {}):
        return judgment
    scores = judgment.answers[0]
    key = next(iter(scores.expected_criteria or {}))
    value = grade.grade(signals)
    combined = scores.model_copy(
        update={"criteria": {key: round(value, 1)}, "expected_criteria": {key: value}}
    )
    # each signal's part of the grade (its weight times its value)
    shares = {f"{SHARE_PREFIX}{n}": round(w * signals[n], 4) for n, w in grade.weights.items()}
    parts = {
        **(judgment.verdict_parts or {}),
        READ_PART: round(signals["level"], 4),
        PEARSON_PART: grade.cv_pearson,
        **shares,
    }
    return judgment.model_copy(
        update={"answers": (combined, *judgment.answers[1:]), "verdict_parts": parts}
    )
