"""Runs a reference function and the answers' functions on the same inputs, in a child
process (app/deciding/sandbox_child.py), and counts where each gives the reference's result.

The child is a fresh interpreter (`-s`: no user site; a clean environment, an empty
temporary folder as its working folder), which caps its memory, CPU time, file size and
process count and refuses writes, processes and sockets before an answer's code runs.
Running the answers' code as Python is defence in depth, not a jail: PocketJudge does it
only where the user turned code running on (the `run_code` setting). Otherwise the child
evaluates the programs with app/deciding/code_interpreter.py, which runs none of their
code, and a program outside the Python it follows gives no reading.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.deciding.code_answers import CodeFunction

CHILD = Path(__file__).with_name("sandbox_child.py")
ROOT = Path(__file__).resolve().parents[2]  # the folder that holds `app`, for the evaluator
CALL_SECONDS = 0.5  # one call of one function
CPU_SECONDS = 10  # the whole child
WALL_SECONDS = 20.0
MEMORY_MB = 1024
KEEP = 40  # inputs the reference returns on, at most


@dataclass(frozen=True)
class SandboxRun:
    """What the child found: how many inputs the reference returned on, and for each
    answer on how many of them it gave the reference's result (None: it defines no
    function to call, or its code did not load); `error`: the child itself failed."""

    inputs: int
    agreed: tuple[int | None, ...]
    notes: tuple[str, ...]  # per answer: why it has no count, else ""
    error: str | None = None


def run_functions(
    reference: CodeFunction,
    answers: Sequence[CodeFunction | None],
    inputs: list[list[Any]],
    *,
    run_python: bool,
) -> SandboxRun:
    """`reference` and each answer's function called on `inputs` in the sandboxed child:
    run as Python (`run_python`, the user's choice) or evaluated by the evaluator."""
    programs = [reference, *answers]
    request = {
        "interpreter": None if run_python else str(ROOT),
        "programs": [p.source if p else "" for p in programs],
        "names": [p.name if p else None for p in programs],
        "inputs": inputs,
        "call_seconds": CALL_SECONDS,
        "cpu_seconds": CPU_SECONDS,
        "memory_mb": MEMORY_MB,
        "keep": KEEP,
    }
    with tempfile.TemporaryDirectory(prefix="pocketjudge-code-") as folder:
        try:
            done = subprocess.run(
                [sys.executable, "-s", "-c", CHILD.read_text(encoding="utf-8")],
                input=json.dumps(request),
                capture_output=True,
                text=True,
                timeout=WALL_SECONDS,
                cwd=folder,
                env={"PYTHONHASHSEED": "0", "PATH": "", "HOME": folder},
                check=False,
            )
        except subprocess.TimeoutExpired:
            return _failed(len(answers), "timed out")
        except OSError as exc:  # no interpreter to start: the verdict reads no behaviour
            return _failed(len(answers), f"could not start: {exc}")
    try:
        reply = json.loads(done.stdout)
    except json.JSONDecodeError:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return _failed(len(answers), f"stopped: {why[:200]}")
    found = reply["programs"][1:]
    agreed = tuple(p["agreed"] if p["status"] == "ok" else None for p in found)
    run = SandboxRun(reply["inputs"], agreed, tuple(p["detail"] for p in found))
    unsupported = [p["detail"] for p in reply["programs"] if p["status"] == "unsupported"]
    if unsupported:  # not the program's fault: the evaluator cannot compare them all
        return replace(run, error=f"the evaluator does not follow {unsupported[0]}")
    return run


def _failed(answers: int, why: str) -> SandboxRun:
    """A run whose child gave no reply: no count for any of the `answers`."""
    return SandboxRun(0, (None,) * answers, ("",) * answers, why)
