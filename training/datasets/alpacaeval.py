"""AlpacaEval's GPT-4-class preferences as labelled pairs.

`../shared/data/alpacaeval/pairs.jsonl.gz` holds one row per (instruction,
reference answer, other model's answer) with the annotators' mean preference
(1.0: the reference is better ... 2.0: the other answer is). The longer answer
wins 87 % of the decisive rows, so a judge trained on them raw learns length:
`length_balanced` draws as many pairs won by the longer answer as by the
shorter one, and puts each winner in slot A or B at random (the reference is
always `output_1` in the file, which would teach a position otherwise).
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from pathlib import Path

from app.records import JudgeItem, Label
from models.foundation.errors import PocketJudgeError

PAIRS_FILE = "pairs.jsonl.gz"
TIE_BAND = 0.1  # a mean preference this close to 1.5 is no decision
REQUIRED = ("instruction", "output_1", "output_2", "preference")


class AlpacaEvalError(PocketJudgeError):
    """The AlpacaEval pairs file is missing or a row is not as described."""


def read_decisive(path: Path, tie_band: float = TIE_BAND) -> Iterator[JudgeItem]:
    """Rows whose mean preference is at least `tie_band` away from a tie, as JudgeItems
    with the reference answer in slot A. A malformed row names its line and field."""
    if not path.is_file():
        raise AlpacaEvalError(f"{path}: not found (see ../shared/data/README.md, alpacaeval/)")
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        for line_number, line in enumerate(stream, start=1):
            row = json.loads(line)
            missing = [key for key in REQUIRED if row.get(key) is None]
            if missing:
                raise AlpacaEvalError(f"{path}: line {line_number}: missing {', '.join(missing)}")
            preference = float(row["preference"])
            if abs(preference - 1.5) < tie_band:
                continue
            if not (row["output_1"].strip() and row["output_2"].strip()):
                continue  # an empty answer is no comparison
            yield JudgeItem(
                id=f"alpacaeval-{line_number}",
                question=row["instruction"],
                answers=(row["output_1"], row["output_2"]),
                answer_models=(row.get("generator_1"), row.get("generator_2")),
                label=Label(winner="A" if preference < 1.5 else "B"),
                metadata={"dataset": row.get("dataset"), "preference": preference},
            )


def longer_won(item: JudgeItem) -> bool:
    """True when the labelled winner is the strictly longer answer."""
    first, second = (len(a) for a in item.answers)
    return (item.label.winner == "A" and first > second) or (
        item.label.winner == "B" and second > first
    )


def length_balanced(items: list[JudgeItem], pairs: int, seed: int = 0) -> list[JudgeItem]:
    """`pairs` pairs, half won by the longer answer and half by the shorter (equal
    lengths count as neither), each winner put in slot A or B at random, shuffled."""
    rng = random.Random(seed)
    longer = [i for i in items if longer_won(i)]
    shorter = [i for i in items if not longer_won(i) and len(i.answers[0]) != len(i.answers[1])]
    half = min(pairs // 2, len(longer), len(shorter))
    chosen = rng.sample(longer, half) + rng.sample(shorter, half)
    rng.shuffle(chosen)
    return [_maybe_swapped(item, rng.random() < 0.5) for item in chosen]


def natural_sample(items: list[JudgeItem], pairs: int, seed: int = 0) -> list[JudgeItem]:
    """`pairs` decisive pairs drawn at random, lengths as they come (the reference in slot
    A or B at random): what a calibration should see, the labels as users meet them."""
    rng = random.Random(seed)
    chosen = rng.sample(items, min(pairs, len(items)))
    return [_maybe_swapped(item, rng.random() < 0.5) for item in chosen]


def balanced_pairs(path: Path, pairs: int, seed: int = 0) -> list[JudgeItem]:
    """`pairs` length-balanced decisive pairs of the file at `path` (see length_balanced)."""
    return length_balanced(list(read_decisive(path)), pairs, seed)


def _maybe_swapped(item: JudgeItem, swap: bool) -> JudgeItem:
    if not swap:
        return item
    winner = {"A": "B", "B": "A"}[item.label.winner]  # type: ignore[index]
    models = tuple(reversed(item.answer_models)) if item.answer_models else None
    return item.model_copy(
        update={
            "answers": tuple(reversed(item.answers)),
            "answer_models": models,
            "label": Label(winner=winner),
        }
    )
