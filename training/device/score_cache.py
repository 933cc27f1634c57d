"""Score-mode replies cached on disk by (model, prompt tokens, reply schema), resumable.

A criterion read (app/deciding/criterion_reads.py) is a score-mode reply: its probabilities depend
on the prompt's tokens and on what the reply may hold, nothing else (greedy choice, no
sampling). An evaluation that wraps the backend's `score` with `CachedScores` reads each
prompt once: a run again, a run resumed, or replies read elsewhere (a lent GPU,
`training.device.gpu_levels`) cost nothing. Entries are JSON lines, one file per writer; a run
killed at any moment loses at most the replies since its last flush.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.backends.base import Generation, OutputSpec, ScoreRequest, ValueDistribution

FLUSH_EVERY = 50


def score_key(prompt: Sequence[int], output: OutputSpec) -> str:
    """The cache key of one reply: the prompt's token ids and the reply's schema."""
    digest = hashlib.sha1(np.asarray(prompt, dtype=np.int64).tobytes())
    digest.update(json.dumps(output.json_schema, sort_keys=True).encode())
    return "s" + digest.hexdigest()


def generation_entry(generation: Generation) -> dict[str, Any]:
    return {
        "text": generation.text,
        "distributions": [
            {"path": list(d.path), "probs": d.probs, "entropy": d.entropy}
            for d in generation.distributions
        ],
    }


def entry_generation(entry: dict[str, Any], prompt_tokens: int) -> Generation:
    return Generation(
        text=entry["text"],
        prompt_tokens=prompt_tokens,
        distributions=tuple(
            ValueDistribution(path=tuple(d["path"]), probs=d["probs"], entropy=d["entropy"])
            for d in entry["distributions"]
        ),
        finish_reason="stop",
    )


class ScoreCache:
    """Replies under `folder` (`*.jsonl`: one {"key", ...} object a line)."""

    def __init__(self, folder: Path, label: str = "part0") -> None:
        self.folder = folder
        self.entries: dict[str, dict[str, Any]] = {}
        for path in sorted(folder.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self.entries[entry.pop("key")] = entry
        self._pending: list[str] = []
        self._path = folder / f"{label}.jsonl"

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.entries[key] = entry
        self._pending.append(json.dumps({"key": key, **entry}))
        if len(self._pending) >= FLUSH_EVERY:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self._path, "a", encoding="utf-8") as stream:
            stream.write("\n".join(self._pending) + "\n")
        self._pending = []


class CachedScores:
    """A backend's `score` served from a ScoreCache; replies it reads are kept in it."""

    def __init__(
        self,
        score: Callable[[Sequence[ScoreRequest]], list[Generation]],
        prompt_tokens: Callable[[Sequence[Any]], list[int]],
        cache: ScoreCache,
    ) -> None:
        self._score = score
        self._prompt_tokens = prompt_tokens
        self._cache = cache
        self.hits = 0

    def __call__(self, requests: Sequence[ScoreRequest]) -> list[Generation]:
        prompts = [self._prompt_tokens(r.messages) for r in requests]
        keys = [score_key(p, r.output) for p, r in zip(prompts, requests)]
        missing = [i for i, key in enumerate(keys) if key not in self._cache.entries]
        if missing:
            read = self._score([requests[i] for i in missing])
            for i, generation in zip(missing, read):
                if generation.error:
                    continue  # not kept: a failure is read again next time
                self._cache.put(keys[i], generation_entry(generation))
            fresh = dict(zip(missing, read))
        else:
            fresh = {}
        self.hits += len(requests) - len(missing)
        return [
            fresh[i] if i in fresh else entry_generation(self._cache.entries[k], len(prompts[i]))
            for i, k in enumerate(keys)
        ]

    def close(self) -> None:
        self._cache.flush()
