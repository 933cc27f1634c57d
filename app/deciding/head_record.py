"""The decision record (app/deciding/decision.py) of a state head's weights as its fits left
them: the state head's own output, its likelihood features, request relevance and length,
and the reference's signals, each with what its value is, what it reads and costs, and where
it was fitted. A judge without a decision.yaml beside its head decides by this record."""

from __future__ import annotations

from typing import Any

from app.deciding.decision import DecisionRecord
from app.deciding.state_head import LIKELIHOOD_PARTS, StateHead

# what each likelihood feature's value is (models/readings.py), and the share it counts in
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
# the head's explicit signals and the reference's, by the StateHead weight each comes from:
# (weight field, value, reads, cost)
HEAD_SIGNALS = {
    "relevance": (
        "relevance",
        "cos(request, A) - cos(request, B), MiniLM embeddings",
        ("relevance",),
        "MiniLM embeds the request and each answer",
    ),
    "length": ("length", "log(len(A) / len(B)), characters", ("text",), "none"),
}
REFERENCE_SIGNALS = {
    "reference_criteria": (
        "reference_weight",
        "the criterion scores read apart with the reference: A's lead in their weighted mean, "
        "on 0-1 of the scale (where criteria are read apart)",
        ("reference_read",),
        "a criterion read per answer and criterion",
    ),
    "reference_likelihood": (
        "reference_likelihood_weight",
        "the reference's mean log-probability after A minus after B",
        ("reference_read",),
        "the reference read on after each answer's read",
    ),
    "reference_words": (
        "reference_words_weight",
        "the share of the reference's own words (not the request's) A states minus B's",
        ("text",),
        "none (read from the text)",
    ),
    "reference_order": (
        "reference_order_weight",
        "where the reference orders the request's items: the share of them A states in its "
        "order minus B's",
        ("text",),
        "none (read from the text)",
    ),
    "reference_check": (
        "reference_check_weight",
        "the log-odds of the judge's own 'same result' for A against the reference minus B's",
        ("reference_read",),
        "one token read on after each answer's read",
    ),
    "reference_behaviour": (
        "reference_behaviour_weight",
        "for a reference function: the share of its results A's function gives on the same "
        "inputs minus B's (run in the jail)",
        ("code_run",),
        "about 0.1 s a code pair (bench/code_run.md)",
    ),
}


def _signal(name: str, weight: float, value: str, share: str, reads, cost: str, fitted: dict,
            reference: bool = False) -> dict[str, Any]:  # fmt: skip
    found = {"name": name, "weight": weight, "value": value, "share": share}
    found |= {"reads": list(reads), "cost": cost}
    return found | ({"reference": True} if reference else {}) | {"fitted": fitted}


def _fits(head: StateHead) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Where the head's, the reference's and the criteria's weights were fitted."""
    fitted = head.fitted_on
    alpacaeval = fitted.get("alpacaeval_pairs", "?")
    fit = "likelihood_head" if "likelihood" in str(fitted.get("variant")) else "state_head"
    own = {
        "by": f"python -m training.heads.{fit} fit",
        "rows": f"{fitted.get('pairs', '?')} decisive training pairs ({fitted.get('ties', 0)} "
        f"ties beside): every Auto-J pair and {alpacaeval} AlpacaEval pairs (at most "
        f"{fitted.get('per_request', 4)} per instruction), with counterexamples; with the "
        "likelihood and relevance weights",
        "cv": f"C {fitted.get('C', '?')}, variant '{fitted.get('variant', '?')}'",
    }
    reference = {
        "by": "python -m training.heads.reference_fit",
        "rows": "161 reference-decided training pairs, on top of the head's logit",
        "cv": str(fitted.get("reference_signals", "")),
    }
    criteria = {
        "by": "python -m training.datasets.reference_pairs",
        "rows": str(fitted.get("reference_weight", "")),
    }
    return own, reference, criteria


def record_of(judge: str, head: StateHead, doubt_below: float) -> dict:
    """The record's data for `head`'s weights (a signal of weight 0 is left out)."""
    own, reference, criteria = _fits(head)
    signals: list[dict[str, Any]] = []
    if head.weights:
        value = (
            f"the state head's w . (f(A) - f(B)) on the model's states of each answer "
            f"({len(head.weights)} weights in state_head.json)"
        )
        cost = "one read of each answer (shared by every likelihood signal)"
        signals.append(_signal("states", 1.0, value, "states", ["states"], cost, own))
    for feature, weight in head.likelihood.items():
        value = f"A's {FEATURE_WORDS[feature]} minus B's"
        cost = "none beyond the read of each answer"
        signals.append(
            _signal(feature, weight, value, SHARE_OF[feature], ["likelihood"], cost, own)
        )
    for name, (field, value, reads, cost) in HEAD_SIGNALS.items():
        if weight := getattr(head, field):
            signals.append(_signal(name, weight, value, name, reads, cost, own))
    for name, (field, value, reads, cost) in REFERENCE_SIGNALS.items():
        if weight := getattr(head, field):
            where = criteria if name == "reference_criteria" else reference
            signals.append(_signal(name, weight, value, name, reads, cost, where, reference=True))
    return {
        "judge": judge,
        "scale": "logit",
        "signals": signals,
        "doubt_below": doubt_below,
    }


def grade_of_head(head: StateHead) -> dict[str, Any] | None:
    """The grade rule's data for a head that holds its grade weights (None: it grades not)."""
    if not head.grades:
        return None
    fitted = {"by": "python -m training.heads.state_head", "rows": "Auto-J's rated single answers"}
    signals = []
    if head.grade_weights:
        count = len(head.grade_weights)
        value = f"the grade head's w . f(answer) ({count} weights in state_head.json)"
        cost = "one read of the answer (shared by every likelihood signal)"
        signals.append(_signal("grade_states", 1.0, value, "grade", ["states"], cost, fitted))
    for feature, weight in head.grade_likelihood.items():
        cost = "none beyond the read of the answer"
        signals.append(
            _signal(feature, weight, f"its {FEATURE_WORDS[feature]}", "grade", ["likelihood"],
                    cost, fitted)
        )  # fmt: skip
    return {"signals": signals, "intercept": head.grade_intercept, "scale": [1, 10]}


def head_decision(head: StateHead, doubt_below: float) -> DecisionRecord:
    """The decision record of a head that holds its own weights (a judge without a
    decision.yaml: its fits wrote the weights into its state_head.json)."""
    data = record_of("", head, doubt_below)
    if (grade := grade_of_head(head)) is not None:
        data["grade"] = grade
    return DecisionRecord.model_validate(data)
