"""A judge's pairwise decision as one declared record: the named signals it weighs and their
weights, the named rules that override them, the scale they sum on, the tie threshold and
the doubt threshold, and where each was fitted (models/judges/<name>/decision.yaml,
validated on load; errors name the file and the field). `decide` is the one function that
turns a pair's signal values into P(A), P(B), P(tie), the verdict and each signal's share.

A signal's value is A's lead over B in one reading (the state head's output, a likelihood
feature, request relevance, a reference's reading...); a signal without a value for a pair
(not read, or not applicable: no reference) adds nothing. On the logit scale, with the tie
threshold t >= 0 (an ordinal logit: ties are a third class between the two answers)

    score = sum(weight * value),   P(A) = sigmoid(score - t),   P(B) = sigmoid(-score - t),
    P(tie) = 1 - P(A) - P(B)

and the verdict is the likeliest of the three, marked uncertain below `doubt_below`. A rule
decides a pair outright where its signal's value is at least its threshold (either way): the
answer it favours gets the rule's fitted confidence (the first such rule in the record's
order). A rule is what a weight that would sit at the fit's bound really is: an override,
stated as one, with the share of training pairs it got right as its confidence.
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
from models.readings import FEATURES

Read = Literal["states", "likelihood", "relevance", "text", "reference_read", "code_run", "reward"]


class Fitted(BaseModel):
    """Where a weight was fitted: the command, its rows and its cross-validated figure."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    by: str
    rows: str
    cv: str = ""


