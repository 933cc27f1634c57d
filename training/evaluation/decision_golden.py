"""Saved pairwise decisions for the golden test of a judge's decision record
(tests/app/deciding/test_decision_golden.py): each judged pair's verdict parts (its signal
values and shares), leaning, confidence and P(A), without the texts.

    python -m training.evaluation.decision_golden JUDGMENTS.jsonl... [--out FILE]

The judgments are a run of the judge on the dev files (`python -m
training.evaluation.evaluate FILE --no-criteria --out DIR`: DIR/judgments.jsonl) and on the
held-out reference-decided pairs (`python -m training.evaluation.reference_page`); a new
combiner must give every saved decision again before any weight is refitted.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from app.io.judgments import read_judgments
from app.records import Judgment, Protocol, Status

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "default_judge_decisions.jsonl.gz"


def golden_row(judgment: Judgment, source: str, line: int | None) -> dict | None:
    """The saved row of one judgment of `source`'s `line`; None unless it is an ok pairwise
    judgment with verdict parts."""
    if judgment.protocol is not Protocol.PAIRWISE or judgment.status is not Status.OK:
        return None
    if not judgment.verdict_parts or judgment.verdict_probs is None:
        return None
    return {
        "file": source,
        "line": line,
        "parts": judgment.verdict_parts,
        "leaning": judgment.leaning,
        "uncertain": judgment.winner == "uncertain",
        "confidence": judgment.confidence,
        "p_a": judgment.verdict_probs["A"],
    }


def rows(path: Path) -> list[dict]:
    """The golden rows of one judgments file (ok pairwise judgments with verdict parts)."""
    found = []
    for judgment in read_judgments(path):
        source = judgment.metadata.get("eval_file") or path.parent.name
        if (row := golden_row(judgment, source, judgment.line)) is not None:
            found.append(row)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluation.decision_golden", description=__doc__
    )
    parser.add_argument("judgments", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    found = [row for path in args.judgments for row in rows(path)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as out:
        for row in found:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"{len(found)} decisions in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
