"""The held-out pairs whose reference decides them, judged as the result page judges them.

    python -m training.evaluation.reference_page [--model NAME] [--data DIR] [--out DIR]
                                                 [--no-run-code]

`training.heads.reference_fit` judges the training and held-out pairs with the criterion
scores off (the reference's weights are the decision record's: `training.decision.fit`). The
page has criterion scores too: the default's
criterion head moves them by the same signals (training/decision/shift_fit.py); a judge
that reads them apart with the reference adds their lead (`reference_weight`). This reads
the held-out pairs (`test.jsonl`) with the judge's own settings, every part of the verdict
in, and reports the page's verdict beside the head alone (its score without the reference's
part), the criteria's own decision, and the longer and the shorter answer,
overall and per family. Judgments are saved row by row, so a stopped run goes on.
A reference function's behaviour counts by default, the answers' functions run beside it
in the jail (app/code_run/); `--no-run-code` judges as a user who turned code running off
(their text read instead); give it its own `--out`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.state_head import reference_decided
from app.io.reader import InputRow, read_rows
from app.records import Judgment
from models.run_settings import RUN_DEFAULTS
from training.datasets.reference_decided import OUT as DATA
from training.evaluation.report_files import write_report
from training.heads.reference_fit import features, judged, percent_right

OUT = DATA.parent / "reference-page"


def decisions(rows: Sequence[InputRow], page: Sequence[Judgment]) -> dict[str, np.ndarray]:
    """Per pair, a score for A under each decision (positive: A), and whether A is right; the
    head alone is the page's score without the reference's part."""
    found = features(rows, page)
    criteria = {"A": 1.0, "B": -1.0}
    return {
        "the page's verdict": np.array([(j.verdict_parts or {}).get("score", 0.0) for j in page]),
        "the head alone": found["head"],
        "the criteria's own decision": np.array(
            [criteria.get(j.criteria_verdict or "", 0.0) for j in page]
        ),
        "the longer answer": found["longer"],
        "the shorter answer": -found["longer"],
        "a_wins": found["a_wins"],
    }


def accuracies(found: dict[str, np.ndarray]) -> dict[str, float]:
    """The share of pairs each decision gets right (a zero counts as wrong)."""
    return {
        name: percent_right(score, found["a_wins"])
        for name, score in found.items()
        if name != "a_wins"
    }


def report(rows: Sequence[InputRow], page: Sequence[Judgment]) -> dict[str, Any]:
    found = decisions(rows, page)
    families = [(row.raw or {}).get("family", "?") for row in rows]
    by_family = {}
    for family in sorted(set(families)):
        keep = [n for n, f in enumerate(families) if f == family]
        part = {name: values[keep] for name, values in found.items()}
        by_family[family] = {"pairs": len(keep), **accuracies(part)}
    turned = sum(reference_decided(j.verdict_parts or {}) is not None for j in page)
    return {
        "pairs": len(rows),
        "accuracy": accuracies(found),
        "by_family": by_family,
        "verdicts_the_reference_turned": turned,
    }


def render(result: dict[str, Any]) -> str:
    names = list(result["accuracy"])
    lines = [
        f"Reference-decided pairs held out ({result['pairs']}), judged as the page judges "
        f"them; the reference turned {result['verdicts_the_reference_turned']} verdicts.",
        "",
        "| decision | % right |",
        "|---|---:|",
        *(f"| {name} | {value} |" for name, value in result["accuracy"].items()),
        "",
        "| family | pairs | " + " | ".join(names) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for family, row in result["by_family"].items():
        cells = " | ".join(str(row[name]) for name in names)
        lines.append(f"| {family} | {row['pairs']} | {cells} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluation.reference_page", description=__doc__
    )
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--no-run-code", action="store_true", help="as with code running off")
    args = parser.parse_args(argv)
    if not (args.data / "test.jsonl").is_file():
        from training.datasets.reference_decided import main as build

        build(["--out", str(args.data)])
    rows = [r for r in read_rows(args.data / "test.jsonl") if r.item is not None]
    from models.backends.base import BackendOptions
    from training.evaluation.evaluate import open_evaluated

    judge = open_evaluated(
        args.model, BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=args.threads)
    )
    if args.no_run_code:
        from dataclasses import replace

        judge.config = replace(judge.config, run_code=False)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        page = judged(judge, rows, args.out / "test.jsonl", args.quiet)
    finally:
        judge.close()
    result = report(rows, page)
    write_report(args.out, result, render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
