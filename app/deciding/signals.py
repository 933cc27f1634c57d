"""The signals a decision record can weigh, each one small unit: a name and a function from
what the engine read of an item (`PairReads`) to each answer's value, or None where the item
has no value of it (not read, or no reference in use). A pair's value is A's lead over B
(`pair_values`); the criterion shift centres each answer's value over the item's answers.

A record (app/deciding/decision.py) names the signals it weighs and what each reads; a
signal is computed only where its record names it (`pair_values`), so a judge reads and
computes only what its record uses. A new signal is one function here (or in its own module,
registered with `@signal`), its entry in a record and its test; the record says its weight,
its share of the page's verdict and its label there, and the model card's table of the rule
is made from the record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.records import JudgeItem
from models.readings import FEATURES


@dataclass(frozen=True)
class AnswerReads:
    """What the engine read of each answer: its pooled states, its likelihood features, the
    log-probabilities of the reference's tokens after it, the log-odds of its check, and its
    request relevance."""

    features: list[Any]  # numpy arrays, or None where not read
    likelihoods: list[dict[str, float] | None]
    references: list[Any]
    odds: list[float | None]
    similarities: Any | None = None


@dataclass(frozen=True)
class PairReads:
    """What the engine read of a pair so far: each answer's values read of it (the states'
    w . f, its likelihood features, its request relevance, its log length), and with a
    reference in use the reference's mean log-probability after each answer, the log-odds of
    the judge's check of each and (code run in the jail) each function's behaviour beside the
    reference function's."""

    item: JudgeItem
    answers: Sequence[dict[str, float]] = ()
    reference: str | None = None  # the reference in use
    reference_means: Sequence[float | None] = ()
    check_odds: Sequence[float | None] = ()
    behaviour: Any = None  # app.code_run.behaviour.BehaviourReading
    # no reference in use: the judge's own answer (app/deciding/own_answer.py's OwnAnswer),
    # read where a reference would be (the reference's means and check odds are then of it)
    own_answer: Any = None


Values = Callable[[PairReads], Sequence[float | None] | None]
SIGNALS: dict[str, Values] = {}


def signal(name: str) -> Callable[[Values], Values]:
    """Register `function` as the signal `name` (each name once): each answer's value of it,
    or None where the item has none (not read, or no reference in use)."""

    def register(function: Values) -> Values:
        if name in SIGNALS:
            raise ValueError(f"signal '{name}' is registered twice")
        SIGNALS[name] = function
        return function

    return register


def each_answer(name: str, reads: PairReads) -> Sequence[float | None] | None:
    """Each answer's value of the signal `name` (None where the item has none)."""
    if name not in SIGNALS:
        raise ValueError(f"no signal '{name}' is registered (known: {', '.join(sorted(SIGNALS))})")
    return SIGNALS[name](reads)


def pair_values(names: Sequence[str], reads: PairReads) -> dict[str, float]:
    """A's lead over B in each signal of `names` (a record's) that both answers have."""
    found = {}
    for name in names:
        values = each_answer(name, reads)
        if values is not None and len(values) == 2 and None not in values:
            found[name] = float(values[0]) - float(values[1])  # type: ignore[arg-type]
    return found


def _read_of_each(name: str) -> Values:
    return lambda reads: [answer.get(name) for answer in reads.answers]


# each value read of each answer: the states' w . f, the likelihood features, the request
# relevance, the log length and a trained reward model's reward (app/deciding/reward.py; each
# recorded wherever it was read)
ANSWER_SIGNALS = ("states", *FEATURES, "relevance", "length", "reward")
for _name in ANSWER_SIGNALS:
    signal(_name)(_read_of_each(_name))

REFERENCE_SIGNALS = (
    "reference_likelihood",
    "reference_check",
    "reference_words",
    "reference_order",
    "reference_behaviour",
)
# reference signals whose reads are made for something else (the code run) or on from the
# head's reads (its likelihood, the judge's check), so they are recorded wherever they were
# read, whether or not a record weighs them
REFERENCE_READS = (
    "reference_behaviour",
    "reference_likelihood",
    "reference_check",
)


