"""What a reference states beyond its request, and how much of it an answer states
(app/deciding/reference_words.py), and its part of a pair's verdict."""

from __future__ import annotations

import pytest

from app.deciding.reference_words import (
    reference_words,
    stated_share,
    words,
)
from app.deciding.signals import PairReads, pair_values
from app.deciding.state_judging import pair_verdict
from app.records import JudgeItem, Judgment, Label, Protocol, Status
from tests.support.head_configs import reference_record

QUESTION = "What is 15% of 80?"


def lead_of(name: str, answers: list[str], reference: str, question: str) -> float | None:
    """A's lead in the signal `name` (app/deciding/signals.py), read from the texts."""
    item = JudgeItem(id="t", question=question, answers=tuple(answers), reference=reference)
    return pair_values((name,), PairReads(item, reference=reference)).get(name)


def test_the_reference_states_what_the_request_does_not():
    assert reference_words("15% of 80 is 12.", QUESTION) == {"12"}
    assert words("The Answer is: Canberra!") == {"canberra"}  # function words left out
    assert reference_words("Bonjour, la France.", "Say good morning in French.") == {
        "bonjour",
        "la",
        "france",
    }
    assert reference_words("80 is 80.", "What is 80?") == frozenset()  # nothing beyond it


def test_an_answer_stating_the_reference_leads_one_that_does_not():
    stated = reference_words("15% of 80 is 12.", QUESTION)
    assert stated_share("It is 12.", stated) == 1.0
    polished = "Certainly! To find a percentage, multiply and divide by 100. **Answer: 10.5**"
    assert stated_share(polished, stated) == 0.0  # "10" and "5" are not "12"
    assert lead_of("reference_words", ["12", polished], "15% of 80 is 12.", QUESTION) == 1.0
    assert lead_of("reference_words", [polished, "12"], "15% of 80 is 12.", QUESTION) == -1.0
    assert lead_of("reference_words", ["12"], "15% of 80 is 12.", QUESTION) is None  # not a pair
    assert lead_of("reference_words", ["a", "b"], "80 is 80.", "What is 80?") is None


CODING_PAIR = JudgeItem(
    id="coding-pair",
    question="Write a Python function that returns the second largest distinct value of a "
    "list, or None when there are fewer than two.",
    answers=(
        "def second_largest(xs):\n    values = sorted(set(xs))\n    return values[-2] if "
        "len(values) >= 2 else None",
        "Here is a clean and efficient solution!\n\n```python\ndef second_largest(xs):\n"
        "    xs.sort()\n    return xs[-2]\n```\n\nThis sorts the list and returns the second "
        "to last element, which is the second largest.",
    ),
    reference="def second_largest(xs):\n    distinct = sorted(set(xs))\n    return "
    "distinct[-2] if len(distinct) > 1 else None",
    label=Label(winner="A"),  # the right answer
)


def test_the_issues_coding_pair_leans_to_the_right_function():
    """The right answer keeps the distinct values and guards a short list, as the reference
    does; the polished one sorts the caller's list in place."""
    item = CODING_PAIR
    lead = lead_of("reference_words", item.answers, item.reference or "", item.question)
    assert lead is not None and lead > 0.25


def test_the_words_share_joins_the_verdict_and_is_kept_by_signal():
    # the reference states "12" and "apples" beyond the request: A states both, B one
    item = JudgeItem(
        id="p", question=QUESTION, answers=("12 apples", "12"), reference="15% of 80 is 12 apples."
    )
    base = Judgment(id="p", protocol=Protocol.PAIRWISE, status=Status.ERROR)
    answers = ({"states": -0.4}, {"states": 0.0})  # the head leans to B
    reads = PairReads(item, answers, item.reference, reference_means=(0.1, 0.0))
    weighing = reference_record(reference_likelihood=2.0, reference_words=3.0)
    moved = pair_verdict(base, weighing, reads)
    parts = moved.verdict_parts
    assert parts["reference_words"] == pytest.approx(1.5)
    assert parts["reference_likelihood"] == pytest.approx(0.2)
    assert parts["reference"] == pytest.approx(1.7) and parts["score"] == pytest.approx(1.3)
    assert parts["reference_words_difference"] == 0.5
    assert moved.winner == "A" and moved.status is Status.OK  # the reference turned it
    unweighted = pair_verdict(base, reference_record(), reads)
    assert unweighted.winner == "B" and "reference" not in unweighted.verdict_parts
    # a record that does not weigh the words reads none of them
    assert "reference_words_difference" not in unweighted.verdict_parts
