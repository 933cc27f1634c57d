"""Token-level rules for JSON values, shared by backends that decode step by step.

Given the text of every vocabulary token, this module answers two questions at
a JSON position that carries a `ValueRule`:

- which tokens may come next so that the value stays one of the allowed
  candidates (the mask), and
- which candidate each token commits to, so the probability the model puts on
  each candidate can be read from one step's logits (with a look-ahead only
  where tokens are shared by several candidates, such as "1" for 1 and 10).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

_STRUCTURAL_REST = re.compile(r"[\s,\]\}]*")
_COLON_ONLY = re.compile(r"\s*:\s*")
_OPEN_ONLY = re.compile(r"\s*[\[\{]?\s*")
_CLOSE_STRING = re.compile(r'"[\s,\]\}]*')


class TokenTable:
    """The text of each token of a vocabulary, indexed for fast filtering."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = list(pieces)
        by_first: dict[str, list[int]] = {}
        structural: dict[str, list[int]] = {"colon": [], "open": [], "space": [], "close": []}
        for token_id, text in enumerate(self.pieces):
            stripped = text.lstrip()
            if stripped:
                by_first.setdefault(stripped[0], []).append(token_id)
            elif text:
                structural["space"].append(token_id)
            if text and _COLON_ONLY.fullmatch(text):
                structural["colon"].append(token_id)
            if text and _OPEN_ONLY.fullmatch(text):
                structural["open"].append(token_id)
            if text and _CLOSE_STRING.fullmatch(text):
                structural["close"].append(token_id)
        self._by_first = {char: np.array(ids, dtype=np.int64) for char, ids in by_first.items()}
        self.colon_ids = np.array(structural["colon"], dtype=np.int64)
        self.open_ids = np.array(structural["open"], dtype=np.int64)
        self._space_ids = np.array(structural["space"], dtype=np.int64)
        self.close_string_ids = np.array(structural["close"], dtype=np.int64)
        self._commit_cache = lru_cache(maxsize=4096)(self._commitments)

    def commitments(
        self, partial: str, candidates: tuple[str, ...]
    ) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Tokens that keep `partial` a prefix of (or complete) some candidate.

        Returns the token ids and, for each, the candidates it is still
        consistent with after it is written.
        """
        return self._commit_cache(partial, candidates)

    def _commitments(
        self, partial: str, candidates: tuple[str, ...]
    ) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        next_chars = {
            c[len(partial)] for c in candidates if len(c) > len(partial) and c.startswith(partial)
        }
        pool = self._pool(next_chars)
        if partial and partial in candidates:
            pool = np.concatenate([pool, self._pool(set(",]}")), self._space_ids])
        ids: list[int] = []
        consistent: list[tuple[str, ...]] = []
        for token_id in pool.tolist():
            text = self.pieces[token_id]
            written = partial + (text if partial else text.lstrip())
            matches = tuple(c for c in candidates if _consistent(written, c))
            if matches:
                ids.append(token_id)
                consistent.append(matches)
        return np.array(ids, dtype=np.int64), consistent

    def _pool(self, chars: set[str]) -> np.ndarray:
        arrays = [self._by_first[c] for c in chars if c in self._by_first]
        return np.concatenate(arrays) if arrays else np.array([], dtype=np.int64)


def _consistent(written: str, candidate: str) -> bool:
    """Is `written` a prefix of `candidate`, or `candidate` followed by structure only?"""
    if len(written) <= len(candidate):
        return candidate.startswith(written)
    if not written.startswith(candidate):
        return False
    return _STRUCTURAL_REST.fullmatch(written[len(candidate) :]) is not None


def entropy_of(logits: np.ndarray) -> float:
    """Shannon entropy (nats) of the next-token distribution over the whole vocabulary.

    Where a value is chosen, this says how spread the model's belief is, not only
    among the allowed candidates: mass on tokens no candidate starts with counts too
    (the confidence indicator of the fine-tuned-judge study in ../shared/seeds/).
    """
    values = logits.astype(np.float64)
    values = values[np.isfinite(values)]
    if not len(values):
        return 0.0
    values -= values.max()
    weights = np.exp(values)
    total = weights.sum()
    return float(np.log(total) - (weights * values).sum() / total)


def softmax_over(logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Probabilities of `ids` renormalised among themselves."""
    values = logits[ids].astype(np.float64)
    values -= values.max()
    weights = np.exp(values)
    return weights / weights.sum()
