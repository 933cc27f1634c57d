"""Command line: `python -m app judge|scenarios|criteria|models|templates|ask|runs|doctor`.

The CLI only parses arguments, calls the core, and turns the core's typed
errors into one-line messages with a non-zero exit code (`app.batches.run.ExitCode`:
0 all rows ok, 1 some rows error or unparsed, 2 bad usage or input, 3 the
backend failed, 4 the results could not be written, 130 interrupted). One module
per command: `judge` (judge_command, its arguments in judge_options, its batch
runner in batch), the listings, `ask`, `runs` (app/runs/commands.py) and `doctor`
(the engine's self-check).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from app.batches.run import ExitCode
from app.cli.ask_command import add_ask_parser
from app.cli.doctor_command import add_doctor_parser
from app.cli.judge_command import run_judge
from app.cli.judge_options import add_judge_arguments
from app.cli.listings import add_listing_parsers
from app.runs.commands import add_runs_parser
from models.foundation.errors import BackendError, EngineStopped, PocketJudgeError


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # bitsandbytes warns on every load that an optional CPU kernel package is missing:
    # nothing for a user to do, and it reads like a failure.
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    try:
        return int(args.handler(args))
    except (BackendError, EngineStopped) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BACKEND
    except PocketJudgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="PocketJudge: a local judge")
    commands = parser.add_subparsers(dest="command", required=True)
    judge = commands.add_parser(
        "judge",
        help="judge a JSONL/JSON file, one output row per input row",
        description="Judge a JSONL/JSON file, one output row per input row. Each row is "
        "written as it finishes; if the run is killed, the same command goes on from there.",
        epilog="exit codes: 0 every row ok; 1 some rows error or unparsed; 2 bad arguments, "
        "input or model; 3 the backend failed (run again to resume); 4 the results could not "
        "be written (run again to resume); 130 interrupted (run again to resume)",
    )
    add_judge_arguments(judge)
    judge.set_defaults(handler=run_judge)
    add_listing_parsers(commands)
    add_ask_parser(commands)
    add_runs_parser(commands)
    add_doctor_parser(commands)
    return parser
