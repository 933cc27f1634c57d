"""`make bench`, part 5: what running a code pair's answers in the jail costs, each figure
against its baseline in the same run.

    python -m bench.code_run [--rounds 10] [--verdicts 3] [--results bench/code_run.md]

1. **The jail's start**: a one-line program in the jail (app/code_run/jail.py: bubblewrap
   and its seccomp filter) against the same program in a plain child of this Python.
2. **A code pair's reading**: the coding pair of the screenshots (examples/code_pair.jsonl:
   a polished `second_largest` that repeats a duplicate against a right one, with a
   reference function) read by app/code_run/behaviour.py, three jailed children (the reference, then
   both answers at once), against the same children run without the jail.
3. **The whole judgment**: the default judge judges the pair as the page does (criterion
   scores on), code running on against off, rounds alternating.

Each figure is the median of its rounds (the best round for verdicts, which are long).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

from app.code_run import jail
from app.code_run.behaviour import BehaviourReading, behaviour_reading
from app.code_run.jail import jail_status, jailed_run
from bench.cell import REPO

RESULTS = REPO / "bench" / "code_run.md"
PAIR = json.loads((REPO / "examples" / "code_pair.jsonl").read_text(encoding="utf-8"))
CODE_QUESTION, CODE_REFERENCE, CODE_ANSWERS = PAIR["question"], PAIR["reference"], PAIR["answers"]
PROBE = [sys.executable, "-I", "-c", "pass"]


def timed(action: Callable[[], object], rounds: int) -> list[float]:
    found = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        found.append(time.perf_counter() - started)
    return found


def probe_jailed() -> None:
    done = jailed_run(PROBE, stdin="", timeout=30, read_bytes=100)
    assert done.returncode == 0, done


def probe_plain() -> None:
    subprocess.run(PROBE, check=True, capture_output=True)


def read_pair() -> BehaviourReading:
    found = behaviour_reading(list(CODE_ANSWERS), CODE_REFERENCE, CODE_QUESTION)
    assert isinstance(found, BehaviourReading), found
    return found


def read_pair_unjailed() -> BehaviourReading:
    with mock.patch.object(jail, "command", lambda program, rules_fd: program):  # no bwrap
        return read_pair()


def verdicts(rounds: int) -> dict[str, list[float]]:
    """The default judge on the coding pair, code running on and off, rounds alternating."""
    from dataclasses import replace

    from app.records import JudgeItem
    from models.backends.base import BackendOptions
    from models.run_settings import RUN_DEFAULTS
    from training.evaluation.evaluate import open_evaluated

    item = JudgeItem(
        id="code", question=CODE_QUESTION, answers=tuple(CODE_ANSWERS), reference=CODE_REFERENCE
    )
    judge = open_evaluated(None, BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=1))
    found: dict[str, list[float]] = {"on": [], "off": []}
    try:
        configs = {"on": judge.config, "off": replace(judge.config, run_code=False)}
        judge.judge(item, configs["off"])  # the first judgment warms the caches
        for _ in range(rounds):
            for name, config in configs.items():
                started = time.perf_counter()
                judged = judge.judge(item, config)
                found[name].append(time.perf_counter() - started)
                assert judged.winner == ("B" if name == "on" else judged.winner), judged
    finally:
        judge.close()
    return found


def render(figures: dict[str, list[float]], verdict: dict[str, list[float]]) -> str:
    median = {name: statistics.median(values) for name, values in figures.items()}
    day = datetime.now(UTC).date().isoformat()
    rounds = len(figures["jail"])
    lines = [
        "# Benchmark: answers' code in the jail",
        "",
        f"`make bench` (`bench/code_run.py`) on {day}, this machine, median of {rounds} rounds "
        "each, every figure beside its baseline in the same run.",
        "",
        "| what | jailed s | without the jail s | x without |",
        "|---|---:|---:|---:|",
        f"| a one-line program (`python -I -c pass`) | {median['jail']:.3f} | "
        f"{median['plain']:.3f} | {median['jail'] / median['plain']:.2f} |",
        f"| the coding pair's reading (3 children: the reference, then both answers) | "
        f"{median['pair']:.3f} | {median['pair_plain']:.3f} | "
        f"{median['pair'] / median['pair_plain']:.2f} |",
    ]
    if verdict["on"]:
        on, off = min(verdict["on"]), min(verdict["off"])
        lines += [
            "",
            "The same pair judged by the default judge as the page judges it (criterion scores "
            f"on), best of {len(verdict['on'])} alternating rounds:",
            "",
            "| code running | s a judgment | x off |",
            "|---|---:|---:|",
            f"| on (the default: the verdict weighs the behaviour) | {on:.2f} | {on / off:.2f} |",
            f"| off (the text is read) | {off:.2f} | 1.00 |",
            "",
            f"The reading adds {median['pair']:.2f} s to a judgment of {off:.1f} s; a gap "
            "between the two rows beyond that is the judgments' own spread.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.code_run", description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--verdicts", type=int, default=3, help="0: no judge model")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    status = jail_status()
    if not status.works:
        print(f"bench.code_run: {status.sentence()}", file=sys.stderr)
        return 2
    figures = {
        "jail": timed(probe_jailed, args.rounds),
        "plain": timed(probe_plain, args.rounds),
        "pair": timed(read_pair, args.rounds),
        "pair_plain": timed(read_pair_unjailed, args.rounds),
    }
    verdict = verdicts(args.verdicts) if args.verdicts else {"on": [], "off": []}
    text = render(figures, verdict)
    args.results.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
