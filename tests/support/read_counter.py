"""Which requests a real backend reads answers after: its `read_reply` wrapped in a counter."""

from __future__ import annotations

from typing import Any


def counted_requests(monkeypatch: Any, backend: Any) -> list[str]:
    """The list every later `backend.read_reply` call appends its request to ("" for an
    answer read after an empty request); the reads themselves are the backend's own."""
    requests: list[str] = []
    read_reply = backend.read_reply

    def counted(request: str, answer: str, states: bool = True, then: Any = None, adapter=None):  # type: ignore[no-untyped-def]
        requests.append(request)
        return read_reply(request, answer, states, then, adapter)

    monkeypatch.setattr(backend, "read_reply", counted)
    return requests
