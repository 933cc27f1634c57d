"""A pairwise verdict and its confidence from the same numbers: each order's probabilities.

Each order of a pair gives a distribution over A / B / tie, in the original
answer labels:

- decision first: the probabilities the judge gave the verdict token;
- decision last: the probability that the overall scores come out that way,
  each criterion score drawn from its own distribution;
- without token probabilities (backends that only return text): the verdict
  the order wrote, with probability 1.

Both orders are averaged (position-calibrated: a judge that favours the first
slot puts that mass on A in one order and on B in the other, so it cancels).
The judgment's confidence is the averaged probability of the reported winner,
so it is defined for every judgment, also when the two orders disagree. Below
the judge's threshold the verdict is reported as "uncertain", with its leaning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.catalog.scoring import probability_of_verdict
from app.records import Judgment, Protocol, Status, Winner

VERDICT_ORDER: tuple[Winner, ...] = ("A", "B", "tie")
SWAPPED = {"A": "B", "B": "A", "tie": "tie"}


def from_overall_distributions(a: Mapping[int, float], b: Mapping[int, float]) -> dict[str, float]:
    """P(A), P(B), P(tie) when the two rounded overalls are drawn from `a` and `b`."""
    return {verdict: probability_of_verdict(a, b, verdict) for verdict in VERDICT_ORDER}


def from_token(probs: Mapping[str, float]) -> dict[str, float]:
    """The verdict token's distribution, keyed A / B / tie (JSON quotes dropped)."""
    clean = {key.strip('"'): value for key, value in probs.items()}
    total = sum(clean.get(v, 0.0) for v in VERDICT_ORDER)
    return {v: (clean.get(v, 0.0) / total if total else 0.0) for v in VERDICT_ORDER}


def certain(verdict: str) -> dict[str, float]:
    """A verdict written without probabilities."""
    return {v: 1.0 if v == verdict else 0.0 for v in VERDICT_ORDER}


def to_original(probs: Mapping[str, float], order: tuple[int, ...]) -> dict[str, float]:
    """An order's distribution in the original labels (B-first orders swap A and B)."""
    if order == (0, 1):
        return dict(probs)
    return {SWAPPED[v]: p for v, p in probs.items()}


def average(distributions: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {
        v: sum(d.get(v, 0.0) for d in distributions) / len(distributions) for v in VERDICT_ORDER
    }


def calibrated_winner(
    margin: float, tie_margin: float, probs: Mapping[str, float] | None = None
) -> Winner:
    """The position-calibrated verdict: a gap of at most `tie_margin` is a tie, else the
    side the gap favours.

    `margin` is A's lead over B averaged over both orders: the expected overall
    scores' gap (decision last), or P(A) - P(B) of the verdict token (decision
    first, whose `probs` are given: a tie the judge itself finds most likely stays
    a tie). The one rule for the engine, the evaluation's re-scoring and the
    tuning of the margin.
    """
    if probs is not None and most_likely(probs) == "tie":
        return "tie"
    if abs(margin) <= tie_margin:
        return "tie"
    return "A" if margin > 0 else "B"


def decision_margin(probs: Mapping[str, float]) -> float:
    """A decision-first pair's margin: P(A) - P(B), averaged over both orders."""
    return probs.get("A", 0.0) - probs.get("B", 0.0)


def most_likely(probs: Mapping[str, float]) -> Winner:
    """The verdict with the most probability; an exact A-B tie is a tie."""
    best = max(VERDICT_ORDER, key=lambda v: probs.get(v, 0.0))
    if best != "tie" and probs.get("A", 0.0) == probs.get("B", 0.0):
        return "tie"
    return best


def mark_uncertain(judgment: Judgment, threshold: float) -> Judgment:
    """Report a pairwise verdict or a ranking below `threshold` confidence as uncertain.

    A pairwise verdict becomes "uncertain" and keeps its leaning; a ranking stays (it
    is an order, not a decision to drop) with `uncertain` set. Grades are not marked:
    their confidence is the probability of one exact grade, low by nature.
    """
    if judgment.status is not Status.OK:
        return judgment
    if judgment.protocol is Protocol.PAIRWISE:
        leaning = judgment.leaning or judgment.winner
        doubtful = judgment.confidence is None or judgment.confidence < threshold
        return judgment.model_copy(
            update={
                "leaning": leaning,
                "uncertain": doubtful,
                "winner": "uncertain" if doubtful else leaning,
            }
        )
    if judgment.protocol is Protocol.MULTI:
        doubtful = judgment.confidence is None or judgment.confidence < threshold
        return judgment.model_copy(update={"uncertain": doubtful})
    return judgment


def both_orders(
    one: Judgment, two: Judgment, winner: str, probs: Mapping[str, float], answers: tuple
) -> dict:
    """What a pair judged in both orders reports, however its two judgments were merged
    (app.deciding.judgment_builder.combine_swapped, app.deciding.native_judgment): the
    verdict, whether the orders agreed and what each said, the merged scores, and the
    first order's critique."""
    return {
        "status": Status.OK,
        "winner": winner,
        "leaning": winner,
        "consistent": one.winner == two.winner,
        "order_winners": (one.winner, two.winner),
        "answers": answers,
        "confidence": probs[winner],
        "feedback": one.feedback,
    }
