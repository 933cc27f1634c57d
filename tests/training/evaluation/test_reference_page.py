"""The held-out reference-decided pairs judged as the page judges them
(training/evaluation/reference_page.py): each decision scored on the same pairs."""

from __future__ import annotations

from app.io.reader import InputRow
from app.records import JudgeItem, Judgment, Label, Protocol, Status
from training.evaluation.reference_page import render, report


def _row(n: int, winner: str, family: str) -> InputRow:
    answers = ("short", "a much longer answer") if n % 2 else ("a much longer answer", "short")
    item = JudgeItem(
        id=f"r{n}", question="q", answers=answers, reference="ref", label=Label(winner=winner)
    )
    return InputRow(line=n, item=item, error=None, raw={"family": family})


def _judged(n: int, parts: dict[str, float], criteria: str | None = None) -> Judgment:
    return Judgment(
        id=f"r{n}",
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        verdict_parts=parts,
        criteria_verdict=criteria,
    )


def test_the_page_is_scored_beside_the_head_alone_on_the_same_pairs():
    rows = [_row(1, "A", "code"), _row(2, "B", "code"), _row(3, "A", "units")]
    page = [
        _judged(1, {"score": 1.0, "reference": 1.5}, "A"),  # turned from -0.5 to A: right
        _judged(2, {"score": -0.2}, "A"),  # right; its criteria wrong
        _judged(3, {"score": -1.0, "reference": -0.5}, "B"),  # wrong, not turned
    ]
    result = report(rows, page)
    accuracy = result["accuracy"]
    assert accuracy["the page's verdict"] == 66.7
    assert accuracy["the head alone"] == 33.3
    assert accuracy["the criteria's own decision"] == 33.3
    assert accuracy["the shorter answer"] == 100.0 and accuracy["the longer answer"] == 0.0
    assert result["verdicts_turned"] == 1 and result["turned_by"] == "the reference"
    assert result["by_family"]["code"]["pairs"] == 2
    assert result["by_family"]["code"]["the page's verdict"] == 100.0
    text = render(result)
    assert "| the page's verdict | 66.7 |" in text and "| units | 1 |" in text


def test_without_the_reference_the_judges_own_answer_is_what_turns_a_verdict():
    """Judged as a user who gave no reference (`--no-reference`), the page's own-answer part
    is what the head alone leaves out and what turned a verdict."""
    rows = [_row(1, "A", "arithmetic"), _row(2, "B", "arithmetic")]
    page = [
        _judged(1, {"score": 1.0, "own_answer": 1.5}),  # turned from -0.5 to A: right
        _judged(2, {"score": 0.5, "own_answer": 0.2}),  # wrong, not turned
    ]
    result = report(rows, page, "own_answer")
    assert result["accuracy"]["the page's verdict"] == 50.0
    assert result["accuracy"]["the head alone"] == 0.0
    assert result["verdicts_turned"] == 1
    assert "the judge's own answer turned 1 verdicts" in render(result)
