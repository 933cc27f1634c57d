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
from pathlib import Path

from app.deciding.state_head import StateHead
from app.records import JudgeItem


def judge_head(judge: str) -> tuple[Path, StateHead]:
    """`judge`'s state head file and the head it holds."""
    from app.deciding.state_head import load_state_head
    from models.registry import MODELS_DIR, load_registry

    entry = load_registry().get(judge)
    if entry.judging.state_head is None:
        raise ValueError(f"{entry.name} has no state head")
    path = MODELS_DIR / entry.judging.state_head
    return path, load_state_head(path)


def judge_gguf(judge: str) -> Path:
    """`judge`'s model file: the reads of its fitting and evaluation sets are kept by it."""
    from models.registry import load_registry

    gguf = load_registry().get(judge).path()
    if gguf is None:
        raise SystemExit(f"{judge}: no model file to find its reads by")
    return gguf


@cache
def head_fitting_pairs(judge: str) -> tuple[JudgeItem, ...]:
    """The pairs `judge`'s state head was fitted on: its fitting set
    (training/datasets/state_head_data.py), rebuilt from the recipe its head file records
    (`fitted_on.alpacaeval_pairs` and `per_request`: the default's head read 3,600 AlpacaEval
    pairs, up to 16 of one instruction, beside every Auto-J training pair)."""
    from training.datasets.likelihood_data import fitting_pairs
    from training.datasets.state_head_data import ALPACA_PER_REQUEST

    path, head = judge_head(judge)
    fitted = head.fitted_on
    if "alpacaeval_pairs" not in fitted:
        raise ValueError(f"{path}: fitted_on.alpacaeval_pairs: the fitting set is not recorded")
    per_request = int(fitted.get("per_request", ALPACA_PER_REQUEST))
    return tuple(fitting_pairs(int(fitted["alpacaeval_pairs"]), per_request))


@cache
def state_head_texts(judge: str) -> frozenset[str]:
    """The state texts (request and answer) `judge`'s state head was fitted on."""
    from training.datasets.state_head_data import texts_of

    return frozenset(texts_of(head_fitting_pairs(judge)))


def seen_by_state_head(item: JudgeItem, judge: str) -> bool:
    """Whether either answer of `item`, after its request, was in `judge`'s state head's
    fitting set."""
    from app.deciding.state_head import state_text

    seen = state_head_texts(judge)
    return any(state_text(item.question, answer) in seen for answer in item.answers)


# a fitting set by the name a fit config gives it: whether a pair was in it
FITS: dict[str, Callable[[JudgeItem, str], bool]] = {"state_head": seen_by_state_head}


def seen_by(item: JudgeItem, fits: dict[str, str], judge: str) -> list[str]:
    """The signals (of `fits`: a signal -> the fit of its own weights) of `judge` fitted on
    `item`."""
    return sorted(signal for signal, fit in fits.items() if FITS[fit](item, judge))
