"""A head fit's weights as its judge's decision record (app/deciding/decision.py).

A head keeps its state vectors in its state_head.json; every weight around them (the
states' own, the likelihood features', request relevance, length, the grade's intercept) is
a signal of the judge's record, which the head's fit writes beside the head. The default
judge's record is then fitted whole by `python -m training.decision.fit`; the other heads'
records are their fits' as written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.deciding.decision import Declared
from app.deciding.state_head import LIKELIHOOD_PARTS

# what each likelihood feature's value is (models/readings.py)
FEATURE_WORDS = {
    "cond_mean": "mean log-probability of its tokens after the request",
    "cond_sum": "summed log-probability of its tokens after the request",
    "uncond_mean": "mean log-probability of its tokens after no request",
    "uncond_sum": "summed log-probability of its tokens after no request",
    "pmi_mean": "mean rise of its tokens' log-probability from no request to the request",
    "pmi_sum": "summed rise of its tokens' log-probability from no request to the request",
    "pmi_head": "rise of its first tokens' log-probability from no request to the request",
    "log_tokens": "log of its token count",
}
SHARE_OF = {feature: share for share, members in LIKELIHOOD_PARTS.items() for feature in members}
# the signals read beside the head: (value, reads, cost)
BESIDE = {
    "relevance": (
        "cos(request, A) - cos(request, B), MiniLM embeddings",
        ("relevance",),
        "MiniLM embeds the request and each answer",
    ),
    "length": ("log(len(A) / len(B)), characters", ("text",), "none"),
}


Words = tuple[str, str, tuple[str, ...], str]  # a signal's value, share, reads and cost


def _signal(
    name: str,
    weight: float,
    words: Words,
    fitted: Mapping[str, str],
    kinds: Mapping[str, bool] | None = None,
) -> dict[str, Any]:
    """A signal's record data; `kinds`: what it reads only where given (`reference`, a
    reference in use; `own_answer`, the judge's own answer in its place)."""
    value, share, reads, cost = words
    found = {"name": name, "weight": weight, "value": value, "share": share}
    found |= {"reads": list(reads), "cost": cost, "fitted": dict(fitted)}
    return found | {kind: True for kind, given in (kinds or {}).items() if given}


def _pair_words(name: str, width: int) -> tuple[str, str, tuple[str, ...], str]:
    """What the head's pair signal `name` is: its value, share, reads and cost."""
    if name == "states":
        value = "the state head's w . (f(A) - f(B)) on the model's states of each answer "
        value += f"({width} weights in state_head.json)"
        return value, "states", ("states",), "one read of each answer (shared by every signal)"
    if name in BESIDE:
        value, reads, cost = BESIDE[name]
        return value, name, reads, cost
    if name not in FEATURE_WORDS:
        raise ValueError(f"'{name}' is no signal a head's fit weighs")
    value = f"A's {FEATURE_WORDS[name]} minus B's"
    return value, SHARE_OF[name], ("likelihood",), "none beyond the read of each answer"


def grade_rule(
    weights: Mapping[str, float], intercept: float, fitted: Mapping[str, str], width: int = 0
) -> dict[str, Any]:
    """One answer's grade: `weights` of `grade_states` (the grade head's w . f, `width`
    weights) and likelihood features, plus `intercept`, on 1-10."""
    signals = []
    for name, weight in weights.items():
        if name == "grade_states":
            value = f"the grade head's w . f(answer) ({width} weights in state_head.json)"
            words = (value, "grade", ("states",), "one read of the answer (shared)")
        else:
            words = (f"its {FEATURE_WORDS[name]}", "grade", ("likelihood",), "none beyond its read")
        signals.append(_signal(name, weight, words, fitted))
    return {"signals": signals, "intercept": intercept, "scale": [1, 10]}


def head_record(
    judge: str,
    weights: Mapping[str, float],
    fitted: Mapping[str, str],
    width: int = 0,
    grade: dict[str, Any] | None = None,
    declared: Mapping[str, Declared] | None = None,
) -> dict[str, Any]:
    """The record's data of a head fit: its pair signals' `weights` (`states`: the head's
    vector of `width` weights, likelihood features, relevance, length, and the signals
    `declared` declares; a weight of 0 is left out), all fitted as `fitted` says, and its
    `grade` rule (grade_rule), if it grades."""
    signals = []
    for name, weight in weights.items():
        if not weight:
            continue
        if declared and name in declared:
            found = declared[name]
            words = (found.value, found.share, found.reads, found.cost)
            kinds = {"reference": found.reference, "own_answer": found.own_answer}
            signals.append(_signal(name, weight, words, fitted, kinds))
        else:
            signals.append(_signal(name, weight, _pair_words(name, width), fitted))
    data = {"judge": judge, "scale": "logit", "signals": signals, "doubt_below": 0.55}
    return data | ({"grade": grade} if grade is not None else {})
