"""What a criterion is to the engine, shared by the scenario catalog and rubrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from models.foundation.datafiles import FieldError

LIBRARY_SCALE = (1, 10)
Aggregate = Literal["weighted_mean", "sum"]
ID_PATTERN = r"^[a-z][a-z0-9_]*$"


class FrozenModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


Id = Annotated[str, Field(pattern=ID_PATTERN)]
Text = Annotated[str, Field(min_length=1)]


class CriterionSpec(FrozenModel):
    """The engine's uniform view of a criterion, from the library or from a rubric."""

    key: str
    name: str
    description: str
    scale_min: int = LIBRARY_SCALE[0]
    scale_max: int = LIBRARY_SCALE[1]
    weight: float = 1.0
    levels: dict[str, str] = Field(default_factory=dict)
    category: str | None = None  # the library's (basic, style, content, format); a rubric's: None


def default_weight(index: int) -> float:
    """The first two criteria of a scenario are the most important and count double."""
    return 2.0 if index < 2 else 1.0


def check_unique(values: Sequence[str], field_name: str, what: str, suffix: str = "") -> None:
    seen: dict[str, int] = {}
    for i, value in enumerate(values):
        if value in seen:
            raise FieldError(
                f"{field_name}[{i}]{suffix}",
                f"duplicate {what} '{value}' (first at {field_name}[{seen[value]}])",
            )
        seen[value] = i
