"""The report's figures on criterion scores: how often a head's criteria agree with its
verdict (and how often the verdict is right either way), and the rubric grades against
GPT-4's beside the judge's own grade and the answer's length."""

from __future__ import annotations

import pytest

from app.io.reader import InputRow
from app.records import AnswerScores, JudgeItem, Judgment, Label, Protocol, Status
from training.evaluation.criteria_agreement import criteria_agreement, render


def _row(line: int, label: str, lengths: tuple[int, int]) -> InputRow:
    item = JudgeItem(
        id=str(line),
        question="q",
        answers=("a" * lengths[0], "b" * lengths[1]),
        label=Label(winner=label),
    )
    return InputRow(line=line, item=item, error=None, raw=None)


def _judged(line: int, winner: str, criteria: str | None) -> Judgment:
    return Judgment(
        id=str(line),
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner=winner,
        leaning="A" if winner == "uncertain" else winner,
        line=line,
        criteria_verdict=criteria,
    )


def test_agreement_counts_decided_pairs_and_splits_the_verdicts_accuracy():
    rows = [_row(1, "A", (5, 9)), _row(2, "A", (9, 5)), _row(3, "B", (5, 9)), _row(4, "B", (9, 5))]
    judged = [
        _judged(1, "A", "A"),  # agree, right
        _judged(2, "B", "A"),  # disagree, wrong
        _judged(3, "B", "B"),  # agree, right
        _judged(4, "uncertain", "A"),  # not decided
    ]
    figures = criteria_agreement(rows, judged)
    assert figures["decided"] == 3 and figures["agree"] == pytest.approx(66.7)
    assert figures["right_when_agree"] == 100.0 and figures["agree_n"] == 2
    assert figures["right_when_not"] == 0.0 and figures["not_n"] == 1
    assert figures["criteria_right"] == 75.0 and figures["labelled"] == 4  # all but row 4
    assert figures["longer_right"] == 50.0  # rows 2 and 3
    assert "66.7 %" in " ".join(render(figures))
    assert figures["by_head"] == 0 and "criterion head" not in " ".join(render(figures))
    by_head = [j.model_copy(update={"criteria_by_head": True}) for j in judged[:2]]
    figures = criteria_agreement(rows, by_head + judged[2:])
    assert "(2 given by the criterion head, the rest read apart)" in " ".join(render(figures))
    figures = criteria_agreement(
        rows, [j.model_copy(update={"criteria_by_head": True}) for j in judged]
    )
    assert "(all given by the criterion head)" in " ".join(render(figures))


def test_no_criteria_verdict_means_no_figures():
    rows = [_row(1, "A", (5, 9))]
    assert criteria_agreement(rows, [_judged(1, "A", None)]) is None


def test_the_rubric_report_puts_the_grades_beside_length():
    from training.evaluation.rubric_eval import COMBINED, report
    from training.evaluation.rubric_eval import render as render_rubric

    scores = [1.0, 2.0, 4.0, 5.0]
    rows = [
        InputRow(
            line=n,
            item=JudgeItem(
                id=str(n), question="q", answers=("x" * (10 + n),), label=Label(score=s)
            ),
            error=None,
            raw=None,
        )
        for n, s in enumerate(scores)
    ]

    def graded(levels: list[float]) -> list[Judgment]:
        return [
            Judgment(
                id=str(n),
                protocol=Protocol.SINGLE,
                status=Status.OK,
                answers=(
                    AnswerScores(
                        criteria={"rubric": round(v, 1)},
                        overall=5,
                        expected_overall=5.0 + n,
                        expected_criteria={"rubric": v},
                    ),
                ),
            )
            for n, v in enumerate(levels)
        ]

    result = report(
        rows,
        {"with the reference": graded([1.1, 2.0, 3.9, 5.0]), "without it": graded([5, 1, 2, 3])},
        "m",
    )
    grades = result["grades"]
    assert grades["rubric grade, with the reference"]["spearman"] == pytest.approx(1.0)
    assert grades["rubric grade, without it"]["spearman"] < 0.5
    assert grades["the longer, the better (answer length)"]["spearman"] == pytest.approx(1.0)
    assert "| rubric grade, with the reference | 4 |" in render_rubric(result)
    # a judge's combination: its grade labelled as fitted on the file, the read beside it
    combined = [
        j.model_copy(update={"verdict_parts": {"rubric_read": level}})
        for j, level in zip(graded([1.1, 2.0, 3.9, 5.0]), [3.0, 2.0, 1.0, 4.0])
    ]
    result = report(rows, {"with the reference": combined}, "m")
    grades = result["grades"]
    assert grades[COMBINED]["spearman"] == pytest.approx(1.0)
    assert grades["rubric grade, with the reference: the read alone"]["spearman"] < 0.5
    assert "in-sample" in render_rubric(result)


def _graded_row(line: int, question: str, answer: str, score: float) -> InputRow:
    item = JudgeItem(
        id=str(line), question=question, answers=(answer,), reference="r", label=Label(score=score)
    )
    return InputRow(line=line, item=item, error=None, raw=None)


def test_graded_answers_to_one_request_make_labelled_pairs_and_equal_grades_none():
    from training.datasets.reference_pairs import pairs_of

    rows = [
        _graded_row(1, "q1", "a", 4.0),
        _graded_row(2, "q1", "b", 2.0),
        _graded_row(3, "q1", "c", 4.0),  # as good as "a": no pair with it
        _graded_row(4, "q2", "d", 1.0),  # alone with its request
    ]
    pairs = pairs_of(rows)
    assert [(p.item.answers, p.item.label.winner) for p in pairs] == [
        (("a", "b"), "A"),
        (("b", "c"), "B"),
    ]
    assert all(p.item.reference == "r" for p in pairs)
