"""Judgments made by a state head (app/deciding/state_head.py) instead of a generated reply.

Each answer gets a value of each signal the head reads (its states' w . f, its likelihood
features, its request relevance, its log length), and the judge's decision record
(app/deciding/decision.py) weighs A's lead in each: a pair's score is the head's logit (a
Bradley-Terry view: linear in the difference), with a reference's signals added where the
pair has one; answers are ranked by the same weights on each answer's values, and a single
answer's grade comes from the grade head on the same features. The verdict is the same in
both answer orders by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.catalog.scoring import ScoringRule
from app.code_run.behaviour import BehaviourReading
from app.deciding.criterion_head import CriterionHead, head_levels
from app.deciding.criterion_reads import with_levels, with_turn_criteria
from app.deciding.decision import Decision, DecisionRecord, decide, recorded_values, sigmoid
from app.deciding.reference_order import order_shares
from app.deciding.reference_words import reference_words, stated_share
from app.deciding.state_head import StateHead, answer_values, state_text
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from models.readings import ReplyCriteria

Likelihoods = list[dict[str, float] | None]


def decides(head: StateHead | None, protocol: Protocol | None) -> bool:
    """True when a state head makes this protocol's judgment (grades only with a grade head)."""
    if head is None:
        return False
    if protocol is Protocol.SINGLE:
        return head.grades
    return protocol in (Protocol.PAIRWISE, Protocol.MULTI)


def head_judgment(
    base: Judgment,
    item: JudgeItem,
    head: StateHead,
    source: Any,
    record: DecisionRecord,
    criteria: TurnAsk | None = None,
    levels: LevelAsk | None = None,
) -> Judgment:
    """The judgment of `item` by the head: a verdict, a ranking or grades. `source` is the
    backend: its `state_features` (a head that reads text) or `read_answers` (one that
    reads each answer as the model's reply). With `criteria` (a head that reads replies),
    the criterion scores are read on from the same reads (criterion_reads.turn_criteria);
    with `levels`, a criterion head gives them from the same reads (no read of their own)."""
    ask = criteria.ask if criteria is not None else None
    likely = "likelihood" in record.reads() or bool(head.grade_likelihood)
    features, likelihoods, found, references, checks = read_features(
        item, head, source, ask, likely
    )
    odds = [None if p is None else check_log_odds(p) for p in checks]
    similarities = None
    if base.protocol is Protocol.SINGLE:
        judgment = _grades(base, head, features, likelihoods)
    elif base.protocol is Protocol.PAIRWISE:
        similarities = _similarities(item, record)
        judgment = _verdict(base, item, head, record, features, likelihoods, similarities)
    else:
        similarities = _similarities(item, record)
        judgment = _ranking(base, item, head, record, features, likelihoods, similarities)
    if levels is not None:
        shift = _reference_shift(item, levels, references, odds)
        if levels.head.relevance and similarities is None:
            from app.deciding.relevance import request_similarities

            similarities = request_similarities(item.question, item.answers)
        judgment = _with_head_levels(
            judgment, item, levels, features, likelihoods, shift, similarities
        )
    if criteria is None:
        return judgment
    if criteria.ask.keys:
        judgment = with_turn_criteria(judgment, found, criteria.rule)
    return _with_reference_leads(judgment, references, odds)


def _with_reference_leads(
    judgment: Judgment, references: list[Any], odds: list[float | None]
) -> Judgment:
    """A verdict's parts with A's lead in the reference's mean log-probability after each
    answer (`reference_likelihood_difference`) and in the log-odds of the judge's check
    (`reference_check_difference`), each where both answers' were read."""
    means = _reference_means(references)
    if judgment.protocol is Protocol.SINGLE:
        return _with_grade_reads(judgment, means[0] if means else None, odds)
    parts = judgment.verdict_parts
    if parts is None:
        return judgment
    leads = {}
    if len(means) == 2 and None not in means:
        leads["reference_likelihood_difference"] = means[0] - means[1]  # type: ignore[operator]
    if len(odds) == 2 and None not in odds:
        leads["reference_check_difference"] = odds[0] - odds[1]  # type: ignore[operator]
    if not leads:
        return judgment
    return judgment.model_copy(update={"verdict_parts": {**parts, **leads}})


