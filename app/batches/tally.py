"""The tally of a run in progress: rows done by status, rate and time left."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from app.records import Judgment, Status


@dataclass
class Tally:
    """Rows judged so far, by status; the rate and the time left from the first row."""

    done: int = 0
    total: int | None = None
    ok: int = 0
    unparsed: int = 0
    errors: int = 0
    started: float = field(default_factory=time.perf_counter)

    def add(self, judgment: Judgment) -> None:
        self.done += 1
        if judgment.status is Status.OK:
            self.ok += 1
        elif judgment.status is Status.UNPARSED:
            self.unparsed += 1
        else:
            self.errors += 1

    @property
    def rate(self) -> float:
        elapsed = time.perf_counter() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        if self.total is None or not self.rate:
            return None
        return (self.total - self.done) / self.rate
