"""The probability a model gives each candidate value at one JSON position.

Written as a generator so one piece of logic serves every way of running the
model: it yields `Feed` (evaluate these tokens, send back the logits after the
last) and `Rewind` (forget the last n evaluated tokens), and returns the
probabilities. The llama.cpp backend answers those requests at once for one
sequence (full generation), or gathers them from many replies into one batch
(score mode, `models.backends.sequence_runner`).

Where a token is shared by several candidates ("1" starts both 1 and 10), the
reader evaluates that token, reads how the next token splits the mass, and
rewinds: a value's probability is its own, not its first token's.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np

from models.backends.value_constraints import TokenTable, softmax_over

LOOKAHEAD_MIN_MASS = 1e-3
LOOKAHEAD_MAX_DEPTH = 3


@dataclass(frozen=True)
class Feed:
    """Evaluate these tokens next; the logits after the last one come back."""

    tokens: tuple[int, ...]


@dataclass(frozen=True)
class Rewind:
    """Forget the last `count` evaluated tokens (nothing comes back)."""

    count: int


Request = Feed | Rewind
Reading = Generator[Request, "np.ndarray | None", dict[str, float]]


def candidate_probs(
    table: TokenTable,
    logits: np.ndarray,
    written: str,
    candidates: tuple[str, ...],
    depth: int = 0,
) -> Reading:
    """Probability of each candidate, looking ahead where a token is shared.

    `logits` are those of the next position (not modified); `written` is the
    part of the value already written.
    """
    ids, consistent = table.commitments(written, candidates)
    result = dict.fromkeys(candidates, 0.0)
    if not len(ids):
        return result
    probs = softmax_over(logits, ids)
    for token_id, prob, matches in zip(ids.tolist(), probs.tolist(), consistent):
        if len(matches) == 1:
            result[matches[0]] += prob
        elif prob < LOOKAHEAD_MIN_MASS or depth >= LOOKAHEAD_MAX_DEPTH:
            for candidate in matches:
                result[candidate] += prob / len(matches)
        else:
            piece = table.pieces[token_id]
            next_written = written + (piece if written else piece.lstrip())
            split = yield from _look_ahead(table, token_id, next_written, matches, depth)
            for candidate, share in split.items():
                result[candidate] += prob * share
    total = sum(result.values())
    return {c: (p / total if total else 0.0) for c, p in result.items()}


def _look_ahead(
    table: TokenTable, token_id: int, written: str, candidates: tuple[str, ...], depth: int
) -> Reading:
    """Evaluate one token, read the split between candidates, then rewind."""
    next_logits = yield Feed((token_id,))
    assert next_logits is not None
    complete = [c for c in candidates if c == written]
    longer = tuple(c for c in candidates if c != written)
    split: dict[str, float] = {}
    if complete:
        # Either the value ends here (a structural token follows) or it goes on.
        ends = table.commitments(written, (written,))[0]
        goes_on = table.commitments(written, longer)[0] if longer else ends[:0]
        end_ids = np.setdiff1d(ends, goes_on)
        both = np.concatenate([end_ids, goes_on])
        if len(both):
            probs = softmax_over(next_logits, both)
            end_mass = float(probs[: len(end_ids)].sum())
            split[complete[0]] = end_mass
            if longer:
                inner = yield from candidate_probs(table, next_logits, written, longer, depth + 1)
                for candidate, share in inner.items():
                    split[candidate] = split.get(candidate, 0.0) + (1 - end_mass) * share
        else:
            split = dict.fromkeys(candidates, 1 / len(candidates))
    else:
        split = yield from candidate_probs(table, next_logits, written, candidates, depth + 1)
    yield Rewind(1)
    return split


def pick_value(
    probs: dict[str, float],
    allowed: tuple[str, ...],
    temperature: float,
    rng: np.random.Generator,
) -> str:
    """The allowed value to write: the most probable one, or a draw at `temperature` > 0."""
    weights = np.array([probs.get(c, 0.0) for c in allowed], dtype=np.float64)
    if temperature <= 0 or weights.sum() <= 0:
        return allowed[int(np.argmax(weights))]
    weights = weights ** (1.0 / temperature)
    return allowed[int(rng.choice(len(allowed), p=weights / weights.sum()))]
