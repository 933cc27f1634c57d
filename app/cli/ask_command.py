"""`python -m app ask`: one follow-up question about one judged row."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.batches.run import ExitCode


def add_ask_parser(commands: argparse._SubParsersAction) -> None:
    ask = commands.add_parser(
        "ask",
        help="ask the judge about one of its judgments (why, an example)",
        description="Ask a question about a judgment in a judged JSONL: the judge gets the "
        "input row, its judgment and the question, and answers in free text.",
    )
    ask.add_argument("judged", type=Path, help="the JSONL `judge` wrote")
    ask.add_argument("--input", type=Path, required=True, help="the input file it judged")
    ask.add_argument("--id", required=True, help="the row's id")
    ask.add_argument("question", help="what to ask, e.g. 'Why is B better?'")
    ask.add_argument("--model", help="registry name or .gguf (default: the default judge)")
    ask.add_argument("--threads", type=int, help="CPU threads")
    ask.set_defaults(handler=ask_about)


def ask_about(args: argparse.Namespace) -> int:
    """One follow-up question about one judged row (app/judging/followup.py)."""
    from app.api import load_judge
    from app.io.judgments import read_judgments
    from app.io.reader import read_rows
    from app.judging.followup import ask

    for path in (args.judged, args.input):
        if not path.exists():
            print(f"error: {path}: file not found", file=sys.stderr)
            return ExitCode.USAGE
    judgment = next((j for j in read_judgments(args.judged) if j.id == args.id), None)
    item = next((r.item for r in read_rows(args.input) if r.item and r.item.id == args.id), None)
    if judgment is None or item is None:
        where = args.judged if judgment is None else args.input
        print(f"error: no row with id '{args.id}' in {where}", file=sys.stderr)
        return ExitCode.USAGE
    judge = load_judge(args.model, threads=args.threads, isolated=True)
    try:
        print(ask(judge.backend, item, judgment, [], args.question))
    finally:
        judge.close()
    return ExitCode.OK
