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

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from app.catalog.scoring import ScoringRule
from app.code_run.behaviour import BehaviourReading, Unread, with_code_run
from app.deciding.criterion_head import CriterionHead, head_levels, level_caps, reference_shift
from app.deciding.criterion_reads import with_levels
from app.deciding.decision import (
    SHARED_KINDS,
    Decision,
    DecisionRecord,
    GradeRule,
    decide,
    grade_of,
    sigmoid,
)
from app.deciding.own_answer import OwnAnswer
from app.deciding.reward import RewardReader
from app.deciding.rubric_grade import with_rubric_grade
from app.deciding.signals import (
    ANSWER_SIGNALS,
    OWN_ANSWER_SIGNALS,
    REFERENCE_READS,
    REFERENCE_SIGNALS,
    AnswerReads,
    PairReads,
    each_answer,
    pair_values,
)
from app.deciding.state_head import StateHead, state_text
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from models.readings import ReplyCriteria


@dataclass(frozen=True)
class ReferenceAsk:
    """A reference in use beside a head's reads: what running each answer's function beside
    the reference function found (code run in the jail) and a single answer's rubric grade
    rule, where one fits the item's rubric."""

    behaviour: BehaviourReading | Unread | None = None
    rubric_grade: GradeRule | None = None


@dataclass(frozen=True)
class Asks:
    """What a head's reads also give beside its verdict: the reference read on from them
    (`turn`, a head that reads replies), criterion scores given by a criterion head
    (`levels`), and the reference's part (`reference`, a reference in use), or the judge's
    own answer read in its place (`own`: the turn reads it); a pair's answers read again with
    a trained reward model's adapter (`reward`, where the record weighs it)."""

    turn: ReplyCriteria | None = None
    levels: LevelAsk | None = None
    reference: ReferenceAsk | None = None
    own: OwnAnswer | None = None
    reward: RewardReader | None = None


def head_judgment(
    base: Judgment,
    item: JudgeItem,
    head: StateHead,
    source: Any,
    record: DecisionRecord,
    asks: Asks = Asks(),
) -> Judgment:
    """The judgment of `item` by the head: a verdict, a ranking or grades. `source` is the
    backend: its `state_features` (a head that reads text) or `read_answers` (one that
    reads each answer as the model's reply). With `asks.turn` (a head that reads replies),
    the reference is read on from the same reads (criterion_reads.reference_turn); with
    `asks.levels`, a criterion head gives criterion scores from
    the same reads (no read of their own); with `asks.reference`, the reference's signals
    join a pair's (decided once, by the record, with everything read), a single answer's
    rubric grade is combined from its reads, and what running the answers' code found is
    kept."""
    turn, levels, reference = asks.turn, asks.levels, asks.reference
    likely = "likelihood" in record.reads()
    reads = read_features(item, head, source, turn, likely)
    single = base.protocol is Protocol.SINGLE
    relevance = "relevance" in record.reads() and not single
    if relevance or (levels is not None and levels.head.relevance):
        from app.deciding.relevance import request_similarities

        reads = replace(reads, similarities=request_similarities(item.question, item.answers))
    means = [float(np.mean(r)) if r is not None and len(r) else None for r in reads.references]
    answers = () if single else answer_values(item, head, reads, relevance)
    if asks.reward is not None and base.protocol is Protocol.PAIRWISE:
        rewards = asks.reward.rewards(item, source)
        answers = [values | {"reward": value} for values, value in zip(answers, rewards)]
    ran = reference.behaviour if reference is not None else None
    behaviour = ran if isinstance(ran, BehaviourReading) else None
    given = item.reference if reference is not None else None
    own = asks.own if reference is None else None
    pair = PairReads(item, answers, given, means, reads.odds, behaviour, own)
    judgment = _grades(base, head, record, reads) if single else base
    if base.protocol is Protocol.MULTI:
        judgment = _ranking(base, record, list(pair.answers))
    if levels is not None:
        judgment = _with_head_levels(judgment, levels, reads, record, pair)
    if base.protocol is Protocol.PAIRWISE:
        judgment = pair_verdict(judgment, record, pair)
        if own is not None:
            judgment = judgment.model_copy(update={"own_answer": asdict(asks.own)})
    elif single and turn is not None:
        judgment = _with_grade_reads(judgment, means[0] if means else None, reads.odds)
    if reference is None:
        return judgment
    return with_code_run(with_rubric_part(judgment, item, reference), reference.behaviour)


