"""When to retry a failed request to a server, and how long to wait first.

The policy is exponential backoff without jitter: a local judge talks to one
server, usually its own, so there is no crowd of clients to spread out, and a
fixed schedule keeps the waits predictable (and testable). A server's own
Retry-After is honoured, but never beyond `max_wait_s`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# 408 Request Timeout, 429 Too Many Requests and every 5xx may pass; other 4xx will not.
RETRYABLE_STATUS = frozenset({408, 429})


def retryable_status(status: int) -> bool:
    """True for HTTP statuses worth another try: 408, 429 and 5xx."""
    return status in RETRYABLE_STATUS or 500 <= status <= 599


@dataclass(frozen=True)
class RetryPolicy:
    """`max_retries` retries after the first attempt; waits of `backoff_s` * 2**n, capped."""

    max_retries: int = 3
    backoff_s: float = 1.0
    max_wait_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {self.max_retries}")
        if self.backoff_s < 0 or self.max_wait_s < 0:
            raise ValueError("backoff_s and max_wait_s must be 0 or more")

    @property
    def attempts(self) -> int:
        return self.max_retries + 1

    def wait_s(self, retry: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (0 for the first retry).

        A server's Retry-After replaces the backoff (it knows when it will be ready),
        within the cap.
        """
        wanted = self.backoff_s * 2**retry if retry_after_s is None else retry_after_s
        return max(0.0, min(wanted, self.max_wait_s))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header in seconds: delta-seconds or an HTTP date; None if absent or bad."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
