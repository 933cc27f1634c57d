"""Turn parsed model outputs into `Judgment` records.

An attempt is one model call over the answers in some order. This module maps
output positions back to the input's answers, adds expected scores and the
confidence from the score distributions, and merges the two orders of a
swapped pairwise judgment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.catalog.scoring import (
    ScoringRule,
    expected,
    probability_of_verdict,
    rounded_overall_distribution,
)
from app.deciding import verdicts
from app.formats.output_format import ReplyLayout, answer_keys, decision_path
from app.formats.parsing import ParsedOutput
from app.records import AnswerScores, Judgment, Protocol, Status
from models.backends.base import Generation

RAW_SEPARATOR = "\n\n----- next answer -----\n\n"


@dataclass(frozen=True)
class Attempt:
    order: tuple[int, ...]  # input answer index at each output position
    generation: Generation
    parsed: ParsedOutput | None
    failure: str | None
    layout: ReplyLayout = field(default_factory=ReplyLayout)
    protocol: Protocol = Protocol.SINGLE

    def decision_probs(self) -> dict[str, float] | None:
        """The distribution read at the decision of a decision-first reply."""
        path = decision_path(self.protocol, self.layout)
        for dist in self.generation.distributions:
            if path is not None and dist.path == path:
                return dict(dist.probs)
        return None


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
    feedback = [a.parsed.feedback for a in attempts if a.parsed.feedback]
    update = {
        **meta,
        "status": Status.OK,
        "answers": tuple(answers[i] for i in sorted(answers)),
        "feedback": "\n\n".join(feedback) if feedback else None,
    }
    parsed = attempts[0].parsed
    order = attempts[0].order
    if base.protocol is Protocol.PAIRWISE:
        update["winner"] = update["leaning"] = _original_winner(parsed.verdict, order)
        probs = _verdict_probs(attempts[0], rule, dists)
        update["verdict_probs"] = _rounded(probs)
        update["confidence"] = probs[update["winner"]]
        return base.model_copy(update=update)
    if base.protocol is Protocol.MULTI:
        update["ranking"] = tuple(order[n - 1] + 1 for n in parsed.ranking)
    if attempts[0].layout.decision_first:
        update["confidence"] = _decision_first_confidence(attempts, stated)
    else:
        update["confidence"] = _confidence(base.protocol, update, stated, dists)
    return base.model_copy(update=update)


def _verdict_probs(
    attempt: Attempt, rule: ScoringRule, dists: dict[int, dict[int, float]] | None
) -> dict[str, float]:
    """One order's P(A), P(B), P(tie) in the original labels (see app.deciding.verdicts)."""
    parsed = attempt.parsed
    assert parsed is not None and parsed.verdict is not None
    token = attempt.decision_probs() if attempt.layout.decision_first else None
    if token is not None:
        probs = verdicts.from_token(token)
    elif not attempt.layout.decision_first and dists and len(dists) == 2:
        first, second = (dists[i] for i in attempt.order)
        probs = verdicts.from_overall_distributions(first, second)
    else:
        probs = verdicts.certain(parsed.verdict)
    return verdicts.to_original(probs, attempt.order)


def _decision_first_confidence(attempts: Sequence[Attempt], stated: dict[int, int]) -> float:
    """The probability of the decision written: the grade (mean over graded answers), or
    the answer ranked first."""
    values = []
    for attempt in attempts:
        parsed = attempt.parsed
        assert parsed is not None
        probs = attempt.decision_probs()
        chosen = str(parsed.ranking[0]) if parsed.ranking else str(parsed.stated_overall[0])
        values.append(1.0 if probs is None else probs.get(chosen, 0.0))
    return sum(values) / len(values)


def _rounded(probs: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 4) for key, value in probs.items()}


