"""Turn parsed model outputs into `Judgment` records.

An attempt is one model call over the answers in some order. This module maps
output positions back to the input's answers, adds expected scores and the
confidence from the score distributions, and merges the two orders of a
swapped pairwise judgment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.output_format import answer_keys
from app.parsing import ParsedOutput
from app.records import AnswerScores, Judgment, Protocol, Status
from app.scoring import (
    ScoringRule,
    expected,
    probability_of_verdict,
    rounded_overall_distribution,
)
from models.backends.base import Generation

RAW_SEPARATOR = "\n\n----- next answer -----\n\n"


@dataclass(frozen=True)
class Attempt:
    order: tuple[int, ...]  # input answer index at each output position
    generation: Generation
    parsed: ParsedOutput | None
    failure: str | None


@dataclass(frozen=True)
class _Scored:
    """The scores of one attempt, indexed by input answer."""

    answers: dict[int, AnswerScores]
    overall_dists: dict[int, dict[int, float]] | None
    stated: dict[int, int]


def build_judgment(base: Judgment, attempts: Sequence[Attempt], rule: ScoringRule) -> Judgment:
    """One judgment from attempts that each cover some answers once (no swap)."""
    meta = _meta(base, attempts)
    failed = [a for a in attempts if a.parsed is None]
    if failed:
        return _unparsed(base, attempts, meta)
    scored = [_score(attempt, rule, base.protocol) for attempt in attempts]
    answers: dict[int, AnswerScores] = {}
    dists: dict[int, dict[int, float]] | None = {}
    stated: dict[int, int] = {}
    for item in scored:
        answers.update(item.answers)
        stated.update(item.stated)
        if item.overall_dists is None or dists is None:
            dists = None
        else:
            dists.update(item.overall_dists)
    update = {
        **meta,
        "status": Status.OK,
        "answers": tuple(answers[i] for i in sorted(answers)),
        "feedback": "\n\n".join(a.parsed.feedback for a in attempts if a.parsed.feedback),
    }
    parsed = attempts[0].parsed
    order = attempts[0].order
    if base.protocol is Protocol.PAIRWISE:
        update["winner"] = _original_winner(parsed.verdict, order)
    if base.protocol is Protocol.MULTI:
        update["ranking"] = tuple(order[n - 1] + 1 for n in parsed.ranking)
    update["confidence"] = _confidence(base.protocol, update, stated, dists)
    return base.model_copy(update=update)


PairCombine = Literal["agree", "calibrated"]


def combine_swapped(
    base: Judgment,
    first: Attempt,
    second: Attempt,
    rule: ScoringRule,
    combine: PairCombine = "agree",
    tie_margin: float = 0.0,
) -> Judgment:
    """Merge both orders of a pairwise judgment.

    "agree": the verdict stands when both orders give it; conflicting verdicts
    become a tie flagged consistent=false.
    "calibrated" (position-calibrated): each answer's expected overall is
    averaged over the two orders, so a bias toward the first or second slot
    cancels out; the higher average wins unless the gap is within
    `tie_margin`. Without score distributions it falls back to "agree".
    """
    meta = _meta(base, [first, second])
    meta["swapped"] = True
    meta["raw_output"] = first.generation.text
    meta["raw_output_swapped"] = second.generation.text
    if first.parsed is None or second.parsed is None:
        which = "original order" if first.parsed is None else "swapped order"
        reason = first.failure if first.parsed is None else second.failure
        return base.model_copy(
            update={**meta, "status": Status.UNPARSED, "error": f"{which}: {reason}"}
        )
    one = build_judgment(base, [first], rule)
    two = build_judgment(base, [second], rule)
    consistent = one.winner == two.winner
    answers = tuple(_average(a, b, rule) for a, b in zip(one.answers, two.answers))
    confidence = None
    if consistent and one.confidence is not None and two.confidence is not None:
        confidence = (one.confidence + two.confidence) / 2
    winner = one.winner if consistent else "tie"
    margin = None
    if answers[0].expected_overall is not None and answers[1].expected_overall is not None:
        margin = answers[0].expected_overall - answers[1].expected_overall
        if combine == "calibrated":
            winner = "tie" if abs(margin) <= tie_margin else "A" if margin > 0 else "B"
    return base.model_copy(
        update={
            **meta,
            "status": Status.OK,
            "winner": winner,
            "consistent": consistent,
            "order_winners": (one.winner, two.winner),
            "margin": None if margin is None else round(margin, 4),
            "answers": answers,
            "confidence": confidence,
            "feedback": one.feedback,
        }
    )


def _score(attempt: Attempt, rule: ScoringRule, protocol: Protocol) -> _Scored:
    parsed = attempt.parsed
    assert parsed is not None
    keys = answer_keys(protocol, len(attempt.order)) or ("",)
    distributions = _distributions(attempt, keys)
    answers: dict[int, AnswerScores] = {}
    overall_dists: dict[int, dict[int, float]] | None = {}
    stated: dict[int, int] = {}
    for position, key in enumerate(keys):
        index = attempt.order[position]
        criteria = {k: float(v) for k, v in parsed.scores[position].items()}
        dist = distributions.get(key)
        expected_criteria = None
        expected_overall = None
        if dist is not None and all(spec.key in dist for spec in rule.specs):
            expected_criteria = {k: expected(dist[k]) for k in rule.keys}
            expected_overall = rule.overall(expected_criteria)
            if overall_dists is not None:
                overall_dists[index] = rounded_overall_distribution(rule, dist)
        else:
            overall_dists = None
        answers[index] = AnswerScores(
            criteria=criteria,
            overall=round(rule.overall(criteria), 4),
            expected_criteria=expected_criteria,
            expected_overall=expected_overall,
        )
        stated[index] = parsed.stated_overall[position]
    return _Scored(answers, overall_dists, stated)


def _distributions(attempt: Attempt, keys: Sequence[str]) -> dict[str, dict[str, dict[int, float]]]:
    """Score distributions by output answer key, then criterion key."""
    result: dict[str, dict[str, dict[int, float]]] = {}
    for dist in attempt.generation.distributions:
        path = dist.path
        if not path or path[0] != "scores":
            continue
        key = str(path[1]) if len(path) == 3 else ""
        if key not in keys:
            continue
        result.setdefault(key, {})[str(path[-1])] = {int(v): p for v, p in dist.probs.items()}
    return result


def _confidence(
    protocol: Protocol,
    update: dict,
    stated: dict[int, int],
    dists: dict[int, dict[int, float]] | None,
) -> float | None:
    if not dists or len(dists) != len(stated):
        return None
    if protocol is Protocol.PAIRWISE:
        winner = update["winner"]
        return probability_of_verdict(dists[0], dists[1], winner)
    if protocol is Protocol.MULTI:
        top, second = (n - 1 for n in update["ranking"][:2])
        return 1.0 - probability_of_verdict(dists[top], dists[second], "B")
    values = [dists[i].get(stated[i], 0.0) for i in sorted(stated)]
    return sum(values) / len(values)


def _original_winner(verdict: str | None, order: tuple[int, ...]) -> str | None:
    if verdict in (None, "tie") or order == (0, 1):
        return verdict
    return {"A": "B", "B": "A"}[verdict]


def _average(a: AnswerScores, b: AnswerScores, rule: ScoringRule) -> AnswerScores:
    criteria = {k: (a.criteria[k] + b.criteria[k]) / 2 for k in a.criteria}
    expected_criteria = None
    expected_overall = None
    if a.expected_criteria is not None and b.expected_criteria is not None:
        expected_criteria = {
            k: (a.expected_criteria[k] + b.expected_criteria[k]) / 2 for k in a.expected_criteria
        }
        expected_overall = rule.overall(expected_criteria)
    return AnswerScores(
        criteria=criteria,
        overall=round(rule.overall(criteria), 4),
        expected_criteria=expected_criteria,
        expected_overall=expected_overall,
    )


def _meta(base: Judgment, attempts: Sequence[Attempt]) -> dict:
    generations = [a.generation for a in attempts]
    return {
        "raw_output": RAW_SEPARATOR.join(g.text for g in generations),
        "latency_s": _total(g.latency_s for g in generations),
        "prompt_tokens": _total(g.prompt_tokens for g in generations),
        "completion_tokens": _total(g.completion_tokens for g in generations),
    }


def _total(values) -> float | int | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def _unparsed(base: Judgment, attempts: Sequence[Attempt], meta: dict) -> Judgment:
    reasons = []
    for attempt in attempts:
        if attempt.failure:
            prefix = f"answer {attempt.order[0] + 1}: " if len(attempts) > 1 else ""
            reasons.append(prefix + attempt.failure)
    return base.model_copy(update={**meta, "status": Status.UNPARSED, "error": "; ".join(reasons)})