def _with_grade_reads(judgment: Judgment, mean: float | None, odds: list[float | None]) -> Judgment:
    """A single answer's grade with what the reference turn read of it, as its parts: the
    reference's mean log-probability after the answer (`reference_likelihood`) and the
    log-odds of the judge's check (`reference_check`), where each was read. The rubric
    grade's combination (app/deciding/rubric_grade.py) reads them."""
    reads = {}
    if mean is not None:
        reads["reference_likelihood"] = round(mean, 4)
    if odds and odds[0] is not None:
        reads["reference_check"] = round(odds[0], 4)
    if not reads:
        return judgment
    parts = {**(judgment.verdict_parts or {}), **reads}
    return judgment.model_copy(update={"verdict_parts": parts})


GRADE_SCALE = (1, 10)  # a head's grade: clipped to it
CHECK_FLOOR = 1e-6  # a check's probability is kept this far from 0 and 1 (finite log-odds)


def check_log_odds(p_true: float) -> float:
    """The log-odds of the judge's "true" to a check (clipped: finite)."""
    p = min(max(p_true, CHECK_FLOOR), 1 - CHECK_FLOOR)
    return float(np.log(p / (1 - p)))


@dataclass(frozen=True)
class TurnAsk:
    """Criterion scores to read on from a head's reads: what the backend reads, and the
    rule that makes scores of it."""

    ask: ReplyCriteria
    rule: ScoringRule


@dataclass(frozen=True)
class LevelAsk:
    """Criterion scores a criterion head gives from the verdict's reads."""

    head: CriterionHead
    rule: ScoringRule
    reference: str | None = None  # in use: the levels move with it (reference_shift)
    # each answer's share of the reference function's results, where code was run
    behaviour: tuple[float, ...] | None = None


def _reference_shift(
    item: JudgeItem, ask: LevelAsk, references: list[Any], odds: list[float | None]
) -> np.ndarray | None:
    """Each answer's shift in level points for what the reference in use shows of it."""
    if not (ask.reference and ask.head.reads_reference):
        return None
    stated = reference_words(ask.reference, item.question)
    shares = [stated_share(answer, stated) for answer in item.answers]
    means = _reference_means(references)
    orders = order_shares(item.answers, ask.reference, item.question)
    return ask.head.reference_shift(shares, means, odds, ask.behaviour or (), orders)


def _reference_means(references: list[Any]) -> list[float | None]:
    """The reference's mean token log-probability after each answer, where it was read."""
    return [float(np.mean(r)) if r is not None and len(r) else None for r in references]


def _with_head_levels(
    judgment: Judgment,
    item: JudgeItem,
    ask: LevelAsk,
    features: Sequence[np.ndarray | None],
    likelihoods: Likelihoods,
    shift: np.ndarray | None = None,
    similarities: np.ndarray | None = None,
) -> Judgment:
    found = head_levels(
        ask.head, ask.rule.specs, features, likelihoods, item.answers, shift, similarities
    )
    if found is None:
        why = "the verdict's read holds no states or likelihoods for the criterion head"
        note = f"the criterion scores could not be given ({why})"
        return judgment.model_copy(update={"criteria": (), "criteria_note": note})
    moved = [f" (the reference moved it {s:+.2f})" for s in shift] if shift is not None else None
    raw = "\n".join(
        f"answer {n + 1} {key}: criterion head {value:.2f}{moved[n] if moved else ''}"
        for n, values in found.items()
        for key, value in values.items()
    )
    judged = with_levels(judgment, found, ask.rule, raw)
    return judged.model_copy(update={"criteria_by_head": True})


