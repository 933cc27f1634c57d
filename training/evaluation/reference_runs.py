"""Rows judged through the engine twice, with their reference answers and without them.

What `training.evaluation.rubric_eval` (grades) and `training.datasets.reference_pairs` (pairs)
share: their command line, the judge opened with its reading and score caches (replies read on a GPU
or in an earlier run are not read again), both settings judged in row order, and the
judgments and report saved under `--out`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from app.io.reader import InputRow
from app.io.writer import write_jsonl
from app.records import Judgment
from models.run_settings import RUN_DEFAULTS
from training.evaluation.report_files import write_report

DEFAULT_FILE = Path(__file__).resolve().parents[3] / "shared/data/prometheus/vicuna_eval.json"
SETTINGS = {"with the reference": True, "without it": False}
SLUGS = {True: "with-reference", False: "without-reference"}


def parser(prog: str, description: str | None, out: Path) -> argparse.ArgumentParser:
    """The command line both share; `out` is the default output folder."""
    parsed = argparse.ArgumentParser(prog=prog, description=description)
    parsed.add_argument("file", type=Path, nargs="?", default=DEFAULT_FILE)
    parsed.add_argument("--model", help="a registry name or a .gguf path (default: the default)")
    parsed.add_argument(
        "--score-cache", type=Path, help="see training.evaluation.evaluate --score-cache"
    )
    parsed.add_argument("--reading-cache", type=Path, help="see training.evaluation.evaluate")
    parsed.add_argument("--out", type=Path, default=out)
    parsed.add_argument("--limit", type=int, help="the first N rows only")
    parsed.add_argument("--threads", type=int, default=1)
    parsed.add_argument("--quiet", action="store_true")
    return parsed


def judge_both_ways(
    args: argparse.Namespace, rows: Sequence[InputRow], kind: str
) -> tuple[dict[str, list[Judgment]], str]:
    """Each setting's judgments of `rows` (in row order) by the judge `args` names, and its
    name; `kind` is "single" or "pairwise"."""
    from app.batches.progress_bar import ProgressBar
    from models.backends.base import BackendOptions
    from training.device.caches import cached_reads, cached_scores
    from training.evaluation.evaluate import open_evaluated

    options = BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=args.threads)
    judge = open_evaluated(args.model, options, kind=kind)  # type: ignore[arg-type]
    wrappers = [
        cached_reads(judge.backend, args.reading_cache, args.out / "x"),
        cached_scores(judge.backend, args.score_cache, args.out / "x"),
    ]
    judged: dict[str, list[Judgment]] = {}
    try:
        for name, reference in SETTINGS.items():
            setting = replace(judge.config, use_reference=reference)
            with ProgressBar(total=len(rows), disable=args.quiet) as bar:
                judged[name] = list(judge.judge_rows(rows, setting, on_judgment=bar.update))
    finally:
        for wrapper in wrappers:
            if wrapper is not None:
                wrapper.close()
        judge.close()
    return judged, judge.name


def run(
    args: argparse.Namespace,
    rows: Callable[[argparse.Namespace], Sequence[InputRow]],
    kind: str,
    report: Callable[[Sequence[InputRow], dict[str, list[Judgment]], str], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
) -> int:
    """Judge, report, save (judgments per setting, report.json, report.md) and print."""
    if not args.file.is_file():
        print(f"{args.file}: not found (see ../shared/data/README.md, prometheus/)")
        return 2
    chosen = rows(args)
    judged, model = judge_both_ways(args, chosen, kind)
    result = report(chosen, judged, model)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, judgments in judged.items():
        write_jsonl(judgments, args.out / f"judgments-{SLUGS[SETTINGS[name]]}.jsonl")
    write_report(args.out, result, render(result))
    return 0
