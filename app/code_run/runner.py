"""Runs a reference function and the answers' functions on the same inputs, each program in
a jailed child of its own (app/code_run/jail.py, app/code_run/child.py), and counts where
each answer gives the reference's result.

The reference runs first, on the inputs tried, and the first KEEP on which it returns are
kept; then every answer runs on those, at the same time. The children report outcomes as
JSON, decoded here without running anything (`decoded`), and compared here (`same`): a
program can spoil only its own outcomes. A child that stops early (a crash, a cap, a
flood of output) keeps the outcomes it reported and says why it stopped.
"""

from __future__ import annotations

import json
import math
import signal
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.code_run.answers import CodeFunction
from app.code_run.jail import JailUnavailable, jailed_run

CHILD = Path(__file__).with_name("child.py")
CALL_SECONDS = 0.5  # one call of one function
CPU_SECONDS = 10  # one child
WALL_SECONDS = 20.0
MEMORY_MB = 1024
FILE_MB = 4  # any file a child writes, its reply included
RESULT_BYTES = 16_384  # one result's JSON, at most
KEEP = 40  # inputs the reference returns on, at most
READ_BYTES = FILE_MB * 1024 * 1024


@dataclass(frozen=True)
class Opaque:
    """A result of a type the child does not encode (its type's name and repr)."""

    kind: str
    text: str


@dataclass(frozen=True)
class ProgramRun:
    """One program's child: whether the jail started it, whether its function loaded,
    its outcomes in input order as far as it got ((True, value) or (False, what it
    raised)), and `note`: why it has fewer outcomes than inputs ("" where it finished)."""

    started: bool
    loaded: bool
    outcomes: tuple[tuple[bool, Any], ...]
    note: str = ""


@dataclass(frozen=True)
class SandboxRun:
    """What the children found: how many inputs the reference returned on, and for each
    answer on how many of them it gave the reference's result (None: it defines no
    function to call, or its code did not load); `error`: the reference gave no reading."""

    inputs: int
    agreed: tuple[int | None, ...]
    notes: tuple[str, ...]  # per answer: how its run went, where not plainly
    error: str | None = None


def decoded(tree: Any) -> Any:
    """A child's encoded value (child.encoded) as Python values, building only builtins."""
    if isinstance(tree, list):
        return [decoded(item) for item in tree]
    if not isinstance(tree, dict):
        return tree
    ((kind, body),) = tree.items()
    if kind == "tuple":
        return tuple(decoded(item) for item in body)
    if kind == "dict":
        return {_hashable(decoded(k)): decoded(v) for k, v in body}
    if kind in ("set", "frozenset"):
        return frozenset(_hashable(decoded(item)) for item in body)
    if kind == "complex":
        return complex(*body)
    if kind == "bytes":
        return bytes.fromhex(body)
    return Opaque(*body)


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def same(a: Any, b: Any) -> bool:
    """Whether an answer's result `a` is the reference's `b` (floats within rounding)."""
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except TypeError:  # a set holding lists, say: not equal
        return False


def run_program(
    program: CodeFunction, inputs: list[list[Any]], *, keep: int, stop_at_timeout: bool
) -> ProgramRun:
    """`program`'s function called on `inputs` in a jailed child, until it has returned on
    `keep` of them (or, `stop_at_timeout`, a call timed out)."""
    request = {
        "source": program.source,
        "name": program.name,
        "inputs": inputs,
        "keep": keep,
        "stop_at_timeout": stop_at_timeout,
        "call_seconds": CALL_SECONDS,
        "cpu_seconds": CPU_SECONDS,
        "memory_mb": MEMORY_MB,
        "file_mb": FILE_MB,
        "result_bytes": RESULT_BYTES,
    }
    child = [sys.executable, "-I", "-c", CHILD.read_text(encoding="utf-8")]
    try:
        done = jailed_run(
            child, stdin=json.dumps(request), timeout=WALL_SECONDS, read_bytes=READ_BYTES
        )
    except (OSError, JailUnavailable) as exc:
        return ProgramRun(False, False, (), f"the jail could not start: {exc}")
    ended = f"ran past {WALL_SECONDS:g} s" if done.returncode is None else _ending(done.returncode)
    lines = done.out.splitlines()
    if not lines:
        said = done.err.strip().splitlines()
        return ProgramRun(False, False, (), f"the jail could not start: {said or ended}")
    return _read_reply(lines, ended)


