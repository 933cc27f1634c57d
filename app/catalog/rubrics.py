"""Rubrics: user-editable sets of criteria with their own scales and level descriptions,
validated on load from YAML (errors name the file and the field path)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, model_validator

from app.catalog.criteria_types import (
    Aggregate,
    CriterionSpec,
    FrozenModel,
    Id,
    Text,
    check_unique,
    default_weight,
)
from models.foundation.datafiles import FieldError, read_mapping, validate

RUBRICS_DIR = Path(__file__).resolve().parents[2] / "scenarios" / "rubrics"
_LEVEL_KEY = re.compile(r"^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$")


class RubricLevel(FrozenModel):
    """One level of a rubric criterion: the scores `low`..`high` share a description."""

    low: int
    high: int
    description: str

    @property
    def key(self) -> str:
        return _level_key(self.low, self.high)


class RubricCriterion(FrozenModel):
    """A rubric criterion. In files the scale is written `scale: {min: 0, max: 5}`."""

    id: Id
    name: Text
    description: Text
    scale_min: int
    scale_max: int
    levels: dict[str, str]
    weight: float | None = Field(default=None, gt=0)

    @classmethod
    def file_field_names(cls) -> list[str]:
        """Field names as written in files (`scale` holds scale_min and scale_max)."""
        return ["id", "name", "description", "scale", "levels", "weight"]

    @model_validator(mode="before")
    @classmethod
    def _from_file_form(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if "scale" in data:
            if "scale_min" in data or "scale_max" in data:
                raise FieldError("scale", "give either 'scale' or 'scale_min'/'scale_max'")
            data.update(_split_scale(data.pop("scale")))
        if isinstance(data.get("levels"), dict):
            data["levels"] = _normalise_levels(data["levels"])
        return data

    @model_validator(mode="after")
    def _check_scale_and_levels(self) -> RubricCriterion:
        if self.scale_min >= self.scale_max:
            raise FieldError(
                "scale", f"min ({self.scale_min}) must be below max ({self.scale_max})"
            )
        _check_level_coverage(self.levels, self.scale_min, self.scale_max)
        return self

    def level_list(self) -> tuple[RubricLevel, ...]:
        return tuple(
            RubricLevel(low=low, high=high, description=text)
            for (low, high), text in ((_parse_level_key(k), v) for k, v in self.levels.items())
        )

    def describe(self, score: int) -> str | None:
        """The description of the level containing `score`, or None outside the scale."""
        return next(
            (lv.description for lv in self.level_list() if lv.low <= score <= lv.high), None
        )


class Rubric(FrozenModel):
    """A custom set of criteria. `sum` adds the points; `weighted_mean` averages them."""

    id: Id
    name: Text
    description: Text
    aggregate: Aggregate = "weighted_mean"
    criteria: tuple[RubricCriterion, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> Rubric:
        check_unique([c.id for c in self.criteria], "criteria", "criterion id", suffix=".id")
        return self

    def weight_of(self, index: int) -> float:
        """Explicit weight, else 2.0 for the first two criteria (1.0 for all in a sum)."""
        weight = self.criteria[index].weight
        if weight is not None:
            return weight
        return 1.0 if self.aggregate == "sum" else default_weight(index)

    def specs(self) -> tuple[CriterionSpec, ...]:
        return tuple(
            CriterionSpec(
                key=c.id,
                name=c.name,
                description=c.description,
                scale_min=c.scale_min,
                scale_max=c.scale_max,
                weight=self.weight_of(i),
                levels=dict(c.levels),
            )
            for i, c in enumerate(self.criteria)
        )


def load_rubric(path: Path | str) -> Rubric:
    """Load and validate one rubric file."""
    path = Path(path)
    return validate(Rubric, read_mapping(path), path)


def save_rubric(rubric: Rubric, path: Path | str) -> Path:
    """Write `rubric` as YAML in the same form `load_rubric` reads."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(rubric_to_dict(rubric), sort_keys=False, allow_unicode=True, width=100)
    path.write_text(text, encoding="utf-8")
    return path


def rubric_to_dict(rubric: Rubric) -> dict[str, Any]:
    return {
        "id": rubric.id,
        "name": rubric.name,
        "description": rubric.description,
        "aggregate": rubric.aggregate,
        "criteria": [_criterion_to_dict(c) for c in rubric.criteria],
    }


def builtin_rubrics(directory: Path | str = RUBRICS_DIR) -> dict[str, Path]:
    """Rubric files shipped in `directory`, keyed by file stem."""
    files = sorted(Path(directory).glob("*.yaml")) + sorted(Path(directory).glob("*.yml"))
    return {p.stem: p for p in files}


def _criterion_to_dict(criterion: RubricCriterion) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": criterion.id,
        "name": criterion.name,
        "description": criterion.description,
        "scale": {"min": criterion.scale_min, "max": criterion.scale_max},
        "levels": dict(criterion.levels),
    }
    if criterion.weight is not None:
        data["weight"] = criterion.weight
    return data


def _split_scale(scale: Any) -> dict[str, Any]:
    if isinstance(scale, (list, tuple)) and len(scale) == 2:
        return {"scale_min": scale[0], "scale_max": scale[1]}
    if not isinstance(scale, dict):
        raise FieldError("scale", "expected a mapping like {min: 1, max: 5}")
    for key in scale:
        if key not in ("min", "max"):
            raise FieldError(f"scale.{key}", "unknown field; allowed: min, max")
    for key in ("min", "max"):
        if key not in scale:
            raise FieldError(f"scale.{key}", "required field is missing")
    return {"scale_min": scale["min"], "scale_max": scale["max"]}


def _level_key(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _parse_level_key(key: Any) -> tuple[int, int]:
    if isinstance(key, int) and not isinstance(key, bool):
        return key, key
    match = _LEVEL_KEY.match(key) if isinstance(key, str) else None
    if match is None:
        raise FieldError(f"levels.{key}", "a level key is a score like '5' or a range like '3-4'")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if low > high:
        raise FieldError(f"levels.{key}", f"range starts above its end ({low} > {high})")
    return low, high


def _normalise_levels(levels: Mapping[Any, Any]) -> dict[str, Any]:
    """Keys become '5' or '3-4', sorted by score; the same key written twice is an overlap."""
    parsed: dict[tuple[int, int], Any] = {}
    for key, text in levels.items():
        bounds = _parse_level_key(key)
        if bounds in parsed:
            raise FieldError(f"levels.{key}", "this score or range is given twice")
        parsed[bounds] = text
    return {_level_key(*bounds): parsed[bounds] for bounds in sorted(parsed)}


def _check_level_coverage(levels: Mapping[str, str], low: int, high: int) -> None:
    if not levels:
        raise FieldError("levels", f"no levels; they must cover every score {low}-{high}")
    bounds = sorted(_parse_level_key(k) for k in levels)
    for lo, hi in bounds:
        if lo < low or hi > high:
            key = _level_key(lo, hi)
            raise FieldError(f"levels.{key}", f"outside the scale {low}-{high}")
    for (prev_lo, prev_hi), (lo, hi) in pairwise(bounds):
        if lo <= prev_hi:
            previous = _level_key(prev_lo, prev_hi)
            raise FieldError(f"levels.{_level_key(lo, hi)}", f"overlaps level '{previous}'")
    covered = {score for lo, hi in bounds for score in range(lo, hi + 1)}
    missing = [str(score) for score in range(low, high + 1) if score not in covered]
    if missing:
        raise FieldError(
            "levels",
            f"no level for score(s) {', '.join(missing)}; levels must cover {low}-{high}",
        )
