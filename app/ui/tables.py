"""Tables, downloads and text the pages show, built from core records. Pure: no Streamlit."""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from app.catalog.criteria_types import LIBRARY_SCALE
from app.catalog.rubrics import Rubric
from app.catalog.scenarios import Catalog
from app.catalog.scoring import ScoringRule
from app.io.layouts import row_id
from app.io.reader import InputRow
from app.io.writer import to_csv, write_jsonl
from app.records import Judgment, Status

PREVIEW_COLUMNS = ("line", "id", "status", "layout", "answers", "reference", "question", "error")
RESULT_COLUMNS = (
    "line",
    "id",
    "status",
    "protocol",
    "scenario",
    "verdict",
    "overall",
    "confidence",
    "consistent",
    "latency_s",
    "error",
)
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")


def preview_frame(
    rows: Sequence[InputRow],
    text_chars: int = 80,
    problems: Mapping[int, str] | None = None,
) -> pd.DataFrame:
    """One row per input row, with the error that will make it an `error` row.

    `problems` maps a line to why its readable row cannot be judged with the chosen
    settings (`app.judging.item_checks.row_problem`: the protocol's answer count, the criteria).
    """
    problems = problems or {}
    records = []
    for row in rows:
        item = row.item
        problem = str(row.error) if row.error else problems.get(row.line)
        records.append(
            {
                "line": row.line,
                "id": item.id if item else row_id(row.raw, row.line),
                "status": "error" if problem else "ok",
                "layout": item.metadata.get("layout") if item else None,
                "answers": len(item.answers) if item else None,
                "reference": bool(item.reference) if item else None,
                "question": _short(item.question, text_chars) if item else None,
                "error": problem,
            }
        )
    return pd.DataFrame(records, columns=list(PREVIEW_COLUMNS))


def results_frame(judgments: Sequence[Judgment]) -> pd.DataFrame:
    """The live results table: the verdict and overall scores of every judged row."""
    records = []
    for judgment in judgments:
        records.append(
            {
                "line": judgment.line,
                "id": judgment.id,
                "status": judgment.status.value,
                "protocol": judgment.protocol.value if judgment.protocol else None,
                "scenario": judgment.scenario,
                "verdict": verdict_text(judgment),
                "overall": " / ".join(f"{a.overall:g}" for a in judgment.answers) or None,
                "confidence": judgment.confidence,
                "consistent": judgment.consistent,
                "latency_s": judgment.latency_s,
                "error": judgment.error,
            }
        )
    return pd.DataFrame(records, columns=list(RESULT_COLUMNS))


def verdict_text(judgment: Judgment) -> str | None:
    """'A', 'B', 'tie', a ranking '2 > 1 > 3', or the grade(s) of a graded row."""
    if judgment.status is not Status.OK:
        return None
    if judgment.winner == "uncertain":
        return f"uncertain (leans {judgment.leaning})"
    if judgment.winner:
        return judgment.winner
    if judgment.ranking:
        return " > ".join(str(n) for n in judgment.ranking)
    return " / ".join(f"{a.overall:g}" for a in judgment.answers)


def jsonl_bytes(judgments: Sequence[Judgment]) -> bytes:
    buffer = io.BytesIO()
    write_jsonl(judgments, buffer)
    return buffer.getvalue()


def csv_bytes(judgments: Sequence[Judgment]) -> bytes:
    buffer = io.StringIO()
    to_csv(judgments, buffer)
    return buffer.getvalue().encode("utf-8")


def criterion_names(
    judgment: Judgment, catalog: Catalog, rubric: Rubric | None = None
) -> dict[str, str]:
    """Display names of the criteria a judgment used (rubric ones first, then the library)."""
    names: dict[str, str] = {}
    rubric_names = {c.id: c.name for c in rubric.criteria} if rubric else {}
    for key in judgment.criteria:
        if judgment.scenario and judgment.scenario.startswith("rubric:") and key in rubric_names:
            names[key] = rubric_names[key]
        elif key in catalog.criteria:
            names[key] = catalog.criteria[key].name
        else:
            names[key] = rubric_names.get(key, key)
    return names


def rubric_scale(rubric: Rubric | None, judgment: Judgment) -> tuple[float, float] | None:
    """The criterion axis: 1-10 for library criteria, the rubric's scales otherwise."""
    if not _uses_rubric(judgment):
        return LIBRARY_SCALE
    if rubric is None:
        return None
    return (min(c.scale_min for c in rubric.criteria), max(c.scale_max for c in rubric.criteria))


def overall_top(rubric: Rubric | None, judgment: Judgment) -> float | None:
    """The highest overall score possible (a sum rubric adds its criteria's maxima; a grade
    on a scale of its own, such as a head's 1-10 beside a 1-5 rubric, its scale's)."""
    if judgment.overall_scale is not None:
        return judgment.overall_scale[1]
    if not _uses_rubric(judgment):
        return LIBRARY_SCALE[1]
    if rubric is None:
        return None
    return ScoringRule(rubric.specs(), rubric.aggregate).overall_range[1]


def _uses_rubric(judgment: Judgment) -> bool:
    return bool(judgment.scenario and judgment.scenario.startswith("rubric:"))


def plain_feedback(text: str | None) -> str:
    """Feedback for Markdown display: images become their alt text (nothing is fetched)."""
    return _IMAGE.sub(lambda m: f"[image: {m.group(1)}]", text or "")


def status_counts(judgments: Sequence[Judgment]) -> Mapping[str, int]:
    return {status.value: sum(j.status is status for j in judgments) for status in Status}


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def duration_text(seconds: float | None) -> str:
    """'45 s', '3 min 05 s', '2 h 10 min'; '?' when unknown."""
    if seconds is None:
        return "?"
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def progress_text(done: int, total: int, rate: float, eta_s: float | None, state: str) -> str:
    """The line under the batch progress bar: count, rate, ETA and state."""
    text = f"{done} / {total} rows · {rate:.2f} rows/s"
    if state in ("running", "stopping") and done < total:
        text += f" · about {duration_text(eta_s)} left"
    return text + f" · {state}"