def _ending(code: int) -> str:
    """How a child's exit status reads ("" for 0)."""
    if code == 0:
        return ""
    if code > 128 and code - 128 in signal.valid_signals():  # bwrap passes a signal on so
        code = -(code - 128)
    if code < 0:
        name = signal.Signals(-code).name
        cause = {"SIGXCPU": "its CPU time", "SIGXFSZ": "its file size", "SIGKILL": "killed"}
        return f"stopped by {name}" + (f" ({cause[name]})" if name in cause else "")
    return f"exit status {code}"


def _read_reply(lines: list[str], ended: str) -> ProgramRun:
    """A child's reply lines as a run; a line that is not the child's ends it."""
    messages: list[dict[str, Any]] = []
    for line in lines:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            ended = ended or "wrote over its reply"
            break
        if not isinstance(message, dict):
            ended = ended or "wrote over its reply"
            break
        messages.append(message)
    if not messages or not messages[0].get("started"):
        return ProgramRun(False, False, (), f"the child did not start: {ended}")
    loading = messages[1] if len(messages) > 1 else {}
    loaded = bool(loading.get("loaded"))
    outcomes = []
    for message in messages[2:]:
        if message.get("done"):
            return ProgramRun(True, loaded, tuple(outcomes), loading.get("detail", ""))
        if "value" in message:
            outcomes.append((True, decoded(message["value"])))
        else:
            outcomes.append((False, message.get("raised", "timed out")))
    stopped = f"stopped after {len(outcomes)} inputs: {ended or 'its reply ended early'}"
    return ProgramRun(True, loaded, tuple(outcomes), loading.get("detail") or stopped)


def run_functions(
    reference: CodeFunction, answers: Sequence[CodeFunction | None], inputs: list[list[Any]]
) -> SandboxRun:
    """`reference` on `inputs`, then each answer's function on the inputs it returned on,
    each in a jailed child of its own."""
    first = run_program(reference, inputs, keep=KEEP, stop_at_timeout=False)
    if not (first.started and first.loaded):
        return _failed(len(answers), f"the reference function: {first.note or 'no function'}")
    kept = [(args, value) for args, (ran, value) in zip(inputs, first.outcomes) if ran][:KEEP]
    tried = [args for args, _ in kept]
    with ThreadPoolExecutor(max_workers=max(1, len(answers))) as pool:
        runs = list(
            pool.map(
                lambda f: (
                    run_program(f, tried, keep=len(tried), stop_at_timeout=True) if f else None
                ),
                answers,
            )
        )
    if any(run is not None and not run.started for run in runs):
        why = next(run.note for run in runs if run is not None and not run.started)
        return _failed(len(answers), why)
    agreed = tuple(
        None if run is None or not run.loaded else _agreed(run.outcomes, kept) for run in runs
    )
    notes = tuple(_note(run, len(kept)) for run in runs)
    return SandboxRun(len(kept), agreed, notes)


def _agreed(outcomes: Sequence[tuple[bool, Any]], kept: Sequence[tuple[list, Any]]) -> int:
    return sum(ran and same(value, expected) for (ran, value), (_, expected) in zip(outcomes, kept))


def _note(run: ProgramRun | None, inputs: int) -> str:
    """How an answer's run went, in words, where it did not simply return its results."""
    if run is None:
        return "no function to call"
    if run.note:
        return run.note
    if run.outcomes and run.outcomes[-1] == (False, "timed out") and len(run.outcomes) < inputs:
        return f"a call ran past {CALL_SECONDS:g} s: stopped after {len(run.outcomes)} inputs"
    raised = {value for ran, value in run.outcomes if not ran}
    if (
        inputs
        and len(run.outcomes) == inputs
        and len(raised) == 1
        and not any(ran for ran, _ in run.outcomes)
    ):
        name = raised.pop()
        refused = " (the jail refused what it tried: a process, a socket...)"
        return f"raised {name} on every input" + (refused if name == "PermissionError" else "")
    return ""


def _failed(answers: int, why: str) -> SandboxRun:
    """A run that gives no reading: no count for any of the `answers`."""
    return SandboxRun(0, (None,) * answers, ("",) * answers, why)
