"""The processes of this machine, read from /proc: for tests that kill an engine worker
(models/backends/engine_worker.py) from outside, as the kernel or a crash would."""

from __future__ import annotations

import os
from pathlib import Path

WORKER = "models.backends.engine_worker"


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def parent_of(pid: int) -> int | None:
    try:  # the fields after the command's name, which may hold spaces and parentheses
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def processes() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def engine_workers(parent: int, label: str = "") -> list[int]:
    """The engine workers `parent` started, those whose command line has `label` (the
    model's file name) when given."""
    return [
        pid
        for pid in processes()
        if parent_of(pid) == parent and WORKER in (line := command_line(pid)) and label in line
    ]
