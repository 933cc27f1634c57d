"""The held-out pairs whose reference decides them, judged as the result page judges them.

    python -m training.evaluation.reference_page [--model NAME] [--data DIR] [--out DIR]
                                                 [--no-run-code] [--no-reference]

The verdict's reference weights are the decision record's (`training.decision.fit`, on the
training pairs in the one cache; `training.decision.measure` reads the held-out ones' saved
values). The page has criterion scores too: the default's
criterion head moves them by the same signals (training/decision/shift_fit.py); a judge
that reads them apart with the reference adds their lead (`reference_weight`). This reads
the held-out pairs (`test.jsonl`) with the judge's own settings, every part of the verdict
in, and reports the page's verdict beside the head alone (its score without the reference's
part), the criteria's own decision, and the longer and the shorter answer,
overall and per family. Judgments are saved row by row, so a stopped run goes on.
A reference function's behaviour counts by default, the answers' functions run beside it
in the jail (app/code_run/); `--no-run-code` judges as a user who turned code running off
(their text read instead); give it its own `--out`. `--no-reference` judges the same pairs as a
user who gave no reference (default `--out`: reference-page-bare): where the judge's record
weighs its own answer, that answer is read in the reference's place (issue 64's target).
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
from training.datasets.reference_pairs import head_score
from training.evaluation.report_files import write_report

OUT = DATA.parent / "reference-page"


def decisions(rows: Sequence[InputRow], page: Sequence[Judgment]) -> dict[str, np.ndarray]:
    """Per pair, a score for A under each decision (positive: A), and whether A is right; the
    head alone is the page's score without the reference's part."""
    items = [row.item for row in rows if row.item is not None]
    longer = np.array([len(item.answers[0]) - len(item.answers[1]) for item in items], float)
    criteria = {"A": 1.0, "B": -1.0}
    return {
        "the page's verdict": np.array([(j.verdict_parts or {}).get("score", 0.0) for j in page]),
        "the head alone": np.array([head_score(j) for j in page]),
        "the criteria's own decision": np.array(
            [criteria.get(j.criteria_verdict or "", 0.0) for j in page]
        ),
        "the longer answer": longer,
        "the shorter answer": -longer,
        "a_wins": np.array([item.label is not None and item.label.winner == "A" for item in items]),
    }


def percent_right(score: np.ndarray, a_wins: np.ndarray) -> float:
    """The share of pairs a score for A (positive: A) gets right; a zero counts as wrong."""
    won = a_wins == 1
    return round(100 * float(((score > 0) == won)[score != 0].sum()) / max(len(won), 1), 1)


def judged(judge: Any, rows: Sequence[InputRow], saved: Path, quiet: bool) -> list[Judgment]:
    """Each row's judgment, from `saved` where it was judged before (one JSON per line)."""
    lines = saved.read_text(encoding="utf-8").splitlines() if saved.is_file() else []
    done = [Judgment.model_validate_json(line) for line in lines if line.strip()]
    with saved.open("a", encoding="utf-8") as out:
        for row in rows[len(done) :]:
            assert row.item is not None
            judgment = judge.judge(row.item, judge.config, line=row.line)
            out.write(judgment.model_dump_json() + "\n")
            out.flush()
            done.append(judgment)
            if not quiet and len(done) % 10 == 0:
                print(f"{saved.stem}: {len(done)} of {len(rows)} pairs", file=sys.stderr)
    return done


def accuracies(found: dict[str, np.ndarray]) -> dict[str, float]:
    """The share of pairs each decision gets right (a zero counts as wrong)."""
    return {
        name: percent_right(score, found["a_wins"])
        for name, score in found.items()
        if name != "a_wins"
    }


def report(
    rows: Sequence[InputRow], page: Sequence[Judgment], kind: str = "reference"
) -> dict[str, Any]:
    """The page's accuracy overall and by family, and how many verdicts `kind` (the reference,
    or "own_answer": the judge's own in its place) turned."""
    found = decisions(rows, page)
    families = [(row.raw or {}).get("family", "?") for row in rows]
    by_family = {}
    for family in sorted(set(families)):
        keep = [n for n, f in enumerate(families) if f == family]
        part = {name: values[keep] for name, values in found.items()}
        by_family[family] = {"pairs": len(keep), **accuracies(part)}
    turned = sum(reference_decided(j.verdict_parts or {}, kind) is not None for j in page)
    return {
        "pairs": len(rows),
        "accuracy": accuracies(found),
        "by_family": by_family,
        "verdicts_turned": turned,
        "turned_by": "the reference" if kind == "reference" else "the judge's own answer",
    }


def render(result: dict[str, Any]) -> str:
    names = list(result["accuracy"])
    lines = [
        f"Reference-decided pairs held out ({result['pairs']}), judged as the page judges "
        f"them; {result['turned_by']} turned {result['verdicts_turned']} verdicts.",
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
    parser.add_argument("--out", type=Path, help=f"default: {OUT} (-bare: --no-reference)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--no-run-code", action="store_true", help="as with code running off")
    parser.add_argument("--no-reference", action="store_true", help="as with no reference given")
    args = parser.parse_args(argv)
    out = args.out or (OUT.with_name(OUT.name + "-bare") if args.no_reference else OUT)
    if not (args.data / "test.jsonl").is_file():
        from training.datasets.reference_decided import main as build

        build(["--out", str(args.data)])
    rows = [r for r in read_rows(args.data / "test.jsonl") if r.item is not None]
    from models.backends.base import BackendOptions
    from training.evaluation.evaluate import open_evaluated

    judge = open_evaluated(
        args.model, BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=args.threads)
    )
    from dataclasses import replace

    if args.no_run_code:
        judge.config = replace(judge.config, run_code=False)
    if args.no_reference:
        judge.config = replace(judge.config, use_reference=False)
    out.mkdir(parents=True, exist_ok=True)
    try:
        page = judged(judge, rows, out / "test.jsonl", args.quiet)
    finally:
        judge.close()
    result = report(rows, page, "own_answer" if args.no_reference else "reference")
    write_report(out, result, render(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