def with_rubric_part(judgment: Judgment, item: JudgeItem, ask: ReferenceAsk) -> Judgment:
    """A single answer's judgment with its rubric grade combined from its reads
    (app/deciding/rubric_grade.py), once its rubric was read apart with the reference."""
    if judgment.protocol is not Protocol.SINGLE or ask.rubric_grade is None:
        return judgment
    return with_rubric_grade(judgment, item, ask.rubric_grade)


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


CHECK_FLOOR = 1e-6  # a check's probability is kept this far from 0 and 1 (finite log-odds)


def check_log_odds(p_true: float) -> float:
    """The log-odds of the judge's "true" to a check (clipped: finite)."""
    p = min(max(p_true, CHECK_FLOOR), 1 - CHECK_FLOOR)
    return float(np.log(p / (1 - p)))


@dataclass(frozen=True)
class LevelAsk:
    """Criterion scores a criterion head gives from the verdict's reads (moved, with a
    reference in use, by the judge's record's criterion_shift)."""

    head: CriterionHead
    rule: ScoringRule


def _reference_shift(
    record: DecisionRecord, pair: PairReads
) -> tuple[np.ndarray | None, dict[str, Sequence[float | None]]]:
    """Each answer's shift in level points for what the reference in use shows of it (the
    record's criterion_shift), and each answer's value of the signals and rules it names
    (none without a shift)."""
    rule = record.criterion_shift
    if not (pair.reference and rule):
        return None, {}
    names = (*(signal.name for signal in rule.signals), *rule.caps)
    values = {name: each_answer(name, pair) or () for name in names}
    return reference_shift(rule, values, len(pair.item.answers)), values


HELD_WHY = {  # why a rule held a level, of the answer's share by it
    "reference_behaviour": "its function gives {share:.0%} of the reference function's results",
    "reference_order": "it states {share:.0%} of the request's items in the reference's order",
}


def _with_head_levels(
    judgment: Judgment, ask: LevelAsk, reads: AnswerReads, record: DecisionRecord, pair: PairReads
) -> Judgment:
    shift, shares = _reference_shift(record, pair)
    found = head_levels(ask.head, ask.rule.specs, reads, pair.item.answers, shift)
    if found is None:
        why = "the verdict's read holds no states or likelihoods for the criterion head"
        note = f"the criterion scores could not be given ({why})"
        return judgment.model_copy(update={"criteria": (), "criteria_note": note})
    moved = [f" (the reference moved it {s:+.2f})" for s in shift] if shift is not None else None
    caps = level_caps(record, ask.rule.specs, shares) if shift is not None else []
    lines = []
    for n, values in found.items():
        for c, (key, value) in enumerate(values.items()):
            line = f"answer {n + 1} {key}: criterion head {value:.2f}{moved[n] if moved else ''}"
            # the lowest hold (the first rule's where two hold alike)
            cap, rule = min(
                ((h[n, c], name) for name, h in caps), key=lambda t: t[0], default=(value, "")
            )
            if value > cap:
                values[key] = float(cap)
                why = HELD_WHY[rule].format(share=shares[rule][n])
                line += f", held at {cap:.2f}: {why}"
            lines.append(line)
    raw = "\n".join(lines)
    judged = with_levels(judgment, found, ask.rule, raw)
    return judged.model_copy(update={"criteria_by_head": True})


def read_features(
    item: JudgeItem,
    head: StateHead,
    source: Any,
    turn: ReplyCriteria | None = None,
    likelihoods: bool = True,
) -> AnswerReads:
    """Each answer's pooled states, (for a head that reads replies, where `likelihoods`)
    likelihood features, and (with the reference's `turn`) the log-probabilities of the
    reference's tokens after it and its check's log-odds."""
    if head.reads == "reply":
        answers = [a[: head.answer_chars] for a in item.answers]
        question = item.question[: head.question_chars]
        if turn is None:
            readings = source.read_answers(question, answers, likelihoods)
        else:
            readings = source.read_answers(question, answers, likelihoods, turn)
        return AnswerReads(
            [r.states for r in readings],
            [r.features() if likelihoods else None for r in readings],
            [r.reference for r in readings],
            [None if r.check is None else check_log_odds(r.check) for r in readings],
        )
    features: list[np.ndarray | None] = [
        source.state_features(state_text(item.question, a, head.question_chars, head.answer_chars))
        for a in item.answers
    ]
    nothing = [None] * len(item.answers)
    return AnswerReads(features, list(nothing), list(nothing), list(nothing))


