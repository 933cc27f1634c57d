"""A single answer's rubric grade combined from its reads (app/deciding/rubric_grade.py)."""

from __future__ import annotations

import json
import math

import pytest

from app.deciding.rubric_grade import READ_PART, RubricGrade, signals_of
from app.records import AnswerScores, Judgment, Protocol, Status
from models.foundation.errors import ConfigError

ANSWER = "Paris is the capital of France."


def graded(parts: dict[str, float] | None, level: float = 4.2) -> Judgment:
    scores = AnswerScores(
        criteria={"rubric": round(level, 1)},
        overall=7,
        expected_criteria={"rubric": level},
        expected_overall=7.4,
    )
    return Judgment(
        id="r1", protocol=Protocol.SINGLE, status=Status.OK, answers=(scores,), verdict_parts=parts
    )


def test_every_signal_is_read_from_the_judgment_and_the_answer():
    judgment = graded({"reference_check": 1.5, "reference_likelihood": -0.8})
    assert signals_of(judgment, ANSWER) == {
        "level": 4.2,
        "grade": 7.4,
        "check": 1.5,
        "likelihood": -0.8,
        "length": pytest.approx(math.log1p(6)),
    }
    # the read level kept beside a combined grade is the one the combination reads
    kept = graded({"reference_check": 1.5, "reference_likelihood": -0.8, READ_PART: 3.9})
    assert signals_of(kept, ANSWER)["level"] == 3.9


def test_a_signal_not_read_gives_no_signals():
    assert signals_of(graded({"reference_likelihood": -0.8}), ANSWER) is None  # no check
    assert signals_of(graded(None), ANSWER) is None  # no reference read
    empty = Judgment(id="r1", protocol=Protocol.SINGLE, status=Status.ERROR, error="x")
    assert signals_of(empty, ANSWER) is None


def test_the_grade_is_the_weighted_sum_clipped_to_the_scale():
    grade = RubricGrade({"level": 1.0, "check": 0.5}, intercept=-1.0, cv_pearson=0.4, rows=10)
    assert grade.grade({"level": 4.0, "check": 1.0}) == pytest.approx(3.5)
    assert grade.grade({"level": 5.0, "check": 10.0}) == 5.0
    assert grade.grade({"level": 1.0, "check": -10.0}) == 1.0


def test_a_saved_grade_loads_back_and_a_bad_file_names_its_field(tmp_path):
    grade = RubricGrade({"level": 0.9, "length": 0.1}, 0.3, 0.45, 320)
    path = tmp_path / "rubric_grade.json"
    path.write_text(json.dumps(grade.as_json()))
    assert RubricGrade.load(path) == grade
    path.write_text(json.dumps({**grade.as_json(), "weights": {"shoe size": 1.0}}))
    with pytest.raises(ConfigError, match=r"rubric_grade\.json: weights: unknown.*shoe size"):
        RubricGrade.load(path)
    missing = grade.as_json()
    del missing["intercept"]
    path.write_text(json.dumps(missing))
    with pytest.raises(ConfigError, match=r"rubric_grade\.json: intercept: missing"):
        RubricGrade.load(path)
    path.write_text(json.dumps({**grade.as_json(), "rows": None}))
    with pytest.raises(ConfigError, match=r"rows: not a valid value: None"):
        RubricGrade.load(path)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot be read as JSON"):
        RubricGrade.load(path)
