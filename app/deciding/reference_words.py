"""How much of what a reference answer states an answer states too, read from the text.

A reference that settles a request states its answer in words the request does not hold:
"15% of 80 is 12." adds "12" to "What is 15% of 80?", and a reference function adds its
calls and names. The share of those words an answer also states is a check a person makes
first, and it costs nothing beside the verdict: no model reads it. The signal
`reference_words` (app/deciding/signals.py) is A's lead in that share; a judge's decision
record weighs it (app.deciding.state_judging.pair_verdict), its weight fitted with
the rest of the record on pairs whose reference decides them (training/decision/fit.py).

Words are runs of letters and digits, lowercased; common function words are left out, so
a restatement of the request or a filler sentence gains nothing.
"""

from __future__ import annotations

import re

WORD = re.compile(r"\w+", re.UNICODE)
_FUNCTION_WORDS = """
    a an the is are was were be been being am of to in on at for and or not no it its this
    that these those with as by from what which who whom whose how why when where do does
    did done can could will would should shall may might must there here i you we they he
    she him her them us me my your our their his so if then than but also just very answer
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())


def words(text: str) -> set[str]:
    """The distinct words of `text`, lowercased, function words left out."""
    return {w for w in WORD.findall(text.lower()) if w not in FUNCTION_WORDS}


def reference_words(reference: str, question: str) -> frozenset[str]:
    """What the reference states beyond the request: its words the request does not hold."""
    return frozenset(words(reference) - words(question))


def stated_share(answer: str, stated: frozenset[str]) -> float | None:
    """The share of `stated` (reference_words) the answer holds; None when there are none."""
    if not stated:
        return None
    return len(stated & words(answer)) / len(stated)
