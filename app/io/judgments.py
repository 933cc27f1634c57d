"""Judgments read back from the JSONL that `write_jsonl` (the CLI, the app, an
evaluation run) wrote."""

from __future__ import annotations

import json
from pathlib import Path

from app.records import Judgment
from models.foundation.errors import PocketJudgeError


class JudgmentFileError(PocketJudgeError):
    """A line of a judgments file is not a saved judgment."""


def read_judgments(path: str | Path) -> list[Judgment]:
    """Every judgment of a JSONL file, in file order; blank lines are skipped."""
    judgments = []
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                judgments.append(Judgment.model_validate(json.loads(line)))
            except ValueError as exc:
                raise JudgmentFileError(
                    f"{path}: line {number} is not a saved judgment ({exc}); pass a "
                    "judgments file that `python -m app judge`, the app or an evaluation wrote"
                ) from None
    return judgments
