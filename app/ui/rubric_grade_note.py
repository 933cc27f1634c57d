"""What the result page says of a single answer's rubric grade where the judge's combination
made it (app/deciding/rubric_grade.py): from what, and how far it can be trusted."""

from __future__ import annotations

from app.deciding.rubric_grade import HELD_PART, PEARSON_PART, READ_PART, SHARE_PREFIX
from app.records import Judgment
from app.ui.phrases import listed

RUBRIC_GRADE_SIGNALS = {
    "grade": "its own grade of the answer",
    "check": "its check of the answer against the reference",
    "likelihood": "how likely it finds the reference after the answer",
    "length": "the answer's length (longer answers grade higher, as GPT-4's grades did on "
    "the rows it was fitted on)",
    "reference_words": "how much of what the reference states the answer states",
}


def rubric_grade_note(judgment: Judgment) -> str | None:
    """How a single answer's rubric grade was made, where the judge's combination made it
    (app/deciding/rubric_grade.py): from what, and how far it can be trusted."""
    parts = judgment.verdict_parts or {}
    if READ_PART not in parts:
        return None
    used = [
        phrase for name, phrase in RUBRIC_GRADE_SIGNALS.items() if f"{SHARE_PREFIX}{name}" in parts
    ]
    note = f"The rubric grade combines the model's read of the rubric ({parts[READ_PART]:.2f})"
    note += f" with {listed(used)}." if used else "."
    if (pearson := parts.get(PEARSON_PART)) is not None:
        note += (
            f" Out of fold on Prometheus's vicuna_eval it correlates {pearson:.2f} (Pearson) "
            "with GPT-4's grades: a rough grade."
        )
    if held := parts.get(HELD_PART):
        count, edge = (
            ("one of its signals lies", "was held at its edge")
            if held == 1
            else (f"{held:.0f} of its signals lie", "were held at their edges")
        )
        note += (
            f" Here {count} outside the range the grade was fitted on (Prometheus's answers "
            f"and references are paragraphs) and {edge}: trust it less."
        )
    return note
