"""Whether an answer states the request's items in the reference's order
(app/deciding/reference_order.py), and its part of a pair's verdict and the criteria."""

from __future__ import annotations

import pytest

from app.deciding.reference_order import (
    in_order_share,
    order_shares,
    request_items,
)
from app.deciding.signals import PairReads, pair_values
from app.deciding.state_judging import pair_verdict
from app.records import JudgeItem, Judgment, Protocol, Status
from tests.support.head_configs import reference_record

QUESTION = "Sort these numbers from smallest to largest: 80, 41, 85, 16, 93, 39."
REFERENCE = "In order: 16, 39, 41, 80, 85, 93."
RIGHT = "16, 39, 41, 80, 85, 93."
POLISHED_WRONG = (
    "Certainly! Comparing the numbers one by one puts them in order.\n\n"
    "**Answer: 16, 39, 41, 80, 93, 85**\n\nThis is the result you can rely on."
)


def lead_of(name: str, answers: list[str], reference: str, question: str) -> float | None:
    """A's lead in the signal `name` (app/deciding/signals.py), read from the texts."""
    item = JudgeItem(id="t", question=question, answers=tuple(answers), reference=reference)
    return pair_values((name,), PairReads(item, reference=reference)).get(name)


def test_the_items_are_the_requests_words_in_the_references_order():
    assert request_items(REFERENCE, QUESTION) == ["16", "39", "41", "80", "85", "93"]
    # a reference that is mostly words of its own restates no items
    open_ended = "Paris is the capital of France, famous for its museums and its cafes."
    assert request_items(open_ended, "What is the capital of France?") == []
    assert request_items("In order: 2, 1.", "Sort 1, 2.") == []  # fewer than three


def test_an_answer_in_the_references_order_leads_one_that_swaps_two():
    items = request_items(REFERENCE, QUESTION)
    assert in_order_share(RIGHT, items) == 1.0
    assert in_order_share(POLISHED_WRONG, items) == pytest.approx(5 / 6)
    assert in_order_share("16, 39, 41.", items) is None  # leaves items out: no reading
    lead = lead_of("reference_order", [POLISHED_WRONG, RIGHT], REFERENCE, QUESTION)
    assert lead == pytest.approx(-1 / 6)
    assert lead_of("reference_order", [RIGHT, POLISHED_WRONG], REFERENCE, QUESTION) == -lead
    # the reference's words cannot tell them apart: the polished one even says "order"
    assert lead_of("reference_words", [POLISHED_WRONG, RIGHT], REFERENCE, QUESTION) == 1.0


def test_a_restated_unsorted_list_does_not_count_as_the_order():
    restating = f"{QUESTION} becomes 16, 39, 41, 80, 93, 85."
    assert in_order_share(restating, request_items(REFERENCE, QUESTION)) == pytest.approx(5 / 6)


def test_no_lead_where_it_is_undefined():
    assert lead_of("reference_order", [RIGHT], REFERENCE, QUESTION) is None  # not a pair
    assert lead_of("reference_order", [RIGHT, "I do not know."], REFERENCE, QUESTION) is None
    assert order_shares([RIGHT, "I do not know."], REFERENCE, QUESTION) == [1.0, None]
    assert lead_of("reference_order", ["a b c", "c b a"], "Paris.", "Capital of France?") is None


def test_the_order_share_joins_the_verdict_and_is_kept_by_signal():
    lead = lead_of("reference_order", [POLISHED_WRONG, RIGHT], REFERENCE, QUESTION)
    item = JudgeItem(
        id="p", question=QUESTION, answers=(POLISHED_WRONG, RIGHT), reference=REFERENCE
    )
    base = Judgment(id="p", protocol=Protocol.PAIRWISE, status=Status.ERROR)
    answers = ({"states": 0.9}, {"states": 0.0})  # the head leans to A
    reads = PairReads(item, answers, REFERENCE)
    words = lead_of("reference_words", item.answers, REFERENCE, QUESTION)
    weighing = reference_record(reference_order=12.0, reference_words=1.0)
    moved = pair_verdict(base, weighing, reads)
    parts = moved.verdict_parts
    assert parts["reference_order"] == pytest.approx(-2.0)
    assert parts["reference"] == pytest.approx(-2.0 + words)
    assert parts["reference_order_difference"] == pytest.approx(lead)
    assert moved.winner == "B"  # the order turned it to the right answer
    assert lead == pytest.approx(-1 / 6)
    unweighted = pair_verdict(base, reference_record(), reads)
    assert unweighted.winner == "A"  # a record that does not weigh the order reads none of it
    assert "reference_order_difference" not in unweighted.verdict_parts
