"""A single answer's rubric grade combined from its reads (app/deciding/rubric_grade.py)."""

from __future__ import annotations

import json
import math

import pytest

from app.deciding.rubric_grade import (
    HELD_PART,
    READ_PART,
    RubricGrade,
    signals_of,
    with_rubric_grade,
)
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from models.foundation.errors import ConfigError

ITEM = JudgeItem(
    id="r1",
    question="What is the capital of France?",
    answers=("Paris is the capital of France.",),
    reference="Paris, on the Seine.",  # its own words beyond the request: paris, seine
)


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


def test_every_signal_is_read_from_the_judgment_and_the_item():
    judgment = graded({"reference_check": 1.5, "reference_likelihood": -0.8})
    assert signals_of(judgment, ITEM) == {
        "level": 4.2,
        "grade": 7.4,
        "check": 1.5,
        "likelihood": -0.8,
        "length": pytest.approx(math.log1p(6)),
        "reference_words": 0.5,  # "paris" stated, "seine" not
    }
    # the read level kept beside a combined grade is the one the combination reads
    kept = graded({"reference_check": 1.5, "reference_likelihood": -0.8, READ_PART: 3.9})
    assert signals_of(kept, ITEM)["level"] == 3.9


def test_a_signal_not_read_gives_no_signals():
    assert signals_of(graded({"reference_likelihood": -0.8}), ITEM) is None  # no check
    assert signals_of(graded(None), ITEM) is None  # no reference read
    empty = Judgment(id="r1", protocol=Protocol.SINGLE, status=Status.ERROR, error="x")
    assert signals_of(empty, ITEM) is None
    read = graded({"reference_check": 1.5, "reference_likelihood": -0.8})
    # a reference that adds no word to the request has no share to read
    echo = ITEM.model_copy(update={"reference": "The capital of France?"})
    assert signals_of(read, echo) is None
    # a combination that does not weigh the reference's words needs none
    assert "reference_words" not in signals_of(read, echo, ("level", "check"))
    unweighed = RubricGrade({"level": 1.0, "check": 0.5}, intercept=0.0, cv_pearson=0.4, rows=9)
    assert with_rubric_grade(read, echo, unweighed).verdict_parts[READ_PART] == 4.2
    assert signals_of(read, ITEM.model_copy(update={"reference": None})) is None


def test_the_grade_is_the_weighted_sum_clipped_to_the_scale():
    grade = RubricGrade({"level": 1.0, "check": 0.5}, intercept=-1.0, cv_pearson=0.4, rows=10)
    assert grade.grade({"level": 4.0, "check": 1.0}) == pytest.approx(3.5)
    assert grade.grade({"level": 5.0, "check": 10.0}) == 5.0
    assert grade.grade({"level": 1.0, "check": -10.0}) == 1.0


def test_a_signal_outside_its_fitted_range_is_held_at_its_edge_and_counted():
    grade = RubricGrade(
        {"level": 1.0, "likelihood": -0.5},
        intercept=0.0,
        cv_pearson=0.5,
        rows=10,
        bounds={"level": (2.0, 4.5), "likelihood": (-2.0, -0.3)},
    )
    # a one-word reference after a wrong answer: a likelihood no fitted row came near
    signals = {"level": 2.5, "likelihood": -8.0, "length": 3.0}
    assert grade.held(signals) == {"level": 2.5, "likelihood": -2.0}
    assert grade.grade(signals) == pytest.approx(2.5 + 1.0)  # not 2.5 + 4.0
    judged = graded({"reference_check": 0.1, "reference_likelihood": -8.0}, level=2.5)
    combined = with_rubric_grade(judged, ITEM, grade)
    parts = combined.verdict_parts
    assert parts[HELD_PART] == 1.0 and parts["rubric_grade_likelihood"] == pytest.approx(1.0)
    inside = graded({"reference_check": 0.1, "reference_likelihood": -1.0}, level=2.5)
    assert HELD_PART not in with_rubric_grade(inside, ITEM, grade).verdict_parts


def test_a_saved_grade_loads_back_and_a_bad_file_names_its_field(tmp_path):
    grade = RubricGrade({"level": 0.9, "length": 0.1}, 0.3, 0.45, 320, bounds={"level": (2, 4)})
    path = tmp_path / "rubric_grade.json"
    path.write_text(json.dumps(grade.as_json()))
    assert RubricGrade.load(path) == grade
    unbounded = {k: v for k, v in grade.as_json().items() if k != "bounds"}
    path.write_text(json.dumps(unbounded))
    assert RubricGrade.load(path).bounds == {}  # saved before signals were held
    path.write_text(json.dumps({**grade.as_json(), "bounds": {"level": [4, 2]}}))
    with pytest.raises(ConfigError, match=r"bounds: not a valid value"):
        RubricGrade.load(path)
    path.write_text(json.dumps({**grade.as_json(), "bounds": {"shoe size": [1, 2]}}))
    with pytest.raises(ConfigError, match=r"bounds: unknown.*shoe size"):
        RubricGrade.load(path)
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
