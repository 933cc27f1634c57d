"""What a likelihood head is fitted on (training/heads/likelihood_head.py reads it, training/
likelihood_fit.py fits on it): the fitting set's pairs and graded rows, cut as the head
reads them, in the seeded order they are read, and the reading cache they go to. The cache is
committed (half precision, `training/decision/cache/head-fitting/`): reading the 1.5B's
fitting set takes a CPU more than one session, and what one session reads the next goes on
from."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path

from app.deciding.state_head import ANSWER_CHARS, QUESTION_CHARS
from app.records import JudgeItem

RUN_DIR = Path("training/runs/likelihood-head")
CACHE_DIR = Path("training/decision/cache/head-fitting")
# the head-fitting pairs with their states out of fold (training.decision.out_of_fold writes it)
OUT_OF_FOLD = CACHE_DIR / "head_fitting_out_of_fold.jsonl.gz"
EVALUATION_CACHE_DIR = Path("training/decision/cache/evaluation")
ALPACAEVAL_PAIRS = 800
PER_REQUEST = 4  # AlpacaEval pairs of one instruction at most (training.datasets.state_head_data)
SEED = 0


def cut(question: str, answer: str) -> tuple[str, str]:
    return question[:QUESTION_CHARS], answer[:ANSWER_CHARS]


def fitting_pairs(alpacaeval: int, per_request: int = PER_REQUEST) -> list[JudgeItem]:
    from training.datasets.state_head_data import saved_fitting_pairs

    return saved_fitting_pairs(alpacaeval, RUN_DIR, per_request)


def grade_rows() -> list[JudgeItem]:
    """Every rated single answer of the fitting split: the seeded sample the grade head was
    first fitted on (training.heads.state_head.grade_rows), then the rest."""
    from training.datasets.state_head_data import single_rows
    from training.heads.state_head import grade_rows as sample

    first = sample()
    chosen = {item.id for item in first}
    return first + [item for item in single_rows()[0] if item.id not in chosen]


def work_order(alpacaeval: int, per_request: int = PER_REQUEST) -> list[tuple[str, str]]:
    """Every (question, answer) to read, cut, a pair's answers together: the pairs first (the
    pairwise fits wait on them), then the graded rows, each shuffled, so that whatever share
    is read is a fair sample of its sources."""
    pairs, graded = fitting_pairs(alpacaeval, per_request), grade_rows()
    random.Random(SEED).shuffle(pairs)
    random.Random(SEED).shuffle(graded)
    return cut_texts(pairs + graded)


def cut_texts(items: Iterable[JudgeItem]) -> list[tuple[str, str]]:
    """Every distinct (question, answer) of `items`, cut as the head reads them, in order."""
    seen: dict[tuple[str, str], None] = {}
    for item in items:
        for answer in item.answers:
            seen.setdefault(cut(item.question, answer), None)
    return list(seen)


def cache_for(gguf: Path, folder: Path | None = None):  # type: ignore[no-untyped-def]
    from training.device.reading_cache import ReadingCache

    return ReadingCache(folder or CACHE_DIR / gguf.stem, half=True)
