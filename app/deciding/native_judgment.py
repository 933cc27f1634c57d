"""Judgments from native replies (app/formats/native_formats.py).

Each answer's grade is its overall, on the format's own scale, which the
judgment records (`overall_scale`: Prometheus 1-5, JudgeLM / Auto-J / EasyJudge
1-10). EasyJudge's dimension scores become criterion scores when they name
every criterion of the row; the explanation is the feedback.

Free text carries no probabilities. As app/deciding/verdicts.py does for text-only
backends, each order's verdict counts with probability 1; the two orders of a
swapped pair are averaged and combine as "agree" (a verdict both orders give,
else a tie flagged inconsistent), whatever `pair_combine` says, since the
calibrated combination needs probabilities. Grades and rankings get no
confidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from app.catalog.scoring import ScoringRule
from app.deciding import verdicts
from app.deciding.judgment_builder import RAW_SEPARATOR
from app.formats.native_formats import NativeFormat, native_format
from app.formats.native_parsers import NativeReply
from app.records import AnswerScores, Judgment, Protocol, Status
from models.backends.base import Generation


@dataclass(frozen=True)
class NativeAttempt:
    """One model call: the answers in `order` (input indices, as shown) and its reply."""

    order: tuple[int, ...]
    generation: Generation
    reply: NativeReply | None
    failure: str | None


def native_judgment(
    base: Judgment, attempts: Sequence[NativeAttempt], reply_format: str, rule: ScoringRule
) -> Judgment:
    """One judgment from the attempts of one item (two orders of a swapped pair)."""
    spec = native_format(reply_format)
    if not spec.uses_criteria:  # the model judged by its own fixed criteria
        base = base.model_copy(update={"scenario": None, "criteria": ()})
    if base.protocol is Protocol.PAIRWISE and len(attempts) == 2:
        return _swapped(base, attempts[0], attempts[1], spec, rule)
    meta = _meta(attempts)
    failed = [a for a in attempts if a.reply is None]
    if failed:
        reasons = [
            (f"answer {a.order[0] + 1}: " if len(attempts) > 1 else "") + (a.failure or "")
            for a in failed
        ]
        return base.model_copy(
            update={**meta, "status": Status.UNPARSED, "error": "; ".join(reasons)}
        )
    if base.protocol is Protocol.PAIRWISE:
        return _pair(base.model_copy(update=meta), attempts[0], spec, rule)
    answers: dict[int, AnswerScores] = {}
    for attempt in attempts:
        answers.update(_answers(attempt, rule))
    update = {
        **meta,
        "status": Status.OK,
        "answers": tuple(answers[i] for i in sorted(answers)),
        "overall_scale": spec.scale,
        "feedback": _joined(a.reply.feedback for a in attempts if a.reply is not None),
    }
    if base.protocol is Protocol.MULTI:
        update["ranking"] = tuple(
            sorted(range(1, len(answers) + 1), key=lambda n: -answers[n - 1].overall)
        )
    return base.model_copy(update=update)


def _pair(
    base: Judgment, attempt: NativeAttempt, spec: NativeFormat, rule: ScoringRule
) -> Judgment:
    """One order of a pair: its verdict in the input's labels, with probability 1."""
    reply = attempt.reply
    assert reply is not None and reply.verdict is not None
    probs = verdicts.to_original(verdicts.certain(reply.verdict), attempt.order)
    winner = verdicts.most_likely(probs)
    answers = _answers(attempt, rule)
    return base.model_copy(
        update={
            "status": Status.OK,
            "winner": winner,
            "leaning": winner,
            "answers": tuple(answers[i] for i in sorted(answers)),
            "overall_scale": spec.scale if answers else None,
            "verdict_probs": probs,
            "confidence": probs[winner],
            "feedback": reply.feedback,
        }
    )


def _swapped(
    base: Judgment,
    first: NativeAttempt,
    second: NativeAttempt,
    spec: NativeFormat,
    rule: ScoringRule,
) -> Judgment:
    meta = {
        **_meta([first, second]),
        "swapped": True,
        "raw_output": first.generation.text,
        "raw_output_swapped": second.generation.text,
    }
    if first.reply is None or second.reply is None:
        which = "original order" if first.reply is None else "swapped order"
        reason = first.failure if first.reply is None else second.failure
        return base.model_copy(
            update={**meta, "status": Status.UNPARSED, "error": f"{which}: {reason}"}
        )
    one, two = _pair(base, first, spec, rule), _pair(base, second, spec, rule)
    winner = one.winner if one.winner == two.winner else "tie"
    probs = verdicts.average([one.verdict_probs or {}, two.verdict_probs or {}])
    answers = tuple(_average(a, b) for a, b in zip(one.answers, two.answers))
    return base.model_copy(
        update={
            **meta,
            **verdicts.both_orders(one, two, winner, probs, answers),
            "overall_scale": spec.scale if answers else None,
            "verdict_probs": probs,
        }
    )


def _answers(attempt: NativeAttempt, rule: ScoringRule) -> dict[int, AnswerScores]:
    """The grades of one attempt by input answer index (none for verdict-only formats)."""
    reply = attempt.reply
    assert reply is not None
    answers = {}
    for position, grade in enumerate(reply.grades):
        dimensions = reply.dimensions[position] if position < len(reply.dimensions) else {}
        answers[attempt.order[position]] = AnswerScores(
            criteria=_criteria(dimensions, rule), overall=float(grade)
        )
    return answers


def _criteria(dimensions: dict[str, int], rule: ScoringRule) -> dict[str, float]:
    """EasyJudge's dimension scores by criterion key, when they name every criterion of
    the rule (by name or key, case and spacing aside); else none (they stay in the raw
    output)."""
    if not dimensions:
        return {}
    named = {_name(name): score for name, score in dimensions.items()}
    found = {}
    for spec in rule.specs:
        for name in (_name(spec.name), _name(spec.key.replace("_", " "))):
            if name in named:
                found[spec.key] = float(named[name])
                break
    return found if len(found) == len(rule.specs) else {}


def _name(text: str) -> str:
    return " ".join(text.lower().split())


def _average(a: AnswerScores, b: AnswerScores) -> AnswerScores:
    same = a.criteria.keys() == b.criteria.keys()
    criteria = {k: (a.criteria[k] + b.criteria[k]) / 2 for k in a.criteria} if same else {}
    return AnswerScores(criteria=criteria, overall=(a.overall + b.overall) / 2)


def _joined(texts: Iterable[str | None]) -> str | None:
    kept = [text for text in texts if text]
    return "\n\n".join(kept) if kept else None


def _meta(attempts: Sequence[NativeAttempt]) -> dict[str, object]:
    generations = [a.generation for a in attempts]
    return {
        "raw_output": RAW_SEPARATOR.join(g.text for g in generations),
        "latency_s": _total(g.latency_s for g in generations),
        "prompt_tokens": _total(g.prompt_tokens for g in generations),
        "completion_tokens": _total(g.completion_tokens for g in generations),
    }


def _total(values: Iterable[float | int | None]) -> float | int | None:
    values = list(values)
    return None if any(v is None for v in values) else sum(values)
