"""Decide which criteria judge an item: a rubric, custom criteria, or a scenario's."""

from __future__ import annotations

from dataclasses import dataclass

from app.catalog.rubrics import Rubric
from app.catalog.scenarios import DEFAULT_SCENARIO, Catalog, Scenario
from app.catalog.scoring import ScoringRule
from app.records import JudgeItem

AUTO = "auto"


@dataclass(frozen=True)
class CriteriaChoice:
    """What the user chose for a run; the per-item result comes from `resolve`."""

    scenario: str | None = None  # None or "auto": the item's own scenario, else default
    criteria: tuple[str, ...] | None = None  # custom criteria replace the scenario's
    rubric: Rubric | None = None  # a rubric replaces both, and the row's own rubric


@dataclass(frozen=True)
class ResolvedCriteria:
    rule: ScoringRule
    scenario: Scenario | None
    label: str  # what the judgment records as its scenario


def resolve(choice: CriteriaChoice, item: JudgeItem, catalog: Catalog) -> ResolvedCriteria:
    """The criteria that judge `item`, the first of: the run's rubric, the row's rubric, the
    run's criteria, the row's criteria, the scenario's (the run's, else the row's, else the
    default). A rubric is judged without a scenario (it is labelled `rubric:<id>`).

    Raises UnknownNameError for an unknown scenario or criterion.
    """
    rubric = choice.rubric if choice.rubric is not None else item.rubric
    if rubric is not None:
        return ResolvedCriteria(
            ScoringRule(rubric.specs(), rubric.aggregate), None, f"rubric:{rubric.id}"
        )
    scenario_name = choice.scenario if choice.scenario not in (None, AUTO) else item.scenario
    scenario = catalog.get_scenario(scenario_name or DEFAULT_SCENARIO)
    criteria = choice.criteria or item.criteria
    specs = catalog.specs_for(scenario.id, list(criteria) if criteria else None)
    return ResolvedCriteria(ScoringRule(specs), scenario, scenario.id)