def read_features(
    item: JudgeItem,
    head: StateHead,
    source: Any,
    criteria: ReplyCriteria | None = None,
    likelihoods: bool = True,
) -> tuple[list[np.ndarray | None], Likelihoods, list[Any], list[Any], list[float | None]]:
    """Each answer's pooled states, (for a head that reads replies, where `likelihoods`)
    likelihood features, and (with `criteria`) the level probabilities of each criterion
    read on from it, the log-probabilities of the reference's tokens after it and its
    check's probability."""
    if head.reads == "reply":
        answers = [a[: head.answer_chars] for a in item.answers]
        question = item.question[: head.question_chars]
        if criteria is None:
            readings = source.read_answers(question, answers, likelihoods)
        else:
            readings = source.read_answers(question, answers, likelihoods, criteria)
        return (
            [r.states for r in readings],
            [r.features() if likelihoods else None for r in readings],
            [r.criteria for r in readings],
            [r.reference for r in readings],
            [r.check for r in readings],
        )
    features: list[np.ndarray | None] = [
        source.state_features(state_text(item.question, a, head.question_chars, head.answer_chars))
        for a in item.answers
    ]
    nothing = [None] * len(item.answers)
    return features, list(nothing), list(nothing), list(nothing), list(nothing)


def _similarities(item: JudgeItem, record: DecisionRecord) -> np.ndarray | None:
    if "relevance" not in record.reads():
        return None
    from app.deciding.relevance import request_similarities

    return request_similarities(item.question, item.answers)


def _answer_values(
    item: JudgeItem,
    head: StateHead,
    features: Sequence[np.ndarray | None],
    likelihoods: Likelihoods,
    similarities: np.ndarray | None,
) -> list[dict[str, float]]:
    return [
        answer_values(
            head,
            f,
            None if similarities is None else float(similarities[n]),
            len(answer),
            likelihoods[n],
        )
        for n, (answer, f) in enumerate(zip(item.answers, features))
    ]


BASE_SHARES = ("states", "relevance", "length")  # shown even where they gave nothing
RULE_PREFIX = "rule_"  # a verdict part naming the record's rule that decided the pair


def _verdict(
    base: Judgment,
    item: JudgeItem,
    head: StateHead,
    record: DecisionRecord,
    features: Sequence[np.ndarray | None],
    likelihoods: Likelihoods,
    similarities: np.ndarray | None,
) -> Judgment:
    first, second = _answer_values(item, head, features, likelihoods, similarities)[:2]
    values = {name: first[name] - second[name] for name in first}
    decision = decide(record, values)
    parts = {name: 0.0 for name in BASE_SHARES} | _shares(decision)
    parts |= {f"{name}_difference": value for name, value in values.items()}
    update = {"status": Status.OK, **_verdict_fields(parts, decision)}
    return base.model_copy(update=update)


def _shares(decision: Decision) -> dict[str, float]:
    """A decision's shares of the score, rounded as a judgment shows them, and the score."""
    shares = {name: round(value, 4) for name, value in decision.shares.items()}
    if decision.rule is not None:  # the rule that decided, with its fitted confidence
        shares[f"{RULE_PREFIX}{decision.rule}"] = round(decision.confidence, 4)
    return shares | {"score": round(decision.score, 4)}


def _verdict_fields(parts: dict[str, float], decision: Decision) -> dict[str, Any]:
    """A pairwise judgment's verdict from its decision (the record's combiner)."""
    leaning = decision.leaning
    return {
        "winner": leaning,
        "leaning": leaning,
        "confidence": round(decision.confidence, 4),
        "verdict_probs": {
            "A": round(decision.p_a, 4),
            "B": round(decision.p_b, 4),
            "tie": round(decision.p_tie, 4),
        },
        "margin": round(2 * decision.p_a - 1, 4),
        "consistent": True,  # one verdict for both orders, by construction
        "order_winners": (leaning, leaning),
        "verdict_parts": parts,
    }


