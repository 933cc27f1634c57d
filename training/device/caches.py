"""A judge whose reads come from and go to the caches a lent GPU or an earlier run filled:
answer reads (training.device.reading_cache), score-mode replies (training.device.score_cache)
and request states (training.device.state_cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cached_reads(backend: Any, folder: Path | None, out: Path):  # type: ignore[no-untyped-def]
    """With --reading-cache: the backend's answer reads (a likelihood head's) come from and go
    to that folder, so another head on the same model judges the same rows without reading."""
    if folder is None or not hasattr(backend, "read_answers"):
        return None
    from training.device.reading_cache import CachedReads, ReadingCache

    cached = CachedReads(backend.read_answers, ReadingCache(folder), f"eval-{out.parent.name}")
    backend.read_answers = cached
    return cached


def cached_scores(backend: Any, folder: Path | None, out: Path):  # type: ignore[no-untyped-def]
    """With --score-cache: the backend's score-mode replies (a head's criterion reads) come
    from and go to that folder (training.device.score_cache): replies read elsewhere, a GPU's
    (training.device.gpu_levels), or in an earlier run, are not read again."""
    if folder is None or not hasattr(backend, "prompt_tokens"):
        return None
    from training.device.score_cache import CachedScores, ScoreCache

    cached = CachedScores(
        backend.score, backend.prompt_tokens, ScoreCache(folder, f"eval-{out.parent.name}")
    )
    backend.score = cached
    return cached


def cached_states(backend: Any, folder: Path | None, out: Path):  # type: ignore[no-untyped-def]
    """With --state-cache: the request states scenario detection reads (a judge with its own
    classifier) come from and go to that folder (training.device.state_cache)."""
    if folder is None or not hasattr(backend, "state_features"):
        return None
    from training.device.state_cache import CachedStates

    cached = CachedStates(backend.state_features, folder, f"eval-{out.parent.name}")
    backend.state_features = cached
    return cached
