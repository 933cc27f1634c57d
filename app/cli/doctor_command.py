"""`python -m app doctor`: the engine's self-check (app/doctor.py), one line a check."""

from __future__ import annotations

import argparse
import sys

PASSED, CHECK_FAILED = 0, 1


def add_doctor_parser(commands: argparse._SubParsersAction) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check the engine: how llama.cpp was built, a pair read in a child process, "
        "threads, the default judge's files, the jail answers' code runs in",
        description="Check that the judge engine runs on this machine. llama.cpp is loaded "
        "and a pair read by the smallest built model in a child process, so a crash (an "
        "illegal instruction) is reported instead of ending this command; a one-line program is "
        "run in the jail answers' code runs in. Exits 1 when a check fails.",
    )
    doctor.add_argument("--model", help="a .gguf file to read the pair with instead")
    doctor.set_defaults(handler=run_doctor)


def run_doctor(args: argparse.Namespace) -> int:
    from app.doctor import report, run_checks

    print("PocketJudge doctor: checking the judge engine", flush=True)
    passed = report(run_checks(args.model), lambda line: print(line, flush=True))
    if passed:
        print("the engine works on this machine")
        return PASSED
    print("doctor: a check failed (see FAILED above)", file=sys.stderr)
    return CHECK_FAILED
