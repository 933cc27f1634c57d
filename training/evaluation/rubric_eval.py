"""Rubric grades of a head judge against GPT-4's, with and without the reference answers.

    python -m training.evaluation.rubric_eval [FILE] [--model NAME] [--score-cache DIR]
                                   [--reading-cache DIR] [--out DIR] [--limit N]

Every row of a Prometheus absolute-grading file (../shared/data/prometheus/vicuna_eval.json:
80 requests x 4 answers, one rubric each, three GPT-4 grades 1-5) is judged by the engine
as a user's row with its rubric would be: the rubric grade is the criterion read's
expected level (app/deciding/criterion_reads.py), read once with the row's reference answer in
the prompt and once without it. With the reference, a judge that has a rubric grade's
combination (app/deciding/rubric_grade.py) gives the combination, fitted on this file: the
report shows the read alone beside it, and the combination's out-of-fold figure is
`training.decision.fit --sections rubric_grade`'s (on the cache's graded rows: the same
rows, judged the same way). Beside them, on the same rows: the judge's own grade (its grade
head, which reads neither rubric nor reference) and the length of the answer.
Correlations are with the mean of GPT-4's three grades (Pearson, Spearman, Kendall).

No head is fitted here: these are the engine's grades as a user gets them. Judgments go
to `--out` (JSONL, one per row and reference setting) with the report (JSON, Markdown).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.deciding.rubric_grade import READ_PART
from app.io.reader import InputRow, read_rows
from app.records import Judgment, Status
from training.evaluation.meta_metrics import correlations
from training.evaluation.reference_runs import parser, run

RUNS_DIR = Path(__file__).resolve().parents[1] / "runs" / "rubric-eval"


def graded_rows(args: argparse.Namespace) -> list[InputRow]:
    return [row for row in read_rows(args.file) if row.item is not None][: args.limit]


def rubric_grade(judgment: Judgment) -> float | None:
    """The expected level of the row's one rubric criterion, or None."""
    if judgment.status is not Status.OK or not judgment.answers:
        return None
    expected = judgment.answers[0].expected_criteria or {}
    return next(iter(expected.values()), None)


def read_level(judgment: Judgment) -> float | None:
    """The rubric read's own level where the judge's combination replaced it, or None."""
    return (judgment.verdict_parts or {}).get(READ_PART)


COMBINED = (
    "rubric grade, with the reference: the judge's combination (fitted on this file, so "
    "in-sample; out of fold: training.decision.fit --sections rubric_grade)"
)


def report(
    rows: Sequence[InputRow], judged: dict[str, list[Judgment]], model: str
) -> dict[str, Any]:
    labels = [row.item.label.score for row in rows]
    table: dict[str, Any] = {}
    for name, judgments in judged.items():
        combined = any(read_level(j) is not None for j in judgments)
        if combined:
            table[f"rubric grade, {name}: the read alone"] = _graded(
                [read_level(j) for j in judgments], labels
            )
        grades = [rubric_grade(j) for j in judgments]
        table[COMBINED if combined else f"rubric grade, {name}"] = _graded(grades, labels)
    first = next(iter(judged.values()))
    heads = [(j.answers[0].expected_overall, y) for j, y in zip(first, labels) if j.answers]
    table["the judge's own grade (no rubric, no reference)"] = correlations(
        [h for h, _ in heads if h is not None], [y for h, y in heads if h is not None]
    )
    lengths = [float(len(row.item.answers[0])) for row in rows]
    table["the longer, the better (answer length)"] = correlations(lengths, labels)
    return {
        "model": model,
        "rows": len(rows),
        "label": "mean of GPT-4's three grades",
        **{"grades": table},
    }


def _graded(grades: Sequence[float | None], labels: Sequence[float]) -> dict[str, Any]:
    kept = [(g, y) for g, y in zip(grades, labels) if g is not None]
    return {
        **correlations([g for g, _ in kept], [y for _, y in kept]),
        "not_read": len(grades) - len(kept),
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"Rubric grades of {result['model']} on {result['rows']} rows against the "
        f"{result['label']}:",
        "",
        "| grade | n | Pearson | Spearman | Kendall |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, values in result["grades"].items():
        cells = [_num(values.get(k)) for k in ("pearson", "spearman", "kendall")]
        lines.append(f"| {name} | {values['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    args = parser("python -m training.evaluation.rubric_eval", __doc__, RUNS_DIR).parse_args(argv)
    return run(args, graded_rows, "single", report, render)


if __name__ == "__main__":
    sys.exit(main())
