"""Scenarios and the criteria library: validated models and their YAML loader.

The catalog (scenarios.yaml + criteria.yaml) says which criteria a judge checks for each kind
of request. A rubric (app/catalog/rubrics.py) is a user-editable set of criteria with
their own scales and level descriptions. Both are reduced to `CriterionSpec`
(app/catalog/criteria_types.py), the one view of a criterion the engine uses.

Every problem found while loading is raised as `ConfigError(file, field path, message)`, where
the field path looks like `scenarios[12].criteria[3]`, so a user can find it in the file.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from pydantic import Field, model_validator

from app.catalog.criteria_types import (
    CriterionSpec,
    FrozenModel,
    Id,
    Text,
    check_unique,
    default_weight,
)
from models.foundation.datafiles import FieldError, read_mapping, validate
from models.foundation.errors import ConfigError, UnknownNameError

SCENARIOS_DIR = Path(__file__).resolve().parents[2] / "scenarios"
SCENARIOS_FILE = "scenarios.yaml"
CRITERIA_FILE = "criteria.yaml"
DEFAULT_SCENARIO = "default"
CATEGORIES = ("basic", "style", "content", "format")
MIN_CRITERIA, MAX_CRITERIA = 5, 10

Category = Literal["basic", "style", "content", "format"]


# --------------------------------------------------------------------------- models


class Criterion(FrozenModel):
    """A library criterion, scored 1-10."""

    id: Id
    name: Text
    description: Text
    category: Category


class Scenario(FrozenModel):
    """A kind of request, with its criteria ordered by importance."""

    id: Id
    name: Text
    group: Text
    description: Text
    criteria: tuple[str, ...] = Field(min_length=MIN_CRITERIA, max_length=MAX_CRITERIA)
    aliases: tuple[Id, ...] = ()

    @model_validator(mode="after")
    def _no_repeats(self) -> Scenario:
        check_unique(self.criteria, "criteria", "criterion")
        check_unique(self.aliases, "aliases", "alias")
        return self


class _CriteriaFile(FrozenModel):
    criteria: tuple[Criterion, ...] = Field(min_length=1)


class _ScenariosFile(FrozenModel):
    groups: tuple[str, ...] = Field(min_length=1)
    scenarios: tuple[Scenario, ...] = Field(min_length=1)


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True, eq=False)
class Catalog:
    """All scenarios and library criteria. Shared through a cache: its mappings are read-only."""

    root: Path
    scenarios: Mapping[str, Scenario]
    criteria: Mapping[str, Criterion]
    groups: Mapping[str, tuple[str, ...]]
    _names: Mapping[str, str] = field(repr=False)  # normalised id or alias -> scenario id

    def get_scenario(self, name: str) -> Scenario:
        scenario_id = self._names.get(_normalise_name(name))
        if scenario_id is None:
            raise UnknownNameError("scenario", name, list(self.scenarios))
        return self.scenarios[scenario_id]

    def get_criterion(self, name: str) -> Criterion:
        criterion = self.criteria.get(_normalise_name(name))
        if criterion is None:
            raise UnknownNameError("criterion", name, list(self.criteria))
        return criterion

    def criteria_by_category(self) -> dict[str, tuple[Criterion, ...]]:
        return {
            category: tuple(c for c in self.criteria.values() if c.category == category)
            for category in CATEGORIES
        }

    def search(self, text: str) -> tuple[Scenario, ...]:
        """Scenarios whose id, name, description, group or aliases contain `text`."""
        needle = text.strip().lower()
        return tuple(
            s
            for s in self.scenarios.values()
            if _contains(needle, s.id, s.name, s.description, s.group, *s.aliases)
        )

    def search_criteria(self, text: str) -> tuple[Criterion, ...]:
        needle = text.strip().lower()
        return tuple(
            c for c in self.criteria.values() if _contains(needle, c.id, c.name, c.description)
        )

    def specs_for(
        self, scenario_id: str | None = None, criteria_ids: Sequence[str] | None = None
    ) -> tuple[CriterionSpec, ...]:
        """Criteria to judge with: `criteria_ids` if given, else the scenario's (or default's)."""
        if criteria_ids:
            chosen = [self.get_criterion(name) for name in criteria_ids]
        else:
            scenario = self.get_scenario(scenario_id or DEFAULT_SCENARIO)
            chosen = [self.criteria[c] for c in scenario.criteria]
        unique = list(dict.fromkeys(chosen))
        return tuple(library_spec(c, default_weight(i)) for i, c in enumerate(unique))


def library_spec(criterion: Criterion, weight: float = 1.0) -> CriterionSpec:
    return CriterionSpec(
        key=criterion.id,
        name=criterion.name,
        description=criterion.description,
        weight=weight,
        category=criterion.category,
    )


def load_catalog(root: Path | str = SCENARIOS_DIR) -> Catalog:
    """Load and cross-check scenarios.yaml and criteria.yaml under `root` (cached per root)."""
    return _load_catalog(Path(root).resolve())


@lru_cache(maxsize=8)
def _load_catalog(root: Path) -> Catalog:
    criteria_path, scenarios_path = root / CRITERIA_FILE, root / SCENARIOS_FILE
    criteria = _load_criteria(criteria_path)
    groups, scenarios = _load_scenarios(scenarios_path, criteria)
    names = {s.id: s.id for s in scenarios}
    names.update({_normalise_name(alias): s.id for s in scenarios for alias in s.aliases})
    return Catalog(
        root=root,
        scenarios=MappingProxyType({s.id: s for s in scenarios}),
        criteria=MappingProxyType(criteria),
        groups=MappingProxyType(groups),
        _names=MappingProxyType(names),
    )


def _load_criteria(path: Path) -> dict[str, Criterion]:
    parsed = validate(_CriteriaFile, read_mapping(path), path)
    _raise_on_duplicates(path, "criteria", [c.id for c in parsed.criteria], "criterion")
    return {c.id: c for c in parsed.criteria}


def _load_scenarios(
    path: Path, criteria: Mapping[str, Criterion]
) -> tuple[dict[str, tuple[str, ...]], list[Scenario]]:
    """Scenario ids per group, and the scenarios in group order then file order."""
    parsed = validate(_ScenariosFile, read_mapping(path), path)
    _check_scenarios(path, parsed, criteria)
    groups = {g: tuple(s.id for s in parsed.scenarios if s.group == g) for g in parsed.groups}
    for i, (group, members) in enumerate(groups.items()):
        if not members:
            raise ConfigError(path, f"groups[{i}]", f"group '{group}' has no scenarios")
    by_id = {s.id: s for s in parsed.scenarios}
    return groups, [by_id[s] for members in groups.values() for s in members]


def _check_scenarios(path: Path, parsed: _ScenariosFile, criteria: Mapping[str, Criterion]) -> None:
    _raise_on_duplicates(path, "groups", parsed.groups, "group", suffix="")
    _raise_on_duplicates(path, "scenarios", [s.id for s in parsed.scenarios], "scenario")
    _check_aliases(path, parsed.scenarios)
    for i, scenario in enumerate(parsed.scenarios):
        _check_scenario_refs(path, i, scenario, parsed.groups, criteria)
    if DEFAULT_SCENARIO not in {s.id for s in parsed.scenarios}:
        raise ConfigError(path, "scenarios", f"a scenario with id '{DEFAULT_SCENARIO}' is required")


def _check_scenario_refs(
    path: Path,
    index: int,
    scenario: Scenario,
    groups: Sequence[str],
    criteria: Mapping[str, Criterion],
) -> None:
    where = f"scenarios[{index}]"
    if scenario.group not in groups:
        valid = ", ".join(groups)
        raise ConfigError(
            path, f"{where}.group", f"unknown group '{scenario.group}'; valid: {valid}"
        )
    for k, criterion_id in enumerate(scenario.criteria):
        if criterion_id not in criteria:
            close = difflib.get_close_matches(criterion_id, list(criteria), n=5, cutoff=0.5)
            valid = ", ".join(close) + ", ..." if close else "..."
            raise ConfigError(
                path,
                f"{where}.criteria[{k}]",
                f"unknown criterion '{criterion_id}'; valid: {valid} (all in {CRITERIA_FILE})",
            )


def _check_aliases(path: Path, scenarios: Sequence[Scenario]) -> None:
    taken = {s.id: f"scenario id '{s.id}'" for s in scenarios}
    for i, scenario in enumerate(scenarios):
        for k, alias in enumerate(scenario.aliases):
            name = _normalise_name(alias)
            if name in taken:
                raise ConfigError(
                    path,
                    f"scenarios[{i}].aliases[{k}]",
                    f"alias '{alias}' clashes with {taken[name]}",
                )
            taken[name] = f"alias '{alias}' of '{scenario.id}'"


# --------------------------------------------------------------------------- helpers


def _normalise_name(name: str) -> str:
    """'Post Summarization', 'post-summarization' -> 'post_summarization'."""
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def _contains(needle: str, *haystack: str) -> bool:
    return any(needle in text.lower() for text in haystack)


def _raise_on_duplicates(
    path: Path, field_name: str, values: Sequence[str], what: str, suffix: str = ".id"
) -> None:
    try:
        check_unique(values, field_name, what, suffix)
    except FieldError as exc:
        raise ConfigError(path, exc.subpath, exc.message) from None
