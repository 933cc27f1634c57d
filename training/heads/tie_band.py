"""The tie margin of the position-calibrated pairwise verdict, tuned on training pairs.

With `pair_combine: calibrated` the engine averages each answer's expected
overall score over both orders and calls a tie when the gap is at most the
tie margin. The margin is chosen here on pairs the judge was trained on
(pairwise_train), never on the evaluation files.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from app.deciding.verdicts import calibrated_winner


def verdict_at(margin: float, tie_margin: float) -> str:
    return calibrated_winner(margin, tie_margin)


def tune_tie_margin(pairs: Sequence[tuple[float, str]]) -> dict[str, float | int]:
    """The tie margin with the highest agreement on (margin, label) pairs.

    Candidates are 0 and the midpoints between consecutive distinct |margin|
    values, so every achievable split is tried. Ties in agreement go to the
    smaller margin (fewer tie verdicts).
    """
    if not pairs:
        raise ValueError("no judged pairs with a margin to tune the tie margin on")
    sizes = sorted({abs(m) for m, _ in pairs})
    candidates = [0.0] + [(a + b) / 2 for a, b in itertools.pairwise(sizes)]
    best_margin, best_hits = 0.0, -1
    for candidate in candidates:
        hits = sum(verdict_at(m, candidate) == label for m, label in pairs)
        if hits > best_hits:
            best_margin, best_hits = candidate, hits
    return {
        "tie_margin": round(best_margin, 4),
        "agreement": round(100 * best_hits / len(pairs), 1),
        "pairs": len(pairs),
    }
