"""Labelled pairs to fit an LLM judge's confidence calibration on.

    python -m training.datasets.calibration_pairs \\
        --out training/runs/calibration/alpacaeval_300.jsonl

A calibration has to see verdicts the judge did not train on, drawn the way users
meet them: a random sample of AlpacaEval's decisive GPT-4-class preferences (none of
PocketJudge's LLM judges trained on AlpacaEval; none of the evaluation files are in
it), lengths as they come, the reference answer put in slot A or B at random. Written
as PocketJudge JSONL with a `label`, which `training.evaluation.evaluate` judges and keeps.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.datasets.alpacaeval import natural_sample, read_decisive

DEFAULT_PAIRS = 300
ALPACAEVAL_FILE = Path("../shared/data/alpacaeval/pairs.jsonl.gz")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.datasets.calibration_pairs")
    parser.add_argument("--out", type=Path, required=True, help="the .jsonl file to write")
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpacaeval", type=Path, default=ALPACAEVAL_FILE)
    args = parser.parse_args(argv)
    items = natural_sample(list(read_decisive(args.alpacaeval)), args.pairs, args.seed)
    rows = [
        {
            "id": i.id,
            "question": i.question,
            "answers": list(i.answers),
            "label": {"winner": i.label.winner},
        }
        for i in items
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as stream:
        stream.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    print(f"wrote {len(rows)} pairs to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
