"""Which training pairs a signal's own weights were fitted on.

The `states` signal is the state head's w . (f(A) - f(B)), its 3,072 weights fitted on the
head's fitting set (training/datasets/state_head_data.py). On a pair of that set its value is
in-sample: it looks surer than it is, and a combiner fitted there weighs it too much (session
38 saw a refit double it and shrink request relevance, which cost LLMBar's neighbours 10-17
points, where cross-validation could not see it: every fold's states were in-sample too).
The decision fit leaves such pairs out, and the reads can skip them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from app.records import JudgeItem


@cache
def state_head_texts() -> frozenset[str]:
    """The state texts (request and answer) the state head's weights were fitted on."""
    from training.datasets.state_head_data import fitting_pairs, texts_of
    from training.heads.state_head import ALPACAEVAL_PAIRS

    return frozenset(texts_of(fitting_pairs(ALPACAEVAL_PAIRS)))


def seen_by_state_head(item: JudgeItem) -> bool:
    """Whether either answer of `item`, after its request, was in the state head's fitting set."""
    from app.deciding.state_head import state_text

    seen = state_head_texts()
    return any(state_text(item.question, answer) in seen for answer in item.answers)


# a fitting set by the name a fit config gives it: whether a pair was in it
FITS: dict[str, Callable[[JudgeItem], bool]] = {"state_head": seen_by_state_head}


def seen_by(item: JudgeItem, fits: dict[str, str]) -> list[str]:
    """The signals (of `fits`: a signal -> the fit of its own weights) fitted on `item`."""
    return sorted(signal for signal, fit in fits.items() if FITS[fit](item))