class Declared(BaseModel):
    """What a signal or a rule is, before it is fitted: its name, what its value is, the
    page's share it counts in, what the engine must read for it and what that costs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: str  # what the value is, in words: A's lead in ...
    share: str  # the verdict part it counts in (several signals may share one)
    reads: tuple[Read, ...]
    cost: str
    seconds: float = Field(default=0.0, ge=0.0)  # per pair on one core, beyond shared reads
    reference: bool = False  # read only where the pair has a reference in use
    # read only where the judge's own answer stands for a reference (none in use)
    own_answer: bool = False
    # the value is held inside this range (the one it took on the rows it was fitted on)
    bounds: tuple[float, float] | None = None

    @model_validator(mode="after")
    def _ordered_bounds(self) -> Declared:
        if self.bounds is not None and self.bounds[0] > self.bounds[1]:
            raise ValueError(f"bounds: {self.bounds[0]} > {self.bounds[1]}")
        return self


class Signal(Declared):
    """One named signal of a decision, with its fitted weight."""

    weight: float
    fitted: Fitted


class DeclaredRule(Declared):
    """A rule before its confidence is fitted: where the value of `name` (A's lead, a
    signal's value) is at least `at_least` either way, the answer it favours wins."""

    at_least: float = Field(gt=0.0)
    when: str  # in words: where the rule decides


class Rule(DeclaredRule):
    """A named override with its fitted confidence."""

    confidence: float = Field(gt=0.5, lt=1.0)  # fitted: never certainty
    fitted: Fitted


class GradeRule(BaseModel):
    """A judge's rule for one answer's grade: a linear sum of its signals' values (each the
    answer's own value, not a lead, held inside the signal's bounds), plus an intercept,
    clipped to the scale."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    signals: tuple[Signal, ...] = ()  # none: every answer gets the intercept
    intercept: float
    scale: tuple[int, int] = (1, 10)
    cv_pearson: float | None = None  # with the label, out of fold, where it was measured
    fitted: Fitted | None = None

    def weights(self) -> dict[str, float]:
        return {signal.name: signal.weight for signal in self.signals if signal.weight}

    def held(self, values: Mapping[str, float]) -> dict[str, float]:
        """The weighed signals' values (those given), each held inside its bounds."""
        found = {}
        for signal in self.signals:
            if signal.weight and (value := values.get(signal.name)) is not None:
                low, high = signal.bounds or (-math.inf, math.inf)
                found[signal.name] = min(max(value, low), high)
        return found

    def reads(self) -> set[str]:
        return {read for signal in self.signals if signal.weight for read in signal.reads}


# an answer's grade reads its states (the grade head's w . f) and its likelihood features;
# a rubric's grade with a reference (app/deciding/rubric_grade.py) reads these
GRADE_SIGNALS = ("grade_states", *FEATURES)
RUBRIC_SIGNALS = ("level", "grade", "check", "likelihood", "length", "reference_words")


def grade_of(rule: GradeRule, values: Mapping[str, float]) -> float:
    """One answer's grade by `rule` from its signals' values (one without a value adds
    nothing; each held inside its bounds), clipped to the rule's scale."""
    weights = rule.weights()
    value = rule.intercept + sum(weights[name] * v for name, v in rule.held(values).items())
    low, high = rule.scale
    return min(max(value, low), high)


# what moves a criterion head's levels of an answer with a reference in use
SHIFT_SIGNALS = (
    "reference_words",
    "reference_likelihood",
    "reference_check",
    "reference_behaviour",
    "reference_order",
)


class ShiftRule(BaseModel):
    """How a criterion head (app/deciding/criterion_head.py) moves every criterion level of an
    answer with a reference in use: the sum over the signals of weight x (the answer's value
    minus the mean over the item's answers), each centred value held in the signal's bounds,
    in level points."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    signals: tuple[Signal, ...] = Field(min_length=1)
    # the record's rules (by name, of CAP_RULES) that hold the levels too where they decide:
    # each answer's levels on the criteria a reference judges held by its own value
    # (criterion_head.level_caps); the rule's threshold and confidence are the record's
    caps: tuple[str, ...] = ()
    fitted: Fitted | None = None


# the rules whose per-answer value is a share (0-1) that can hold a criterion's level
CAP_RULES = ("reference_behaviour", "reference_order")


class DecisionRecord(BaseModel):
    """A judge's whole rule: a pair's verdict, one answer's grade (`grade`), a rubric's grade
    with a reference (`rubric_grade`) and how a reference moves its criterion head's levels
    (`criterion_shift`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    judge: str
    scale: Literal["logit"] = "logit"
    signals: tuple[Signal, ...] = Field(min_length=1)
    rules: tuple[Rule, ...] = ()
    tie_threshold: float = Field(default=0.0, ge=0.0)  # t, on the logit scale; 0: no ties
    doubt_below: float = Field(ge=0.0, le=1.0)  # the judge's uncertain_below setting
    fitted: Fitted | None = None  # where the tie threshold and the whole record were fitted
    # what each share of the score means, for a user: the page names each share by it
    shares: dict[str, str] = Field(default_factory=dict)
    grade: GradeRule | None = None  # one answer's grade (a head that grades)
    # one answer's grade on a rubric, with a reference (app/deciding/rubric_grade.py)
    rubric_grade: GradeRule | None = None
    criterion_shift: ShiftRule | None = None

    @model_validator(mode="after")
    def _distinct_names(self) -> DecisionRecord:
        names = [signal.name for signal in self.signals] + [rule.name for rule in self.rules]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"signals, rules: each name once, {repeated} repeated")
        from app.deciding.signals import SIGNALS

        unknown = sorted(set(names) - set(SIGNALS))
        if unknown:
            raise ValueError(
                f"signals, rules: {unknown} name no signal of app/deciding/signals.py "
                f"(known: {', '.join(sorted(SIGNALS))})"
            )
        sections = (
            ("grade", GRADE_SIGNALS),
            ("rubric_grade", RUBRIC_SIGNALS),
            ("criterion_shift", SHIFT_SIGNALS),
        )
        for field, known in sections:
            rule = getattr(self, field)
            unknown = sorted({s.name for s in rule.signals} - set(known)) if rule else []
            if unknown:
                raise ValueError(f"{field}.signals: {unknown} unknown; known: {known}")
        if self.criterion_shift is not None:
            self._check_caps(self.criterion_shift)
        return self

    def _check_caps(self, shift: ShiftRule) -> None:
        rules = {rule.name for rule in self.rules}
        if wrong := sorted(set(shift.caps) - (rules & set(CAP_RULES))):
            raise ValueError(
                f"criterion_shift.caps: {wrong} name no rule of the record that can hold a "
                f"level (of {', '.join(CAP_RULES)}; the record's rules: {sorted(rules)})"
            )
        if both := sorted(set(shift.caps) & {s.name for s in shift.signals}):
            raise ValueError(f"criterion_shift: {both} both a weighed signal and a cap")

    def weights(self) -> dict[str, float]:
        return {signal.name: signal.weight for signal in self.signals}

    def used(self) -> tuple[str, ...]:
        """The names of the signals the record weighs and of its rules, in its order."""
        return tuple(s.name for s in self.signals if s.weight) + tuple(r.name for r in self.rules)

    def own_signals(self) -> tuple[str, ...]:
        """The used signals read without a reference."""
        parts = {p.name: p for p in (*self.signals, *self.rules)}
        return tuple(name for name in self.used() if not parts[name].reference)

    def uses(self, *names: str) -> bool:
        """Whether the record weighs, or rules by, any of `names` (only then is it read)."""
        return bool(set(self.used()).intersection(names))

    def reads(self) -> set[str]:
        """What the engine must read for this record (its grade's reads included)."""
        parts = [*self.signals, *self.rules]
        found = {read for part in parts if getattr(part, "weight", 1.0) for read in part.reads}
        return found | (self.grade.reads() if self.grade else set())


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
    rule: str | None = None  # the rule that decided the pair, if one did

    @property
    def p_b(self) -> float:
        return max(1.0 - self.p_a - self.p_tie, 0.0)

    @property
    def confidence(self) -> float:
        """The probability of the verdict the judge leans to."""
        return max(self.p_a, self.p_b, self.p_tie)


SHARED_KINDS = ("reference", "own_answer")  # the parts a decision also sums by what they read


def sigmoid(score: float) -> float:
    return 1 / (1 + math.exp(-max(min(score, 50.0), -50.0)))


def decide(record: DecisionRecord, values: Mapping[str, float]) -> Decision:
    """The decision for a pair whose signals have `values` (by signal name; one without a
    value adds nothing)."""
    shares: dict[str, float] = {}
    for signal in record.signals:
        value = values.get(signal.name)
        if value is None or not signal.weight:
            continue
        shares[signal.share] = shares.get(signal.share, 0.0) + signal.weight * value
    score = sum(shares.values())
    rule = next((r for r in record.rules if abs(values.get(r.name) or 0.0) >= r.at_least), None)
    if rule is not None:  # the rule's confidence, and its share is what it moved the score
        favours_a = values[rule.name] > 0
        ruled = math.log(rule.confidence / (1 - rule.confidence)) * (1 if favours_a else -1)
        shares[rule.share] = shares.get(rule.share, 0.0) + ruled - score
        score, p_tie = ruled, 0.0
        p_a = rule.confidence if favours_a else 1 - rule.confidence
    else:
        p_a, p_b = sigmoid(score - record.tie_threshold), sigmoid(-score - record.tie_threshold)
        p_tie = max(1.0 - p_a - p_b, 0.0)
    for kind in SHARED_KINDS:  # what a reference, or the judge's own answer, moved in all
        kept = {p.share for p in (*record.signals, *record.rules) if getattr(p, kind)}
        if total := sum(shares.get(share, 0.0) for share in kept):
            shares[kind] = total
    p_b = 1.0 - p_a - p_tie
    leaning = max((p_a, "A"), (p_b, "B"), (p_tie, "tie"))[1] if p_a != p_b else "tie"
    confidence = max(p_a, p_b, p_tie)
    return Decision(
        score, p_a, p_tie, leaning, confidence < record.doubt_below, shares, rule and rule.name
    )


def tie_threshold_for(band: float) -> float:
    """The tie threshold t under which a tie is the likeliest verdict exactly where
    |sigmoid(score) - 1/2| <= band (a user's tie band, as the reply judges read it): at the
    band's edge e, P(tie) = P(A), which with a = exp(e) and s = exp(t) is s^2 - a s - 2 = 0."""
    a = (0.5 + band) / (0.5 - band)  # exp of the score at the band's edge
    return math.log((a + math.sqrt(a * a + 8)) / 2)


@cache
def load_decision(path: Path) -> DecisionRecord:
    """The record at `path`, validated; errors name the file and the field (a repeated key
    included)."""
    return validate(DecisionRecord, read_mapping(path), path)


def share_words(model: str | None) -> dict[str, str]:
    """What each share of the registry judge `model`'s score means, for a user: its decision
    record's words ({} for a judge without a record, or a name not in the registry)."""
    from models.foundation.errors import PocketJudgeError
    from models.registry import MODELS_DIR, load_registry

    try:
        entry = load_registry().get(model)
    except PocketJudgeError:
        return {}
    if model is None or entry.judging is None or entry.judging.decision_record is None:
        return {}
    return dict(load_decision(MODELS_DIR / entry.judging.decision_record).shares)
