"""Saved judgments scored again: matched to their labelled rows, and a calibrated
verdict re-decided at another tie margin, without the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.deciding import verdicts
from app.formats.prompts import get_template
from app.io.reader import InputRow
from app.records import Judgment, Status, Winner
from models.foundation.errors import PocketJudgeError
from training.datasets.labelled_files import FILE_KEY, EvaluationError, LabelledFile


def recombine(judgment: Judgment, tie_margin: float) -> Judgment:
    """The position-calibrated verdict of a saved pairwise judgment at another tie margin."""
    margin = judgment_margin(judgment)
    if margin is None or judgment.status is not Status.OK:
        return judgment
    probs = judgment.verdict_probs if _decision_first(judgment) else None
    winner = verdicts.calibrated_winner(margin, tie_margin, probs)
    return judgment.model_copy(update={"winner": winner, "leaning": winner, "margin": margin})


def judgment_margin(judgment: Judgment) -> float | None:
    """The pair's calibrated margin; for a decision-first judgment saved before margins
    were kept for that layout, P(A) - P(B) from its saved verdict probabilities."""
    if judgment.margin is not None:
        return judgment.margin
    if _decision_first(judgment) and judgment.verdict_probs:
        return round(verdicts.decision_margin(judgment.verdict_probs), 4)
    return None


def _decision_first(judgment: Judgment) -> bool:
    try:
        return bool(judgment.template) and get_template(judgment.template).decision_first
    except PocketJudgeError:  # a template this version does not know
        return False


def attach_judgments(files: Sequence[LabelledFile], judgments: Sequence[Judgment]) -> None:
    """Give each labelled row its saved judgment, matched by file name and line."""
    by_key = {(j.metadata.get(FILE_KEY), j.line): j for j in judgments}
    untagged_ok = len(files) == 1
    known = sorted({str(j.metadata.get(FILE_KEY)) for j in judgments})
    for file in files:
        found = [_saved(by_key, file, row, untagged_ok) for row in file.rows]
        if rows_judged := [j for j in found if j is not None]:
            file.judgments = rows_judged
            file.rows = [row for row, j in zip(file.rows, found) if j is not None]
            file.missing = len(found) - len(rows_judged)
        else:
            raise EvaluationError(
                f"the judgments hold no row of {file.name} (they cover: {', '.join(known)}); "
                "pass the same input files as the run that wrote them"
            )


def matched(file: LabelledFile, saved: Sequence[Judgment]) -> list[Judgment | None]:
    """Another run's ok judgment of each of `file`'s judged rows, in their order; None
    where that run has no ok judgment of the row."""
    by_key = {(j.metadata.get(FILE_KEY), j.line): j for j in saved}
    found = [by_key.get((file.name, row.line)) for row in file.rows]
    return [j if j is not None and j.status is Status.OK else None for j in found]


def second_verdicts(file: LabelledFile, second: Sequence[Judgment]) -> list[Winner | None]:
    """A second judge's verdict (its leaning) on each of `file`'s judged rows."""
    return [(j.leaning or j.winner) if j else None for j in matched(file, second)]


def base_entropies(file: LabelledFile, base: Sequence[Judgment]) -> list[float | None]:
    """The decision entropy of the judge's base model on each of `file`'s judged rows."""
    return [j.entropy if j else None for j in matched(file, base)]


def _saved(
    by_key: dict[tuple[Any, int | None], Judgment],
    file: LabelledFile,
    row: InputRow,
    untagged_ok: bool,
) -> Judgment | None:
    judgment = by_key.get((file.name, row.line))
    if judgment is None and untagged_ok:
        judgment = by_key.get((None, row.line))
    if judgment is not None and row.item is not None and judgment.id != row.item.id:
        raise EvaluationError(
            f"{file.name} line {row.line}: the row has id '{row.item.id}' but the saved "
            f"judgment has id '{judgment.id}'; the input file changed, judge it again"
        )
    return judgment
