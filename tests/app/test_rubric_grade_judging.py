"""A single answer's rubric grade with a reference, through the engine on the tiny real model:
the reference turn's reads kept in the judgment, and the judge's combination
(app/deciding/rubric_grade.py) grading the rubric from them, the read level kept beside."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.rubrics import load_rubric
from app.deciding.decision import RUBRIC_SIGNALS as SIGNALS
from app.deciding.decision import GradeRule, grade_of
from app.deciding.rubric_grade import READ_PART, signals_of
from app.deciding.state_head import StateHead
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.settings import judge_config, with_changes
from app.records import JudgeItem, Protocol, Status
from models.foundation.errors import ConfigError
from models.judge_settings import JudgeSettings
from tests.support.head_configs import (
    HEAD_CONTEXT,
    HELPFULNESS_RUBRIC,
    random_reply_head,
    record_of,
    tiny_service,
)
from training.decision.grade_fit import rubric_rule

ITEM = JudgeItem(
    id="capital",
    question="What is the capital of Australia?",
    answers=("Sydney is the capital of Australia, a vibrant harbour city.",),
    reference="Canberra is the capital.",
)
COMBINATION = rubric_rule(
    {
        "level": 0.5,
        "grade": 0.1,
        "check": 0.3,
        "likelihood": 0.2,
        "length": 0.05,
        "reference_words": 1.0,
    },
    intercept=1.0,
    cv_pearson=0.4,
    rows="320 rows",
)


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    yield from tiny_service(tiny_gguf_model, "tiny-rubric-grade")


@pytest.fixture(scope="module")
def head(tiny) -> StateHead:
    _, backend = tiny
    return random_reply_head(backend, 7)


# the head's rule: its states and the PMI's mean, the reference's likelihood and check; an
# answer's grade is its PMI's mean times 0.5
RECORD = record_of(
    {"pmi_mean": 0.5},
    states=1.0,
    pmi_mean=1.0,
    reference_likelihood=1.0,
    reference_check=2.0,
)


def _config(head: StateHead, grade: GradeRule | None, rubric_path: Path = HELPFULNESS_RUBRIC):
    rubric = load_rubric(rubric_path)
    base = JudgeConfig(
        protocol=Protocol.SINGLE,
        judge=JudgeSettings(template="pocketjudge-decision"),
        parts=JudgeParts(
            head=head, decision=RECORD, context_tokens=HEAD_CONTEXT, rubric_combination=grade
        ),
    )
    return with_changes(base, {"choice": CriteriaChoice(rubric=rubric)})


ONE_CRITERION = """
id: correctness_1to5
name: Correctness (1-5)
description: One criterion with a text for each level, as a Prometheus row's rubric.
criteria:
  - id: correctness
    name: Correctness
    description: Does the response give the right answer to the request?
    scale: {min: 1, max: 5}
    levels:
      1: Wrong.
      2: Mostly wrong.
      3: Partly right.
      4: Right with small errors.
      5: Right.
"""


def test_a_single_answers_reference_reads_are_kept_and_graded_by_the_combination(
    tiny, head, tmp_path
):
    service, _ = tiny
    rubric_path = tmp_path / "one.yaml"
    rubric_path.write_text(ONE_CRITERION, encoding="utf-8")
    read = service.judge(ITEM, _config(head, None, rubric_path))
    assert read.status is Status.OK
    parts = read.verdict_parts
    assert set(parts) == {"reference_likelihood", "reference_check"}  # read, not yet weighed
    combined = service.judge(ITEM, _config(head, COMBINATION, rubric_path))
    signals = signals_of(read, ITEM)
    assert signals is not None
    key = next(iter(read.answers[0].expected_criteria))
    assert combined.answers[0].expected_criteria[key] == pytest.approx(
        grade_of(COMBINATION, signals), abs=1e-3
    )
    assert combined.verdict_parts[READ_PART] == pytest.approx(signals["level"], abs=1e-3)
    assert combined.verdict_parts["rubric_grade_pearson"] == COMBINATION.cv_pearson
    assert combined.verdict_parts["rubric_grade_check"] == pytest.approx(
        0.3 * signals["check"], abs=1e-3
    )
    # "Sydney" states none of the reference's own words ("canberra")
    assert signals["reference_words"] == 0.0
    assert combined.answers[0].expected_overall == pytest.approx(read.answers[0].expected_overall)
    assert combined.overall_scale == (1, 10)  # the head's grade, beside the rubric's 1-5
    # without the reference nothing is read of it, and the rubric's read (its prompt without
    # the reference) stands
    alone = service.judge(
        ITEM, replace(_config(head, COMBINATION, rubric_path), use_reference=False)
    )
    assert alone.verdict_parts is None
    assert 1 <= alone.answers[0].expected_criteria[key] <= 5


def test_a_rubric_unlike_the_fits_keeps_its_read_levels(tiny, head):
    service, _ = tiny
    # several criteria (the shipped helpfulness rubric): the combination was fitted on one
    judged = service.judge(ITEM, _config(head, COMBINATION))
    assert judged.status is Status.OK and READ_PART not in (judged.verdict_parts or {})
    assert len(judged.answers[0].expected_criteria) > 1


def test_the_default_judges_record_holds_its_combination_and_a_bad_one_is_named(tmp_path):
    """The rubric grade is a part of the judge's decision record (its `rubric_grade`), loaded
    with the rest; a record whose rubric grade is malformed is refused naming the field."""
    import yaml

    from app.deciding.decision import load_decision
    from models.registry import load_registry

    config = judge_config(load_registry().get())
    shipped = config.parts.rubric_combination
    assert shipped is not None and shipped == config.parts.decision.rubric_grade
    assert shipped.scale == (1, 5) and set(shipped.weights()) <= set(SIGNALS)
    assert all(s.bounds is not None for s in shipped.signals)  # each held in its fitted range
    data = shipped.model_dump(mode="json")
    data["scale"] = [1]
    path = tmp_path / "decision.yaml"
    record = config.parts.decision.model_dump(mode="json") | {"rubric_grade": data}
    path.write_text(yaml.safe_dump(record), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"decision\.yaml: rubric_grade\.scale"):
        load_decision(path)
