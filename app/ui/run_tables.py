"""Tables and filters of the Runs page, built from the run history's records. Pure: no
Streamlit."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import pandas as pd

from app.runs.compare import RunComparison
from app.runs.store import RunInfo

RUN_COLUMNS = (
    "id",
    "started",
    "status",
    "source",
    "model",
    "input file",
    "scenario",
    "protocol",
    "rows",
    "ok",
    "unparsed",
    "error",
)
FLIP_COLUMNS = ("id", "question", "decision A", "decision B", "feedback A", "feedback B")
EMPTY_HINT = (
    "No runs yet. Judge a batch on the Batch page or with `python -m app judge`: "
    "every batch is kept here, to open again and compare."
)


@dataclass(frozen=True)
class RunFilter:
    """What the Runs page shows: runs started in `days` (first, last; None: any day) whose
    model, input file, scenario and status are among those chosen (empty: any)."""

    days: tuple[date, date] | None = None
    models: Collection[str] = ()
    inputs: Collection[str] = ()
    scenarios: Collection[str] = ()
    statuses: Collection[str] = ()

    def keeps(self, run: RunInfo) -> bool:
        if self.days is not None:
            first, last = self.days
            if not first.isoformat() <= run.day <= last.isoformat():
                return False
        chosen = (
            (self.models, run.model),
            (self.inputs, run.input_name),
            (self.scenarios, run.scenario),
            (self.statuses, run.status),
        )
        return all(not allowed or value in allowed for allowed, value in chosen)


def filter_runs(runs: Sequence[RunInfo], chosen: RunFilter) -> list[RunInfo]:
    return [run for run in runs if chosen.keeps(run)]


def run_days(runs: Sequence[RunInfo]) -> tuple[date, date]:
    """The first and the last day a run started on (the runs must not be empty)."""
    days = sorted(run.day for run in runs)
    return date.fromisoformat(days[0]), date.fromisoformat(days[-1])


def choices(runs: Sequence[RunInfo], field: str) -> list[str]:
    """The values a run field takes, sorted, without the missing ones (for a filter)."""
    return sorted({value for run in runs if (value := getattr(run, field)) is not None})


def started_text(run: RunInfo) -> str:
    """'2026-11-25 22:10:03' (UTC, as the history stores it)."""
    return run.started[:19].replace("T", " ")


def run_label(run: RunInfo) -> str:
    """A run in a picker: its id, input file, model and status."""
    return f"{run.id} · {run.input_name or '?'} · {run.model or '?'} · {run.status}"


def runs_frame(runs: Sequence[RunInfo]) -> pd.DataFrame:
    """One row per run, newest first as given; counts of the rows stored by status."""
    records = [
        {
            "id": run.id,
            "started": started_text(run),
            "status": run.status,
            "source": run.source,
            "model": run.model,
            "input file": run.input_name,
            "scenario": run.scenario,
            "protocol": run.protocol,
            "rows": run.rows,
            "ok": run.counts.get("ok", 0),
            "unparsed": run.counts.get("unparsed", 0),
            "error": run.counts.get("error", 0),
        }
        for run in runs
    ]
    return pd.DataFrame(records, columns=list(RUN_COLUMNS))


def run_facts(run: RunInfo) -> pd.DataFrame:
    """What a run judged, with what and when, as a two-column table."""
    total = f"{run.rows} of {run.total}" if run.total is not None else str(run.rows)
    facts = {
        "status": run.status,
        "source": run.source,
        "started": started_text(run),
        "finished": run.finished[:19].replace("T", " ") if run.finished else None,
        "input file": run.input_name,
        "input sha256": run.input_hash,
        "rows judged": total,
        "model": run.model,
        "template": run.template,
        "protocol": run.protocol,
        "scenario": run.scenario,
        "versions": ", ".join(f"{k} {v}" for k, v in run.versions.items()) or None,
    }
    return pd.DataFrame(
        [{"": key, "value": "-" if value is None else str(value)} for key, value in facts.items()]
    )


def flips_frame(comparison: RunComparison) -> pd.DataFrame:
    """The flipped rows, both decisions and both feedbacks side by side."""
    records = [
        {
            "id": flip.id,
            "question": flip.question,
            "decision A": flip.decision_a,
            "decision B": flip.decision_b,
            "feedback A": flip.feedback_a,
            "feedback B": flip.feedback_b,
        }
        for flip in comparison.flips
    ]
    return pd.DataFrame(records, columns=list(FLIP_COLUMNS))


def deltas_frame(deltas: Mapping[str, float], what: str) -> pd.DataFrame:
    """A `what` column and the mean change B - A of each."""
    return pd.DataFrame(
        [{what: key, "change (B - A)": value} for key, value in deltas.items()],
        columns=[what, "change (B - A)"],
    )


def signed(value: float | None) -> str:
    """'+0.5', '-1.25', '0', '-' for no value."""
    if value is None:
        return "-"
    return f"{value:+g}" if value else "0"
