"""Write judgments as JSONL (lossless, resumable) or CSV (flat, for spreadsheets).

JSONL rows are `Judgment.model_dump(mode="json")`, one per line, flushed as
they are written, so an interrupted run keeps every row it finished and the
file reads back with `Judgment.model_validate(json.loads(line))`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from app.io.layouts import row_id
from app.io.reader import InputRow
from app.records import Judgment, Protocol, Status

Output = str | os.PathLike[str] | IO[str] | IO[bytes]

HEAD_COLUMNS = (
    "id",
    "line",
    "status",
    "error",
    "protocol",
    "scenario",
    "winner",
    "leaning",
    "uncertain",
    "ranking",
)
CRITERIA_COLUMNS = ("criteria_verdict", "criteria_ranking", "criteria_note", "criteria_by_head")
TAIL_COLUMNS = (
    "confidence",
    "consistent",
    "swapped",
    "truncated",
    "mode",
    "feedback",
    "feedback_note",
    "model",
    "template",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "raw_output",
)


def write_jsonl(judgments: Iterable[Judgment], out: Output, *, append: bool = False) -> int:
    """Write one JSON object per judgment; return how many were written.

    `out` is a path (its folder is created; `append=True` adds to an existing
    file, e.g. to resume a run) or an open text or binary stream, which is
    flushed after every row and left open.
    """
    count = 0
    with _text_output(out, append=append, newline="\n") as stream:
        for judgment in judgments:
            stream.write(jsonl_line(judgment))
            stream.flush()
            count += 1
    return count


def jsonl_line(judgment: Judgment) -> str:
    data = judgment.model_dump(mode="json")
    line = json.dumps(data, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the input: escape it, don't fail the run
        line = json.dumps(data, ensure_ascii=True)
    return line + "\n"


def judgment_to_row(judgment: Judgment) -> dict[str, Any]:
    """One flat CSV row: answer n's scores become `overall_<n>` and `<criterion>_<n>`."""
    row: dict[str, Any] = {
        "id": judgment.id,
        "line": judgment.line,
        "status": judgment.status.value,
        "error": judgment.error,
        "protocol": judgment.protocol.value if judgment.protocol else None,
        "scenario": judgment.scenario,
        "winner": judgment.winner,
        "leaning": judgment.leaning,
        "uncertain": judgment.uncertain,
        "ranking": ",".join(str(n) for n in judgment.ranking) if judgment.ranking else None,
    }
    if judgment.overall_scale is not None:  # a native template's own scale, e.g. 1-5
        row["overall_scale"] = "{}-{}".format(*judgment.overall_scale)
    for column in CRITERIA_COLUMNS:  # a state head's criteria: their own decision, or why none
        value = getattr(judgment, column)
        if value is not None:
            row[column] = ",".join(map(str, value)) if isinstance(value, tuple) else value
    for number, scores in enumerate(judgment.answers, start=1):
        row[f"overall_{number}"] = scores.overall
        if scores.expected_overall is not None:
            row[f"expected_overall_{number}"] = scores.expected_overall
        for criterion, score in scores.criteria.items():
            row[criterion_column(criterion, number)] = _number(score)
    for number, metrics in enumerate(judgment.reference_metrics or (), start=1):
        for name, value in metrics.items():
            row[f"{name}_{number}"] = value
    for column in TAIL_COLUMNS:
        row[column] = getattr(judgment, column)
    return row


def _number(value: float) -> float | int:
    """Whole scores as integers (`7`, not `7.0`); averaged ones keep their half."""
    return int(value) if float(value).is_integer() else value


def criterion_column(criterion: str, number: int) -> str:
    """`<criterion>_<n>`, prefixed when it would clash with a fixed column."""
    column = f"{criterion}_{number}"
    fixed = column in (*HEAD_COLUMNS, *CRITERIA_COLUMNS, *TAIL_COLUMNS)
    if fixed or column.startswith(("overall_", "expected_overall_")):
        return f"criterion_{column}"
    return column