@signal("reference_likelihood")
def reference_likelihood(reads: PairReads) -> Sequence[float | None] | None:
    return reads.reference_means if reads.reference else None


@signal("reference_check")
def reference_check(reads: PairReads) -> Sequence[float | None] | None:
    return reads.check_odds if reads.reference else None


@signal("reference_words")
def reference_words(reads: PairReads) -> Sequence[float | None] | None:
    from app.deciding.reference_words import reference_words as stated_words
    from app.deciding.reference_words import stated_share

    if not reads.reference:
        return None
    stated = stated_words(reads.reference, reads.item.question)
    return [stated_share(answer, stated) for answer in reads.item.answers]


@signal("reference_order")
def reference_order(reads: PairReads) -> Sequence[float | None] | None:
    from app.deciding.reference_order import order_shares

    if not reads.reference:
        return None
    return order_shares(reads.item.answers, reads.reference, reads.item.question)


# the judge's own answer read as a reference is: under names of their own, as its weight is
# its own (it can be wrong); recorded wherever it was read, whether or not a record weighs it
OWN_ANSWERS_READ = (
    "self_reference_likelihood",
    "self_reference_check",
    "self_reference_words",
    "self_reference_order",
)
# each of them gated: weighed by how sure the judge was of its own answer (a short answer it
# stopped by itself and wrote with likely tokens is more often right), or only where a program
# it wrote computed it
GATES: dict[str, Callable[[PairReads], float]] = {
    "sure": lambda reads: reads.own_answer.sureness,
    "computed": lambda reads: float(reads.own_answer.computed),
}
OWN_ANSWER_SIGNALS = (
    *OWN_ANSWERS_READ,
    *(f"{name}_{gate}" for gate in GATES for name in OWN_ANSWERS_READ),
)
# those that read a written answer too (the rest are 0 unless a program computed it)
WRITTEN_ANSWER_SIGNALS = tuple(s for s in OWN_ANSWER_SIGNALS if not s.endswith("_computed"))


def _own_text(reads: PairReads) -> str:
    return reads.own_answer.text if reads.own_answer is not None else ""


def _gated(name: str, gate: Callable[[PairReads], float]) -> Values:
    def values(reads: PairReads) -> Sequence[float | None] | None:
        found = SIGNALS[name](reads)
        if found is None:
            return None
        return [None if value is None else value * gate(reads) for value in found]

    return values


@signal("self_reference_likelihood")
def self_reference_likelihood(reads: PairReads) -> Sequence[float | None] | None:
    return reads.reference_means if _own_text(reads) else None


@signal("self_reference_check")
def self_reference_check(reads: PairReads) -> Sequence[float | None] | None:
    return reads.check_odds if _own_text(reads) else None


@signal("self_reference_words")
def self_reference_words(reads: PairReads) -> Sequence[float | None] | None:
    from app.deciding.reference_words import reference_words as stated_words
    from app.deciding.reference_words import stated_share

    if not (own := _own_text(reads)):
        return None
    stated = stated_words(own, reads.item.question)
    return [stated_share(answer, stated) for answer in reads.item.answers]


@signal("self_reference_order")
def self_reference_order(reads: PairReads) -> Sequence[float | None] | None:
    from app.deciding.reference_order import order_shares

    if not (own := _own_text(reads)):
        return None
    return order_shares(reads.item.answers, own, reads.item.question)


@signal("reference_behaviour")
def reference_behaviour(reads: PairReads) -> Sequence[float | None] | None:
    return reads.behaviour.shares if reads.reference and reads.behaviour is not None else None


for _gate, _weighed in GATES.items():
    for _name in OWN_ANSWERS_READ:
        signal(f"{_name}_{_gate}")(_gated(_name, _weighed))