def with_reference_reading(
    judgment: Judgment,
    record: DecisionRecord,
    overall_range: tuple[int, int],
    *,
    criteria: bool = True,
    words_lead: float | None = None,
    behaviour: BehaviourReading | None = None,
    order_lead: float | None = None,
) -> Judgment:
    """A head's pairwise verdict with the reference read in, decided again by `record` with
    the reference's signals beside the head's: A's lead in the criterion scores read with it
    (`criteria`: they were; each answer's weighted mean on 0-1 of `overall_range`), in how
    likely it is after each answer and in the judge's check against it (where they were
    read on: `reference_likelihood_difference`, `reference_check_difference`), in the share of
    its own words each states (`words_lead`, app/deciding/reference_words.py), in the share
    of the request's items each states in its order (`order_lead`,
    app/deciding/reference_order.py) and, for a reference function, in the share of inputs
    on which each answer's function gives its result (`behaviour`, run in the jail). Each
    value is recorded as `<signal>_difference`; their weighted sum is the verdict's part
    "reference". The head reads no reference, so this is how a reference naming the right
    answer moves the verdict. Unchanged where no signal the record weighs has a value."""
    parts = judgment.verdict_parts
    if parts is None:
        return judgment
    leads = {"reference_words": words_lead, "reference_order": order_lead}
    if behaviour is not None and (lead := behaviour.lead()) is not None:
        leads["reference_behaviour"] = lead
        parts = {**parts, "reference_behaviour_inputs": behaviour.inputs}
    overall = [a.expected_overall for a in judgment.answers]
    if criteria and len(overall) == 2 and None not in overall:
        low, high = overall_range
        leads["reference_criteria"] = (overall[0] - overall[1]) / max(high - low, 1)  # type: ignore[operator]
    parts = {**parts, **{f"{n}_difference": v for n, v in leads.items() if v is not None}}
    decision = decide(record, recorded_values(parts))
    share = round(decision.shares.get("reference", 0.0), 4)
    if not share:  # the verdict stands; the text's readings are kept beside it
        kept = parts != judgment.verdict_parts
        return judgment.model_copy(update={"verdict_parts": parts}) if kept else judgment
    parts = {**parts, **_shares(decision), "reference": share}
    return judgment.model_copy(update=_verdict_fields(parts, decision))


def _ranking(
    base: Judgment,
    item: JudgeItem,
    head: StateHead,
    record: DecisionRecord,
    features: Sequence[np.ndarray | None],
    likelihoods: Likelihoods,
    similarities: np.ndarray | None,
) -> Judgment:
    answers = _answer_values(item, head, features, likelihoods, similarities)
    utilities = [decide(record, values).score for values in answers]  # the same weights
    order = sorted(range(len(utilities)), key=lambda i: -utilities[i])
    first, second = (utilities[i] for i in order[:2])
    return base.model_copy(
        update={
            "status": Status.OK,
            "ranking": tuple(i + 1 for i in order),
            # P(the first-ranked answer beats the second), by the pairwise head
            "confidence": round(sigmoid(first - second), 4),
            "verdict_parts": {f"utility_{i + 1}": round(u, 4) for i, u in enumerate(utilities)},
        }
    )


def _grades(
    base: Judgment,
    head: StateHead,
    features: Sequence[np.ndarray | None],
    likelihoods: Likelihoods,
) -> Judgment:
    weights = np.asarray(head.grade_weights or (), dtype=np.float64)
    answers = []
    for f, likelihood in zip(features, likelihoods):
        value = head.grade_intercept
        if weights.size:
            value += float(weights @ f)
        if head.grade_likelihood:
            assert likelihood is not None
            value += sum(w * likelihood[name] for name, w in head.grade_likelihood.items())
        value = min(max(value, GRADE_SCALE[0]), GRADE_SCALE[1])
        answers.append(AnswerScores(criteria={}, overall=round(value), expected_overall=value))
    # the head's grade is on 1-10 whatever the criteria's scale (a rubric's may be 1-5)
    update = {"status": Status.OK, "answers": tuple(answers), "overall_scale": GRADE_SCALE}
    return base.model_copy(update=update)
