"""The labelled rows of an evaluation file: read in any layout the reader knows, kept
where their label fits the file's kind (pairwise or single)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Literal

from app.io.reader import InputRow, read_rows
from app.records import JudgeItem, Judgment
from models.foundation.errors import PocketJudgeError

FILE_KEY = "eval_file"  # judgment metadata: which input file the row came from

Kind = Literal["pairwise", "single"]


class EvaluationError(PocketJudgeError):
    """The input files or saved judgments cannot be meta-evaluated as given."""


@dataclass
class LabelledFile:
    """The labelled rows of one input file (after --limit) and what was left out."""

    name: str
    path: Path
    kind: Kind
    rows: list[InputRow]  # rows with an item and a label of this file's kind
    read: int  # rows read
    unreadable: int  # rows the reader could not map (no item, so no label)
    unlabelled: int  # rows without a label of this file's kind
    judgments: list[Judgment] = field(default_factory=list)
    missing: int = 0  # re-scoring: labelled rows with no saved judgment


def file_names(paths: Sequence[Path]) -> list[str]:
    """Report keys: the file name, or the whole path where two files share a name."""
    names = [path.name for path in paths]
    return [str(path) if names.count(path.name) > 1 else path.name for path in paths]


def load_labelled(path: Path, name: str, limit: int | None = None, skip: int = 0) -> LabelledFile:
    """Read `limit` rows of `path` after the first `skip` and keep those with a usable
    label (`skip` lets two processes judge two parts of a file, one core each)."""
    rows = list(islice(read_rows(path), skip, None if limit is None else skip + limit))
    items = [row.item for row in rows if row.item is not None]
    kind = _kind(items)
    if kind is None:
        raise EvaluationError(
            f"{path}: no labelled rows (looked at {len(rows)}); meta-evaluation needs a "
            "pairwise label (A/B/tie) or a score per row, as in the layouts of "
            "/work/shared/data/README.md"
        )
    labelled = [row for row in rows if row.item is not None and _usable(row.item, kind)]
    return LabelledFile(
        name=name,
        path=path,
        kind=kind,
        rows=labelled,
        read=len(rows),
        unreadable=len(rows) - len(items),
        unlabelled=len(items) - len(labelled),
    )


def _usable(item: JudgeItem, kind: Kind) -> bool:
    if item.label is None:
        return False
    if kind == "pairwise":
        return item.label.winner is not None and len(item.answers) == 2
    return item.label.score is not None and len(item.answers) == 1


def _kind(items: Sequence[JudgeItem]) -> Kind | None:
    if any(_usable(item, "pairwise") for item in items):
        return "pairwise"
    if any(_usable(item, "single") for item in items):
        return "single"
    return None