def combine_swapped(
    base: Judgment,
    first: Attempt,
    second: Attempt,
    rule: ScoringRule,
    combine: verdicts.PairCombine = "agree",
    tie_margin: float = 0.0,
) -> Judgment:
    """Merge both orders of a pairwise judgment.

    "agree": the verdict stands when both orders give it; conflicting verdicts
    become a tie flagged consistent=false.
    "calibrated" (position-calibrated): each answer's expected overall is
    averaged over the two orders, so a bias toward the first or second slot
    cancels out; the higher average wins unless the gap is within
    `tie_margin`. Without score distributions it falls back to "agree".
    Decision first, the verdict token's probabilities are averaged instead and
    the gap is P(A) - P(B) (verdicts.calibrated_winner).
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
    probs = verdicts.average([one.verdict_probs or {}, two.verdict_probs or {}])
    margin = None
    expected = [a.expected_overall for a in answers]
    if first.layout.decision_first:
        winner = verdicts.most_likely(probs)
        if one.verdict_probs is not None and two.verdict_probs is not None:
            margin = verdicts.decision_margin(probs)
            if combine == "calibrated":
                winner = verdicts.calibrated_winner(margin, tie_margin, probs)
    else:
        winner = one.winner if consistent else "tie"
        if len(expected) == 2 and None not in expected:
            margin = expected[0] - expected[1]
            if combine == "calibrated":
                winner = verdicts.calibrated_winner(margin, tie_margin)
    return base.model_copy(
        update={
            **meta,
            **verdicts.both_orders(one, two, winner, probs, answers),
            "margin": None if margin is None else round(margin, 4),
            "verdict_probs": _rounded(probs),
        }
    )


def _score(attempt: Attempt, rule: ScoringRule, protocol: Protocol) -> _Scored:
    parsed = attempt.parsed
    assert parsed is not None
    keys = answer_keys(protocol, len(attempt.order)) or ("",)
    grade = (
        _grade(attempt) if attempt.layout.decision_first and not answer_keys(protocol, 2) else None
    )
    if not parsed.scores:  # decision first without criterion scores
        if grade is None:
            return _Scored({}, None, {})
        index = attempt.order[0]
        return _Scored({index: grade}, None, {index: parsed.stated_overall[0]})
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
        if grade is not None:  # the grade written first is the decision; criteria explain it
            answers[index] = grade.model_copy(
                update={"criteria": criteria, "expected_criteria": expected_criteria}
            )
        stated[index] = parsed.stated_overall[position] if parsed.stated_overall else 0
    return _Scored(answers, overall_dists, stated)


def _grade(attempt: Attempt) -> AnswerScores:
    """The grade a decision-first single reply wrote first, with its distribution."""
    parsed = attempt.parsed
    assert parsed is not None
    written = parsed.stated_overall[0]
    probs = attempt.decision_probs()
    dist = {int(value): p for value, p in probs.items()} if probs else None
    return AnswerScores(
        criteria={},
        overall=float(written),
        expected_overall=expected(dist) if dist else None,
        overall_probs={k: round(v, 4) for k, v in dist.items()} if dist else None,
    )


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
        "entropy": decision_entropy(attempts),
        "raw_output": RAW_SEPARATOR.join(g.text for g in generations),
        "latency_s": _total(g.latency_s for g in generations),
        "prompt_tokens": _total(g.prompt_tokens for g in generations),
        "completion_tokens": _total(g.completion_tokens for g in generations),
    }


def decision_entropy(attempts: Sequence[Attempt]) -> float | None:
    """Mean full-vocabulary entropy (nats) where the judge decided, over all attempts.

    A decision-first reply decides at one position (the verdict, the first of a ranking,
    the grade); any other reply decides at every value it writes, as the study's
    indicator averages over the whole output. None when the backend read no entropy.
    """
    values = []
    for attempt in attempts:
        path = decision_path(attempt.protocol, attempt.layout)
        for dist in attempt.generation.distributions:
            if dist.entropy is not None and (path is None or dist.path == path):
                values.append(dist.entropy)
    return round(sum(values) / len(values), 4) if values else None


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
