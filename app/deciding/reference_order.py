"""Whether an answer states the request's items in the order its reference puts them.

A request to sort, rank or order things holds the things; its reference restates them in
the right order ("Sort 25, 6, 91" -> "In order: 6, 25, 91."). A wrong answer states the
same items in another order, so the reference's words (app/deciding/reference_words.py)
cannot tell the two apart: both state every one, and a polished wrong answer that says
"in order" even wins them. What tells them apart is the order, and a person checks it the
same way: read the reference's items along the answer.

The reading is defined only where the reference is such a restatement (at least
`MIN_ITEMS` distinct request words, and they are at least `ITEM_SHARE` of the reference's
words) and the answer states every item; elsewhere it is None and adds nothing, so an
open-ended reference that reuses the request's words does not move a verdict by the order
of its words (on vicuna_eval's 322 pairs it is defined on 5). An answer's share is the
longest run of the items it states in the reference's order (a longest common
subsequence over its words), over the number of items. A's lead in that share is the
`reference_order` value of a judge's decision record (app/deciding/decision.py): the
default's rule decides a pair by it, at the confidence it earned on pairs whose reference
decides them (training/decision/fit.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from app.deciding.reference_words import FUNCTION_WORDS, WORD

MIN_ITEMS = 3
ITEM_SHARE = 0.5


def word_sequence(text: str) -> list[str]:
    """The words of `text` in order, lowercased, function words left out."""
    return [w for w in WORD.findall(text.lower()) if w not in FUNCTION_WORDS]


def request_items(reference: str, question: str) -> list[str]:
    """The request's words as the reference states them, in its order; empty where the
    reference is not mostly a restatement of the request's items."""
    held = set(word_sequence(question))
    stated = word_sequence(reference)
    items = [w for w in stated if w in held]
    if len(set(items)) < MIN_ITEMS or len(items) < ITEM_SHARE * len(stated):
        return []
    return items


def in_order_share(answer: str, items: Sequence[str]) -> float | None:
    """The share of `items` the answer states in their order (0-1); None where it leaves
    one out (then its order says nothing) or there are none."""
    words = word_sequence(answer)
    if not items or not set(items) <= set(words):
        return None
    return _common_run(items, words) / len(items)


def order_shares(answers: Sequence[str], reference: str, question: str) -> list[float | None]:
    """Each answer's in-order share of the reference's items (None where undefined)."""
    items = request_items(reference, question)
    return [in_order_share(answer, items) for answer in answers]


def _common_run(first: Sequence[str], second: Sequence[str]) -> int:
    """The length of the longest common subsequence of two word lists."""
    previous = [0] * (len(second) + 1)
    for word in first:
        current = [0]
        for n, other in enumerate(second):
            current.append(previous[n] + 1 if word == other else max(previous[n + 1], current[n]))
        previous = current
    return previous[-1]
