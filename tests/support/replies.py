"""Whether a model's reply parses: what a test of a random model's judgment checks its
status against (ok exactly when the replies parse, else unparsed), so that the test
holds whichever way the model writes."""

from __future__ import annotations

from collections.abc import Callable

from app.catalog.scoring import ScoringRule
from app.formats.output_format import ReplyLayout
from app.formats.parsing import ParseFailure, parse_output
from app.records import Protocol


def parses(parser: Callable[[str], object], text: str) -> bool:
    """Whether `parser` reads `text` without a ParseFailure."""
    try:
        parser(text)
    except ParseFailure:
        return False
    return True


def pair_reply_parses(raw: str, rule: ScoringRule, layout: ReplyLayout | None = None) -> bool:
    """Whether one pairwise JSON reply parses under `rule` and `layout`."""
    return parses(lambda text: parse_output(text, Protocol.PAIRWISE, rule, 2, layout), raw)
