"""A judge's pairwise decision as one declared record: the named signals it weighs and their
weights, the scale they sum on, the tie band and the doubt threshold, and where each weight
was fitted (models/judges/<name>/decision.yaml, validated on load; errors name the file and
the field). `decide` is the one function that turns a pair's signal values into P(A),
P(B), P(tie), the verdict and each signal's share of it.

A signal's value is A's lead over B in one reading (the state head's output, a likelihood
feature, request relevance, a reference's reading...); a signal without a value for a pair
(not read, or not applicable: no reference) adds nothing. On the logit scale

    score = sum(weight * value),   P(A) = sigmoid(score),   P(B) = 1 - P(A)

and the verdict is a tie where |P(A) - 1/2| <= tie_within, else the likelier answer, marked
uncertain below `doubt_below` confidence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.foundation.datafiles import read_mapping, validate

Read = Literal["states", "likelihood", "relevance", "text", "reference_read", "code_run"]


class Fitted(BaseModel):
    """Where a weight was fitted: the command, its rows and its cross-validated figure."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: str
    rows: str
    cv: str = ""


class Signal(BaseModel):
    """One named signal of a decision: its weight, what its value is, the page's share it
    counts in, what the engine must read for it, and what it costs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    weight: float
    value: str  # what the value is, in words: A's lead in ...
    share: str  # the verdict part it counts in (several signals may share one)
    reads: tuple[Read, ...]
    cost: str
    reference: bool = False  # read only where the pair has a reference in use
    fitted: Fitted


class DecisionRecord(BaseModel):
    """A judge's whole pairwise rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: str
    scale: Literal["logit"] = "logit"
    signals: tuple[Signal, ...] = Field(min_length=1)
    tie_within: float = Field(ge=0.0, lt=0.5)
    doubt_below: float = Field(ge=0.0, le=1.0)  # the judge's uncertain_below setting

    @model_validator(mode="after")
    def _distinct_names(self) -> DecisionRecord:
        names = [signal.name for signal in self.signals]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"signals: each name once, {repeated} repeated")
        return self

    def weights(self) -> dict[str, float]:
        return {signal.name: signal.weight for signal in self.signals}


@dataclass(frozen=True)
class Decision:
    """A pair's decision: the score (logit), the probabilities, the verdict the judge leans
    to (`leaning`), whether it is below the doubt threshold, and each share's part of the
    score (the reference's signals also summed as `reference`)."""

    score: float
    p_a: float
    p_tie: float
    leaning: str
    uncertain: bool
    shares: dict[str, float]

    @property
    def p_b(self) -> float:
        return 1.0 - self.p_a - self.p_tie

    @property
    def confidence(self) -> float:
        return max(self.p_a, self.p_b)


def sigmoid(score: float) -> float:
    return 1 / (1 + math.exp(-max(min(score, 50.0), -50.0)))


def decide(record: DecisionRecord, values: Mapping[str, float]) -> Decision:
    """The decision for a pair whose signals have `values` (by signal name; one without a
    value adds nothing)."""
    shares: dict[str, float] = {}
    reference = 0.0
    for signal in record.signals:
        value = values.get(signal.name)
        if value is None or not signal.weight:
            continue
        part = signal.weight * value
        shares[signal.share] = shares.get(signal.share, 0.0) + part
        reference += part if signal.reference else 0.0
    if reference:
        shares["reference"] = reference
    score = sum(part for name, part in shares.items() if name != "reference")
    p_a = sigmoid(score)
    leaning = "A" if p_a > 0.5 else "B" if p_a < 0.5 else "tie"
    if abs(p_a - 0.5) <= record.tie_within:
        leaning = "tie"
    confidence = max(p_a, 1 - p_a)
    return Decision(score, p_a, 0.0, leaning, confidence < record.doubt_below, shares)


def recorded_values(parts: Mapping[str, float]) -> dict[str, float]:
    """The signal values a pairwise judgment recorded in its `verdict_parts`, each as
    `<signal>_difference` (A's value minus B's); a judgment saved before the states' value
    was recorded keeps it as its `states` share (its weight is 1)."""
    found = {
        key.removesuffix("_difference"): value
        for key, value in parts.items()
        if key.endswith("_difference")
    }
    if "states" not in found and "states" in parts:
        found["states"] = parts["states"]
    return found


@cache
def load_decision(path: Path) -> DecisionRecord:
    """The record at `path`, validated; errors name the file and the field (a repeated key
    included)."""
    return validate(DecisionRecord, read_mapping(path), path)