def answer_values(
    item: JudgeItem, head: StateHead, reads: AnswerReads, relevance: bool
) -> list[dict[str, float]]:
    """Each answer's value of each signal read of it (app/deciding/decision.py weighs them):
    its states (the state head's w . f), each likelihood feature (where read), its request
    relevance (cos(request, answer), where `relevance`) and its log length in characters."""
    weights = np.asarray(head.weights, dtype=np.float64)
    found = []
    for n, (answer, features) in enumerate(zip(item.answers, reads.features)):
        values = dict(reads.likelihoods[n] or {})
        if head.weights:
            if features is None or features.shape != weights.shape:
                width = "none" if features is None else features.shape[0]
                raise ValueError(
                    f"the head reads {len(weights)} features, the model gave {width}: "
                    f"it was fitted on {head.base_file}"
                )
            values["states"] = float(weights @ features)
        if relevance:
            values["relevance"] = float(reads.similarities[n])
        values["length"] = math.log(max(len(answer), 1))
        found.append(values)
    return found


BASE_SHARES = ("states", "relevance", "length")  # shown even where they gave nothing
RULE_PREFIX = "rule_"  # a verdict part naming the record's rule that decided the pair


def pair_verdict(judgment: Judgment, record: DecisionRecord, reads: PairReads) -> Judgment:
    """A pair's verdict by `record`, decided once from everything read of it: each answer's
    values and, with a reference in use, the reference's signals (app/deciding/signals.py),
    those the record uses and those whose reads were made; their weighted sum is the
    verdict's part "reference". Every value read is recorded, `<signal>_difference`, whether
    the record weighs it or not: the fit chooses."""
    reference = {*record.used(), *REFERENCE_READS}.intersection(REFERENCE_SIGNALS)
    names = (*ANSWER_SIGNALS, *record.own_signals(), *sorted(reference), *OWN_ANSWER_SIGNALS)
    values = pair_values(names, reads)
    decision = decide(record, values)
    parts = {name: 0.0 for name in BASE_SHARES} | _shares(decision, record)
    parts |= {f"{name}_difference": value for name, value in values.items()}
    if "reference_behaviour" in values and reads.behaviour is not None:
        parts["reference_behaviour_inputs"] = reads.behaviour.inputs
    # what the code run said where it could not be weighed (app/code_run/behaviour.py)
    kept = (judgment.verdict_parts or {}).items()
    parts |= {key: value for key, value in kept if key.startswith("reference_code_")}
    update = {"status": Status.OK, **_verdict_fields(parts, decision)}
    return judgment.model_copy(update=update)


def _shares(decision: Decision, record: DecisionRecord) -> dict[str, float]:
    """A decision's shares of the score, rounded as a judgment shows them, and the score;
    the reference's parts only where the reference moved it."""
    shares = {name: round(value, 4) for name, value in decision.shares.items()}
    for kind in SHARED_KINDS:  # their parts only where they moved it
        if not shares.get(kind):
            for part in (*record.signals, *record.rules):
                if getattr(part, kind) and not shares.get(part.share):
                    shares.pop(part.share, None)
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


def _ranking(base: Judgment, record: DecisionRecord, answers: list[dict[str, float]]) -> Judgment:
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
    base: Judgment, head: StateHead, record: DecisionRecord, reads: AnswerReads
) -> Judgment:
    """Each answer's grade by the record's grade rule, from its states (the grade head's
    w . f) and its likelihood features."""
    rule = record.grade
    if rule is None:
        raise ValueError("the judge's decision record has no grade rule: it grades no answer")
    answers = []
    for f, likelihood in zip(reads.features, reads.likelihoods):
        value = answer_grade(rule, head, f, likelihood)
        answers.append(AnswerScores(criteria={}, overall=round(value), expected_overall=value))
    # the head's grade is on its rule's scale whatever the criteria's (a rubric's may be 1-5)
    update = {"status": Status.OK, "answers": tuple(answers), "overall_scale": rule.scale}
    return base.model_copy(update=update)


def answer_grade(
    rule: GradeRule, head: StateHead, states: np.ndarray | None, likelihood: dict[str, float] | None
) -> float:
    """One answer's grade by `rule` from its states (the grade head's w . f, where read) and
    its likelihood features."""
    values = dict(likelihood or {})
    if head.grade_weights and states is not None:
        values["grade_states"] = float(np.asarray(head.grade_weights, dtype=np.float64) @ states)
    return grade_of(rule, values)
