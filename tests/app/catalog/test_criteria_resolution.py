"""Which criteria judge an item: run rubric > row rubric > run criteria > row criteria >
scenario."""

from __future__ import annotations

from typing import Any

import pytest

from app.catalog.criteria_resolution import CriteriaChoice, resolve
from app.catalog.rubrics import Rubric, RubricCriterion
from app.catalog.scenarios import Catalog, load_catalog
from app.records import JudgeItem


def _rubric(rubric_id: str) -> Rubric:
    criterion = RubricCriterion(
        id="quality",
        name="Quality",
        description="Is it good?",
        scale_min=1,
        scale_max=5,
        levels={"1-2": "poor", "3": "fair", "4-5": "good"},
    )
    return Rubric(id=rubric_id, name=rubric_id, description="d", criteria=(criterion,))


RUN_RUBRIC, ROW_RUBRIC = _rubric("run_rubric"), _rubric("row_rubric")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def _item(**fields: Any) -> JudgeItem:
    return JudgeItem(id="x", question="Q", answers=("a",), **fields)


# (case, choice, item fields, expected label, expected criterion keys (None: the scenario's))
PRECEDENCE = [
    (
        "run rubric beats everything",
        CriteriaChoice(scenario="code_generation", criteria=("clarity",), rubric=RUN_RUBRIC),
        {"rubric": ROW_RUBRIC, "criteria": ("accuracy",), "scenario": "math_reasoning"},
        "rubric:run_rubric",
        ("quality",),
    ),
    (
        "row rubric beats the run's and the row's criteria",
        CriteriaChoice(scenario="code_generation", criteria=("clarity",)),
        {"rubric": ROW_RUBRIC, "criteria": ("accuracy",), "scenario": "math_reasoning"},
        "rubric:row_rubric",
        ("quality",),
    ),
    (
        "run criteria beat the row's",
        CriteriaChoice(criteria=("clarity",)),
        {"criteria": ("accuracy",), "scenario": "math_reasoning"},
        "math_reasoning",
        ("clarity",),
    ),
    (
        "row criteria beat the scenario's",
        CriteriaChoice(),
        {"criteria": ("accuracy",), "scenario": "math_reasoning"},
        "math_reasoning",
        ("accuracy",),
    ),
    (
        "the row's scenario",
        CriteriaChoice(),
        {"scenario": "math_reasoning"},
        "math_reasoning",
        None,
    ),
    (
        "the run's scenario beats the row's",
        CriteriaChoice(scenario="code_generation"),
        {"scenario": "math_reasoning"},
        "code_generation",
        None,
    ),
    ("the default scenario", CriteriaChoice(scenario="auto"), {}, "default", None),
]


@pytest.mark.parametrize(
    ("choice", "fields", "label", "keys"),
    [case[1:] for case in PRECEDENCE],
    ids=[case[0] for case in PRECEDENCE],
)
def test_precedence(
    catalog: Catalog,
    choice: CriteriaChoice,
    fields: dict[str, Any],
    label: str,
    keys: tuple[str, ...] | None,
) -> None:
    resolved = resolve(choice, _item(**fields), catalog)
    assert resolved.label == label
    if keys is None:
        assert resolved.rule.keys == tuple(catalog.get_scenario(label).criteria)
    else:
        assert resolved.rule.keys == keys


def test_a_rubric_keeps_its_scale_and_levels_and_has_no_scenario(catalog: Catalog) -> None:
    resolved = resolve(CriteriaChoice(), _item(rubric=ROW_RUBRIC, scenario="code"), catalog)
    assert resolved.scenario is None
    (spec,) = resolved.rule.specs
    assert (spec.scale_min, spec.scale_max) == (1, 5)
    assert spec.levels == {"1-2": "poor", "3": "fair", "4-5": "good"}
