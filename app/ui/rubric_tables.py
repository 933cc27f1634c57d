"""A rubric as two editable tables (criteria, levels) and back. Pure: no Streamlit.

The rubric editor shows a `Rubric` as a criteria table (id, name, description, scale,
weight) and a levels table (criterion, scores such as "5" or "3-4", description). The
tables go back through the same validation as a rubric file, so the editor's errors read
like a file's: `criteria[1].levels: no level for score(s) 3; levels must cover 1-5`.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from app.catalog.rubrics import Rubric
from models.foundation.datafiles import validate

CRITERIA_COLUMNS = ("id", "name", "description", "min", "max", "weight")
LEVEL_COLUMNS = ("criterion", "scores", "description")
EDITOR_SOURCE = Path("rubric editor")


def rubric_tables(rubric: Rubric) -> tuple[pd.DataFrame, pd.DataFrame]:
    criteria = [
        {
            "id": c.id,
            "name": c.name,
            "description": c.description,
            "min": c.scale_min,
            "max": c.scale_max,
            "weight": c.weight,
        }
        for c in rubric.criteria
    ]
    levels = [
        {"criterion": c.id, "scores": key, "description": text}
        for c in rubric.criteria
        for key, text in c.levels.items()
    ]
    return _frame(criteria, CRITERIA_COLUMNS), _frame(levels, LEVEL_COLUMNS)


def blank_rubric() -> Rubric:
    """A starting point for a new rubric: one 1-5 criterion with a description per score."""
    return Rubric(
        id="my_rubric",
        name="My rubric",
        description="What this rubric checks.",
        criteria=(
            {
                "id": "quality",
                "name": "Quality",
                "description": "How well the answer does what was asked.",
                "scale_min": 1,
                "scale_max": 5,
                "levels": {
                    "1": "Fails the task.",
                    "2": "Mostly fails the task.",
                    "3": "Partly does the task.",
                    "4": "Does the task with small flaws.",
                    "5": "Does the task fully and well.",
                },
            },
        ),
    )


def rubric_from_tables(
    rubric_id: str,
    name: str,
    description: str,
    aggregate: str,
    criteria: pd.DataFrame,
    levels: pd.DataFrame,
) -> Rubric:
    """Build and validate a rubric; raises ConfigError naming the field to fix."""
    rows = [_clean(row) for row in criteria.to_dict("records")]
    rows = [row for row in rows if any(row.get(c) for c in ("id", "name", "description"))]
    by_id: dict[str, dict[str, Any]] = {}
    entries: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {
            "id": row.get("id") or "",
            "name": row.get("name") or "",
            "description": row.get("description") or "",
            "scale": {"min": _whole(row.get("min")), "max": _whole(row.get("max"))},
            "levels": {},
        }
        if row.get("weight") is not None:
            entry["weight"] = row["weight"]
        entries.append(entry)
        by_id.setdefault(str(entry["id"]), entry)
    unknown: list[str] = []
    for row in (_clean(r) for r in levels.to_dict("records")):
        if not any(row.values()):
            continue
        owner = by_id.get(str(row.get("criterion") or ""))
        if owner is None:
            unknown.append(str(row.get("criterion")))
            continue
        key = re.sub(r"\s+", "", str(row.get("scores") or ""))
        owner["levels"][key] = row.get("description") or ""
    data = {
        "id": rubric_id.strip(),
        "name": name.strip(),
        "description": description.strip(),
        "aggregate": aggregate,
        "criteria": entries,
    }
    rubric = validate(Rubric, data, EDITOR_SOURCE)
    if unknown:
        known = ", ".join(by_id) or "none"
        raise ValueError(
            f"levels name criteria that are not in the criteria table: {', '.join(unknown)} "
            f"(criteria: {known}); fix the 'criterion' column"
        )
    return rubric


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    """Editor cells: NaN and blank strings become None, text is stripped."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, float) and math.isnan(value):
            value = None
        elif isinstance(value, str):
            value = value.strip() or None
        out[key] = value
    return out


def _whole(value: Any) -> Any:
    """A scale bound typed as 5.0 (numeric editor columns are floats) becomes 5."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
