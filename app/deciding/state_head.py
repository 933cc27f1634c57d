"""A pairwise verdict read from the judge model's own hidden states: a classification head.

The judge model reads each answer with its request (`state_text`, or as its own reply); the
mean and the last of its final-layer token states (`models.readings.pooled`) describe that
answer. A linear head, fitted on labelled training-split pairs, turns the difference of the
two answers' features into the `states` signal, w . (f(A) - f(B)), and (with grade weights)
one answer's features into its `grade_states`. The head holds those vectors alone: how they
are weighed with the other signals (likelihood, relevance, a reference's) is the judge's
decision record (app/deciding/decision.py). The head has no intercept and was fitted on both
orders of every pair, so it cannot prefer a position.

This is the empirical-study seed's "classification head" for fine-tuned judges at
its cheapest: the base stays frozen, and the head is a small JSON file committed
beside the registry entry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.foundation.datafiles import validate

QUESTION_CHARS = 400  # what the head reads of the request
ANSWER_CHARS = 800  # and of each answer


class StateHead(BaseModel):
    """The fitted head (models/judges/<name>/state_head.json)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_file: str  # the GGUF whose states were read; other files give other states
    question_chars: int = Field(default=QUESTION_CHARS, ge=1)
    answer_chars: int = Field(default=ANSWER_CHARS, ge=1)
    # "text": states of `state_text` (request and answer as plain text); "reply": the answer
    # read as the model's own reply to the request (models/readings.py), its states taken
    # where the answer's tokens are predicted, beside its likelihood features
    reads: Literal["text", "reply"] = "text"
    weights: tuple[float, ...]  # per pooled feature (mean states, then last-token states)
    # single answers: the grade head's w . f(answer) (the judge's decision record weighs it)
    grade_weights: tuple[float, ...] | None = None
    fitted_on: dict[str, int | float | str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _even_features(self) -> StateHead:
        if len(self.weights) % 2 or not (self.weights or self.reads == "reply"):
            raise ValueError(
                "weights: mean and last-token states, so an even count, non-zero unless the "
                "head reads the answers' likelihoods alone (reads: reply)"
            )
        if self.grade_weights is not None and len(self.grade_weights) % 2:
            raise ValueError("grade_weights: mean and last-token states, so an even count")
        return self

    @property
    def hidden_size(self) -> int:
        return len(self.weights) // 2


@cache
def load_state_head(path: Path) -> StateHead:
    """The head at `path`, validated; errors name the file and the field."""
    import json

    from models.foundation.errors import ConfigError

    if not path.is_file():
        raise ConfigError(path, "state_head", "file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(path, "state_head", f"not valid JSON: {exc}") from exc
    return validate(StateHead, data, path)


# the likelihood judge (`--decider likelihood`, any model): a head that reads the answers'
# likelihoods and no states, and its record of five likelihood weights (under models/;
# fitted by training.heads.likelihood_head)
LIKELIHOOD_HEAD_FILE = "likelihood_head.json"
LIKELIHOOD_DECISION_FILE = "likelihood_decision.yaml"
LIKELIHOOD_HEAD = Path(__file__).resolve().parents[2] / "models" / LIKELIHOOD_HEAD_FILE


def likelihood_judge_head() -> StateHead:
    """The likelihood judge's head (`--decider likelihood`): it reads no states."""
    return load_state_head(LIKELIHOOD_HEAD)


def state_text(
    question: str,
    answer: str,
    question_chars: int = QUESTION_CHARS,
    answer_chars: int = ANSWER_CHARS,
) -> str:
    """What the judge model reads for one answer: the request and the answer, both cut."""
    return f"Request: {question[:question_chars]}\n\nAnswer: {answer[:answer_chars]}"


def length_log_ratio(first: str, second: str) -> float:
    """log(len(first) / len(second)), characters, each at least one."""
    return math.log(max(len(first), 1) / max(len(second), 1))


# The signals a head's parts are reported by, and the likelihood features in each.
LIKELIHOOD_PARTS = {
    "fit": ("pmi_mean", "pmi_sum", "pmi_head"),  # how much the request raised the answer
    "fluency": ("uncond_mean", "uncond_sum"),  # how likely the answer is with no request
    "likelihood": ("cond_mean", "cond_sum"),  # how likely it is after the request
    "length": ("log_tokens",),
}


# what each part of a head's score means, for a user, where the judge's decision record
# names no words of its own (its `shares`); a reference's signals in words that fit "a
# reference reaches it through ..." and "the verdict adds ..." alike
PART_WORDS = {
    "fit": "fits the request (how much the request raises the model's likelihood of it)",
    "fluency": "reads naturally (the model's likelihood of it with no request)",
    "likelihood": "likely after the request",
    "states": "the model's reading of the answers",
    "relevance": "request relevance",
    "length": "answer length",
    "reference": "agrees with the reference answer",
    "own_answer": "agrees with the judge's own answer (no reference given)",
    "reference_likelihood": "how likely the reference is after each answer",
    "reference_words": "how much of what the reference states each answer states",
    "reference_order": "whether each answer states the request's items in the reference's order",
    "reference_check": "the judge's check of each answer against the reference",
    "reference_behaviour": "each answer's function compared with the reference's on the same "
    "inputs",
}


def reference_signals(parts: dict[str, float]) -> list[str]:
    """The reference's signals through which it moved a pair's verdict."""
    from app.deciding.signals import REFERENCE_SIGNALS

    if not parts.get("reference"):
        return []
    return [name for name in REFERENCE_SIGNALS if parts.get(name)]


def reference_decided(parts: dict[str, float], kind: str = "reference") -> str | None:
    """The answer the head leaned to without the reference (`kind`: or the judge's own
    answer, "own_answer"), where its part turned a pair's verdict to the other answer; None
    where it did not."""
    share = parts.get(kind)
    if not share or "score" not in parts:
        return None
    with_it, without = parts["score"], parts["score"] - share
    if with_it * without < 0:
        return "A" if without > 0 else "B"
    return None


def part_phrases(parts: dict[str, float], shares: Mapping[str, str] | None = None) -> list[str]:
    """Each share of a head's score and where it pushed the verdict, largest first, e.g.
    "fits the request (...): 0.80 toward A", named by `shares` (the decision record's words)
    or PART_WORDS; shares that pushed nowhere are left out, except the states of a head that
    reads states alone."""
    words = PART_WORDS | dict(shares or {})
    # each reference's or own answer's signal is said in its sum ("reference", "own_answer")
    own = [name for name in words if not name.startswith(("reference_", "self_reference_"))]
    used = [(name, parts[name]) for name in own if parts.get(name)]
    if not used:
        return [f"{words['states']}: nothing toward either answer"]
    used.sort(key=lambda item: -abs(item[1]))
    return [f"{words[n]}: {abs(v):.2f} toward {'A' if v > 0 else 'B'}" for n, v in used]
