"""Rubric grades of a head judge against GPT-4's, with and without the reference answers.

    python -m training.rubric_eval [FILE] [--model NAME] [--score-cache DIR]
                                   [--reading-cache DIR] [--out DIR] [--limit N]

Every row of a Prometheus absolute-grading file (../shared/data/prometheus/vicuna_eval.json:
80 requests x 4 answers, one rubric each, three GPT-4 grades 1-5) is judged by the engine
as a user's row with its rubric would be: the rubric grade is the criterion read's
expected level (app/criterion_reads.py), read once with the row's reference answer in
the prompt and once without it. Beside it, on the same rows: the judge's own grade (its
grade head, which reads neither rubric nor reference) and the length of the answer.
Correlations are with the mean of GPT-4's three grades (Pearson, Spearman, Kendall).

No head is fitted here: these are the engine's grades as a user gets them. Judgments go
to `--out` (JSONL, one per row and reference setting) with the report (JSON, Markdown).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.io.reader import read_rows
from app.io.writer import write_jsonl
from app.records import Judgment, Status
from training.meta_metrics import correlations

DEFAULT_FILE = Path(__file__).resolve().parents[2] / "shared/data/prometheus/vicuna_eval.json"
RUNS_DIR = Path(__file__).resolve().parent / "runs" / "rubric-eval"
SETTINGS = {"with the reference": True, "without it": False}


def judge_rows(args: argparse.Namespace) -> tuple[list[Any], dict[str, list[Judgment]], str]:
    """The file's rows and each setting's judgments (in row order), and the judge's name."""
    from app.progress import ProgressBar
    from app.service import JudgeService
    from models.backends.base import BackendOptions
    from models.loader import open_judge
    from training.evaluate import cached_reads, cached_scores, judge_config

    rows = [row for row in read_rows(args.file) if row.item is not None][: args.limit]
    judge = open_judge(args.model, BackendOptions(n_ctx=4096, n_threads=args.threads))
    wrappers = [
        cached_reads(judge.backend, args.reading_cache, args.out / "x"),
        cached_scores(judge.backend, args.score_cache, args.out / "x"),
    ]
    service = JudgeService(judge.backend, judge.name)
    config = judge_config("single", judge.entry, 4096)
    judged: dict[str, list[Judgment]] = {}
    try:
        for name, reference in SETTINGS.items():
            setting = replace(config, use_reference=reference)
            with ProgressBar(total=len(rows), disable=args.quiet) as bar:
                judged[name] = list(service.judge_rows(rows, setting, on_judgment=bar.update))
    finally:
        for wrapper in wrappers:
            if wrapper is not None:
                wrapper.close()
        judge.close()
    return rows, judged, judge.name


def rubric_grade(judgment: Judgment) -> float | None:
    """The expected level of the row's one rubric criterion, or None."""
    if judgment.status is not Status.OK or not judgment.answers:
        return None
    expected = judgment.answers[0].expected_criteria or {}
    return next(iter(expected.values()), None)


def report(rows: list[Any], judged: dict[str, list[Judgment]], model: str) -> dict[str, Any]:
    labels = [row.item.label.score for row in rows]
    table: dict[str, Any] = {}
    for name, judgments in judged.items():
        grades = [rubric_grade(j) for j in judgments]
        kept = [(g, y) for g, y in zip(grades, labels) if g is not None]
        table[f"rubric grade, {name}"] = {
            **correlations([g for g, _ in kept], [y for _, y in kept]),
            "not_read": len(grades) - len(kept),
        }
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
    parser = argparse.ArgumentParser(prog="python -m training.rubric_eval", description=__doc__)
    parser.add_argument("file", type=Path, nargs="?", default=DEFAULT_FILE)
    parser.add_argument("--model", help="a registry name or a .gguf path (default: the default)")
    parser.add_argument("--score-cache", type=Path, help="see training.evaluate --score-cache")
    parser.add_argument("--reading-cache", type=Path, help="see training.evaluate")
    parser.add_argument("--out", type=Path, default=RUNS_DIR)
    parser.add_argument("--limit", type=int, help="the first N rows only")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if not args.file.is_file():
        print(f"{args.file}: not found (see ../shared/data/README.md, prometheus/)")
        return 2
    rows, judged, model = judge_rows(args)
    result = report(rows, judged, model)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, judgments in judged.items():
        slug = "with-reference" if SETTINGS[name] else "without-reference"
        write_jsonl(judgments, args.out / f"judgments-{slug}.jsonl")
    (args.out / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    text = render(result)
    (args.out / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
