"""Typed errors of the core. Front ends (CLI, Streamlit) turn them into messages.

Every error says what went wrong and, where it can, what to do next.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any


def validation_message(error: Mapping[str, Any]) -> str:
    """The message of one pydantic error, without pydantic's "Value error, " prefix."""
    return str(error.get("msg", "invalid value")).removeprefix("Value error, ")


class PocketJudgeError(Exception):
    """Base class of every error the core raises on purpose."""


class ConfigError(PocketJudgeError):
    """A data file (scenario, criteria, rubric, registry, template) is invalid."""

    def __init__(self, path: object, field: str, message: str) -> None:
        self.path = str(path)
        self.field = field
        self.message = message
        location = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{location}: {message}")

    def __reduce__(self) -> tuple[type[ConfigError], tuple[str, str, str]]:
        return (type(self), (self.path, self.field, self.message))


class InputError(PocketJudgeError):
    """One input row is invalid. The other rows are still judged."""

    def __init__(self, line: int, field: str, message: str) -> None:
        self.line = line
        self.field = field
        self.message = message
        where = f"line {line}" if line else ""
        if field:
            where += (", " if where else "") + f"field '{field}'"
        super().__init__(f"{where}: {message}" if where else message)

    def __reduce__(self) -> tuple[type[InputError], tuple[int, str, str]]:
        """Picklable with its own arguments (rows cross processes on the Ray engine)."""
        return (type(self), (self.line, self.field, self.message))


class UnknownNameError(PocketJudgeError):
    """A scenario, criterion, template, model or backend name that does not exist."""

    def __init__(self, kind: str, name: str, valid: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.valid = sorted(valid)
        close = difflib.get_close_matches(name, self.valid, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        shown = ", ".join(self.valid[:60])
        if len(self.valid) > 60:
            shown += f" ... ({len(self.valid)} in all; `python -m app {kind}s` lists them)"
        super().__init__(f"unknown {kind} '{name}'; {hint}valid: {shown}")


class MetricsUnavailable(PocketJudgeError):
    """A package that a reference metric (or the MiniLM encoder) needs is missing or broken."""


class BackendUnavailable(PocketJudgeError):
    """A backend's package is missing or its model cannot be loaded."""


class BackendError(PocketJudgeError):
    """A backend failed while generating."""


class EngineStopped(PocketJudgeError):
    """The process that runs the model (the engine worker) ended while it was needed: a
    native crash (an illegal instruction, a failed assertion), the machine out of memory.

    Not a BackendError: a row that meets it is not judged and not written, so a batch
    stops there and keeps what it judged; the next call starts a fresh engine.
    `reason` says how the process ended and what to do.
    """

    def __init__(self, reason: str, returncode: int | None = None) -> None:
        self.reason = reason
        self.returncode = returncode
        super().__init__(f"the judge engine stopped: {reason}")

    def __reduce__(self) -> tuple[type[EngineStopped], tuple[str, int | None]]:
        return (type(self), (self.reason, self.returncode))


class ModelFileError(BackendUnavailable):
    """A model file is missing, damaged, or too large for this machine's memory.

    `kind` is "missing", "corrupt" or "too_large"; `remedy` says what to do, so a
    caller that knows more (the registry entry the file belongs to) can say it better.
    """

    def __init__(self, path: object, kind: str, problem: str, remedy: str) -> None:
        self.path = str(path)
        self.kind = kind
        self.problem = problem
        self.remedy = remedy
        super().__init__(f"{self.path}: {problem}; {remedy}")

    def __reduce__(self) -> tuple[type[ModelFileError], tuple[str, str, str, str]]:
        """Picklable with its own arguments (load errors cross from the engine worker)."""
        return (type(self), (self.path, self.kind, self.problem, self.remedy))