def csv_columns(judgments: Sequence[Judgment]) -> list[str]:
    """Columns for a CSV of these judgments: fixed head, per-answer scores, fixed tail
    (`overall_scale` before the scores when a native template graded on its own scale).

    Criterion columns are grouped by criterion (`accuracy_1, accuracy_2, ...`)
    in the order the criteria first appear.
    """
    most = max((len(j.answers) for j in judgments), default=0)
    criteria: dict[str, None] = {}
    expected: set[int] = set()
    for judgment in judgments:
        for criterion in judgment.criteria:
            criteria.setdefault(criterion)
        for number, scores in enumerate(judgment.answers, start=1):
            for criterion in scores.criteria:
                criteria.setdefault(criterion)
            if scores.expected_overall is not None:
                expected.add(number)
    columns = list(HEAD_COLUMNS)
    if any(j.overall_scale is not None for j in judgments):
        columns.append("overall_scale")
    columns += [c for c in CRITERIA_COLUMNS if any(getattr(j, c) is not None for j in judgments)]
    columns += [f"overall_{n}" for n in range(1, most + 1)]
    columns += [f"expected_overall_{n}" for n in sorted(expected)]
    columns += [criterion_column(c, n) for c in criteria for n in range(1, most + 1)]
    metric_names: dict[str, None] = {}
    metric_answers = 0
    for judgment in judgments:
        for metrics in judgment.reference_metrics or ():
            metric_names.update(dict.fromkeys(metrics))
        metric_answers = max(metric_answers, len(judgment.reference_metrics or ()))
    columns += [f"{m}_{n}" for m in metric_names for n in range(1, metric_answers + 1)]
    return columns + list(TAIL_COLUMNS)


def to_csv(judgments: Iterable[Judgment], out: Output) -> int:
    """Write judgments as CSV with a header row; return how many rows were written.

    The columns depend on every judgment (answer counts, criteria), so the
    judgments are collected first. Missing values are empty cells.
    """
    collected = list(judgments)
    with _text_output(out, append=False, newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=csv_columns(collected), restval="")
        writer.writeheader()
        for judgment in collected:
            writer.writerow(judgment_to_row(judgment))
        stream.flush()
    return len(collected)


def error_judgment(
    row: InputRow,
    protocol: Protocol | None,
    *,
    error: str | None = None,
    model: str | None = None,
    template: str | None = None,
    scenario: str | None = None,
) -> Judgment:
    """The judgment of a row that could not be judged, so rows in == rows out.

    The message is `error` when given, else the row's InputError. The field that
    was wrong, if known, is kept as `metadata["error_field"]`.
    """
    message = error or (str(row.error) if row.error else "the row could not be judged")
    metadata: dict[str, Any] = {}
    if row.error is not None and row.error.field:
        metadata["error_field"] = row.error.field
    return Judgment(
        id=row.item.id if row.item is not None else row_id(row.raw, row.line),
        protocol=protocol,
        status=Status.ERROR,
        error=message,
        scenario=scenario or (row.item.scenario if row.item is not None else None),
        model=model,
        template=template,
        line=row.line,
        metadata=metadata,
    )


@contextmanager
def _text_output(out: Output, *, append: bool, newline: str) -> Iterator[IO[str]]:
    """A UTF-8 text stream over `out`. Files opened here are closed here; a caller's
    stream is left open (a binary one is wrapped, then detached)."""
    if isinstance(out, (str, os.PathLike)):
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8", newline=newline) as stream:
            yield stream
    elif _is_text_stream(out):
        yield out  # type: ignore[misc]
    else:
        wrapper = io.TextIOWrapper(out, encoding="utf-8", newline=newline, write_through=True)  # type: ignore[arg-type]
        try:
            yield wrapper
        finally:
            wrapper.flush()
            wrapper.detach()


def _is_text_stream(out: Any) -> bool:
    if isinstance(out, io.TextIOBase):
        return True
    if isinstance(out, (io.RawIOBase, io.BufferedIOBase)):
        return False
    return "b" not in str(getattr(out, "mode", ""))
