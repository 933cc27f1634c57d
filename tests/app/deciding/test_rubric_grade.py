"""A single answer's rubric grade combined from its reads (app/deciding/rubric_grade.py)."""

from __future__ import annotations

import math

import pytest

from app.deciding.decision import DecisionRecord, grade_of
from app.deciding.rubric_grade import HELD_PART, READ_PART, signals_of, with_rubric_grade
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from training.decision.grade_fit import rubric_rule

SIGNAL = {
    "name": "states",
    "value": "v",
    "share": "states",
    "reads": ["states"],
    "cost": "c",
    "weight": 1.0,
    "fitted": {"by": "b", "rows": "r"},
}
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
    unweighed = rubric_rule({"level": 1.0, "check": 0.5}, 0.0, 0.4, "none")
    assert with_rubric_grade(read, echo, unweighed).verdict_parts[READ_PART] == 4.2
    assert signals_of(read, ITEM.model_copy(update={"reference": None})) is None


def test_the_grade_is_the_weighted_sum_clipped_to_the_scale():
    grade = rubric_rule({"level": 1.0, "check": 0.5}, -1.0, 0.4, "none")
    assert grade_of(grade, {"level": 4.0, "check": 1.0}) == pytest.approx(3.5)
    assert grade_of(grade, {"level": 5.0, "check": 10.0}) == 5.0
    assert grade_of(grade, {"level": 1.0, "check": -10.0}) == 1.0


def test_a_signal_outside_its_fitted_range_is_held_at_its_edge_and_counted():
    grade = rubric_rule(
        {"level": 1.0, "likelihood": -0.5},
        0.0,
        0.5,
        "none",
        bounds={"level": (2.0, 4.5), "likelihood": (-2.0, -0.3)},
    )
    # a one-word reference after a wrong answer: a likelihood no fitted row came near
    signals = {"level": 2.5, "likelihood": -8.0, "length": 3.0}
    assert grade.held(signals) == {"level": 2.5, "likelihood": -2.0}
    assert grade_of(grade, signals) == pytest.approx(2.5 + 1.0)  # not 2.5 + 4.0
    judged = graded({"reference_check": 0.1, "reference_likelihood": -8.0}, level=2.5)
    combined = with_rubric_grade(judged, ITEM, grade)
    parts = combined.verdict_parts
    assert parts[HELD_PART] == 1.0 and parts["rubric_grade_likelihood"] == pytest.approx(1.0)
    inside = graded({"reference_check": 0.1, "reference_likelihood": -1.0}, level=2.5)
    assert HELD_PART not in with_rubric_grade(inside, ITEM, grade).verdict_parts


def test_a_rubric_grade_in_a_record_loads_back_and_a_bad_one_names_its_field():
    grade = rubric_rule({"level": 0.9, "length": 0.1}, 0.3, 0.45, "none", bounds={"level": (2, 4)})
    record = {"judge": "j", "signals": [SIGNAL], "doubt_below": 0.5}
    data = grade.model_dump(mode="json")
    assert DecisionRecord.model_validate(record | {"rubric_grade": data}).rubric_grade == grade
    data["signals"][0]["bounds"] = [4, 2]
    with pytest.raises(ValueError, match=r"bounds: 4\.0 > 2\.0"):
        DecisionRecord.model_validate(record | {"rubric_grade": data})
    data["signals"][0] |= {"bounds": None, "name": "shoe size"}
    with pytest.raises(ValueError, match=r"rubric_grade\.signals: \['shoe size'\] unknown"):
        DecisionRecord.model_validate(record | {"rubric_grade": data})
    del data["intercept"]
    with pytest.raises(ValueError, match="intercept"):
        DecisionRecord.model_validate(record | {"rubric_grade": data})
