"""The score-mode reply walker on a hand-made vocabulary (no model): what it may write."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule
from app.formats.output_format import ReplyLayout, output_spec
from app.records import Protocol
from models.backends.reply_walker import ReplyWalker
from models.backends.value_constraints import TokenTable
from models.backends.value_reader import Feed, Rewind

RULE = ScoringRule(load_catalog().specs_for(criteria_ids=["accuracy", "clarity"]))
# BPE vocabularies hold tokens that end a value and start the structure after it.
PIECES = ['{"', "verdict", '":', " ", '"', "A", "B", "tie", '"}', '",', "}", ",", "1", "0", "5"]


def tokenize(text: str) -> list[int]:
    """Greedy longest match over PIECES."""
    tokens, rest = [], text
    while rest:
        piece = max((p for p in PIECES if rest.startswith(p)), key=len)
        tokens.append(PIECES.index(piece))
        rest = rest[len(piece) :]
    return tokens


def walk(layout: ReplyLayout, favourite: str) -> str:
    """The reply, with `favourite` the most probable token at every step."""
    walker = ReplyWalker(
        TokenTable(PIECES), tokenize, output_spec(Protocol.PAIRWISE, RULE, 2, layout)
    )
    logits = np.zeros(len(PIECES))
    logits[PIECES.index(favourite)] = 5.0
    logits[PIECES.index("A")] = 3.0
    walk = walker.walk()
    request = next(walk)
    try:
        while True:
            request = walk.send(logits.copy() if isinstance(request, Feed) else None)
            assert isinstance(request, Feed | Rewind)
    except StopIteration as stop:
        return stop.value.text


@pytest.mark.parametrize("favourite", ['",', '"}', ","])
def test_a_verdict_alone_is_closed_as_the_schema_says_whatever_token_is_likeliest(
    favourite: str,
) -> None:
    text = walk(ReplyLayout(decision_first=True, criteria=False, feedback=False), favourite)
    assert json.loads(text) == {"verdict": "A"}
