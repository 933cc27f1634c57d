"""Dashboard figures over a hand-made batch, every expectation computed by hand."""

from __future__ import annotations

from typing import Any

import pytest

from app.catalog.scenarios import load_catalog
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from app.reports.dashboard import GroupSummary, ProblemRow, group_of, summarize

CATALOG = load_catalog()


def scores(overall: float, accuracy: float | None = None, clarity: float | None = None):
    criteria = {
        "accuracy": overall if accuracy is None else accuracy,
        "clarity": overall if clarity is None else clarity,
    }
    return AnswerScores(criteria=criteria, overall=overall)


def judgment(line: int, status: Status = Status.OK, **fields: Any) -> Judgment:
    fields.setdefault("id", f"r{line}")
    fields.setdefault("protocol", Protocol.SINGLE)
    return Judgment(line=line, status=status, **fields)


def item(line: int, *answers: str, scenario: str | None = None) -> JudgeItem:
    return JudgeItem(id=f"r{line}", question="Q?", answers=answers or ("a",), scenario=scenario)


JUDGMENTS = [
    judgment(
        1, scenario="post_summarization", answers=(scores(7.0, 8, 6),), confidence=0.8
    ),  # Summarization
    judgment(
        2,
        protocol=Protocol.PAIRWISE,
        scenario="math_reasoning",  # Exam Questions
        answers=(scores(9.0), scores(5.0)),
        winner="A",
        swapped=True,
        consistent=True,
        confidence=0.6,
    ),
    judgment(
        3,
        protocol=Protocol.PAIRWISE,
        scenario="math_reasoning",
        answers=(scores(6.0), scores(6.0)),
        winner="tie",
        swapped=True,
        consistent=False,
    ),
    judgment(
        4,
        protocol=Protocol.PAIRWISE,
        scenario="rubric:essay",  # not a catalog scenario: other
        answers=(scores(4.0), scores(8.0)),
        winner="B",
    ),
    judgment(5, Status.UNPARSED, scenario="math_reasoning", error="no JSON object"),
    judgment(6, Status.ERROR, id="line-6", protocol=None, error="invalid JSON"),  # unreadable
    judgment(7, Status.ERROR, error="answer 1 is empty"),  # group from its item
    judgment(
        8,
        protocol=Protocol.MULTI,
        scenario="no_such_scenario",  # other
        answers=(scores(3.0), scores(5.0), scores(7.0)),
        ranking=(3, 2, 1),
        confidence=0.9,
    ),
]
ITEMS = [
    item(1),
    item(2, "a", "b"),
    item(3, "a", "b"),
    item(4, "a", "b"),
    item(5),
    None,
    item(7, scenario="post_summarization"),
    item(8, "a", "b", "c"),
]


def test_summary_of_a_mixed_batch() -> None:
    dash = summarize(ITEMS, JUDGMENTS, CATALOG)
    assert dash.total == 8
    assert dash.status_counts == {"ok": 5, "unparsed": 1, "error": 2}
    assert dash.ok_share == 5 / 8
    assert dash.problem_rows == [
        ProblemRow(5, "r5", "unparsed", "no JSON object"),
        ProblemRow(6, "line-6", "error", "invalid JSON"),
        ProblemRow(7, "r7", "error", "answer 1 is empty"),
    ]
    assert dash.overall_scores == [7.0, 9.0, 5.0, 6.0, 6.0, 4.0, 8.0, 3.0, 5.0, 7.0]
    assert dash.verdicts == {"A": 1, "B": 1, "tie": 1, "uncertain": 0}  # pairwise rows only
    # accuracy: 8 + 9+5 + 6+6 + 4+8 + 3+5+7 = 61 over 10; clarity: 6 + ... = 59 over 10
    assert dash.criterion_means == pytest.approx({"accuracy": 6.1, "clarity": 5.9})
    assert list(dash.criterion_means) == ["accuracy", "clarity"]
    assert dash.position_consistency == 0.5  # rows 2 (agreed) and 3 (did not)
    assert dash.mean_confidence == pytest.approx((0.8 + 0.6 + 0.9) / 3)


def test_groups_follow_the_catalog_order_with_other_last() -> None:
    dash = summarize(ITEMS, JUDGMENTS, CATALOG)
    assert list(dash.by_group) == ["Summarization", "Exam Questions", "other"]
    assert dash.by_group["Summarization"] == GroupSummary(
        count=2, ok=1, mean_overall=7.0, verdicts={"A": 0, "B": 0, "tie": 0, "uncertain": 0}
    )
    exam = dash.by_group["Exam Questions"]
    assert (exam.count, exam.ok) == (3, 2)
    assert exam.mean_overall == pytest.approx((9 + 5 + 6 + 6) / 4)
    assert exam.verdicts == {"A": 1, "B": 0, "tie": 1, "uncertain": 0}
    other = dash.by_group["other"]
    assert (other.count, other.ok) == (3, 2)
    assert other.mean_overall == pytest.approx((4 + 8 + 3 + 5 + 7) / 5)
    assert other.verdicts == {"A": 0, "B": 1, "tie": 0, "uncertain": 0}


def test_group_of_uses_the_judgment_then_the_item_then_other() -> None:
    assert group_of(JUDGMENTS[0], None, CATALOG) == "Summarization"
    assert group_of(JUDGMENTS[6], ITEMS[6], CATALOG) == "Summarization"
    assert group_of(JUDGMENTS[6], None, CATALOG) == "other"
    assert group_of(JUDGMENTS[3], ITEMS[3], CATALOG) == "other"


def test_default_catalog_and_items_longer_than_judgments() -> None:
    """A batch in progress: all its items, only the first judgments."""
    dash = summarize(ITEMS, JUDGMENTS[:3])
    assert dash.total == 3
    assert list(dash.by_group) == ["Summarization", "Exam Questions"]
    assert dash.problem_rows == []
    assert summarize([], JUDGMENTS, CATALOG).by_group["other"].count == 4  # row 7 too


def test_empty_input() -> None:
    dash = summarize([], [], CATALOG)
    assert dash.total == 0
    assert dash.status_counts == {"ok": 0, "unparsed": 0, "error": 0}
    assert dash.ok_share is None
    assert dash.problem_rows == []
    assert dash.overall_scores == []
    assert dash.verdicts == {"A": 0, "B": 0, "tie": 0, "uncertain": 0}
    assert dash.by_group == {}
    assert dash.criterion_means == {}
    assert dash.position_consistency is None
    assert dash.mean_confidence is None


def test_only_failed_rows() -> None:
    dash = summarize([None], [JUDGMENTS[5]], CATALOG)
    assert dash.status_counts == {"ok": 0, "unparsed": 0, "error": 1}
    assert dash.by_group == {
        "other": GroupSummary(
            count=1, ok=0, mean_overall=None, verdicts={"A": 0, "B": 0, "tie": 0, "uncertain": 0}
        )
    }
    assert dash.overall_scores == [] and dash.mean_confidence is None
