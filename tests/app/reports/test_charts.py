"""Chart builders return plotly figures with the right traces, and refuse empty input."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from app.records import AnswerScores, Judgment, Protocol, Status
from app.reports import charts
from app.reports.leaderboard import ModelStanding

SCORES_A = AnswerScores(criteria={"accuracy": 8.0, "clarity": 6.0}, overall=7.33)
SCORES_B = AnswerScores(criteria={"accuracy": 4.0, "clarity": 5.0}, overall=4.33)
METRICS = (
    {"rouge1": 0.8, "rouge2": 0.5, "rougeL": 0.7, "bleu": 0.4, "bertscore_f1": 0.9},
    {"rouge1": 0.2, "rouge2": 0.0, "rougeL": 0.2, "bleu": 0.0, "bertscore_f1": 0.6},
)


def pair(**update) -> Judgment:
    judgment = Judgment(
        id="p",
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        answers=(SCORES_A, SCORES_B),
        criteria=("accuracy", "clarity"),
        reference_metrics=METRICS,
    )
    return judgment.model_copy(update=update)


def test_criterion_bars_group_one_bar_per_answer() -> None:
    figure = charts.criterion_bars(pair(), {"accuracy": "Accuracy"}, (1, 10))
    assert isinstance(figure, go.Figure)
    assert [trace.name for trace in figure.data] == ["A", "B"]
    assert list(figure.data[0].x) == ["Accuracy", "clarity"]
    assert list(figure.data[1].y) == [4.0, 5.0]
    assert figure.layout.barmode == "group"
    assert tuple(figure.layout.yaxis.range) == (0, 10)


def test_radar_closes_each_outline() -> None:
    figure = charts.criterion_radar(pair())
    assert len(figure.data) == 2
    trace = figure.data[0]
    assert isinstance(trace, go.Scatterpolar)
    assert list(trace.r) == [8.0, 6.0, 8.0]
    assert list(trace.theta) == ["accuracy", "clarity", "accuracy"]


def test_multi_answers_are_numbered() -> None:
    judgment = pair(protocol=Protocol.MULTI, winner=None, ranking=(1, 2))
    assert charts.answer_labels(judgment) == ["Answer 1", "Answer 2"]


def test_reference_metrics_chart_only_with_metrics() -> None:
    figure = charts.reference_metrics_chart(pair())
    assert list(figure.data[0].x) == ["ROUGE-1", "ROUGE-2", "ROUGE-L", "BLEU", "BERTScore F1"]
    assert list(figure.data[1].y) == [0.2, 0.0, 0.2, 0.0, 0.6]
    assert not charts.has_reference_metrics(pair(reference_metrics=None))
    with pytest.raises(ValueError, match="no reference"):
        charts.reference_metrics_chart(pair(reference_metrics=None))


def test_no_score_charts_for_a_failed_judgment() -> None:
    failed = Judgment(id="x", protocol=Protocol.SINGLE, status=Status.UNPARSED, raw_output="?")
    assert not charts.has_scores(failed)
    with pytest.raises(ValueError):
        charts.criterion_bars(failed)
    with pytest.raises(ValueError):
        charts.criterion_radar(failed)


def test_dashboard_charts() -> None:
    assert charts.score_distribution([5.0, 6.5, 7.0]).data[0].type == "histogram"
    verdicts = charts.verdict_counts({"A": 3, "B": 1, "tie": 2})
    assert list(verdicts.data[0].x) == ["A wins", "B wins", "Tie"]
    assert list(verdicts.data[0].y) == [3, 1, 2]
    groups = charts.bars({"Code": 6.5, "Summarization": 7.0}, "by group", "mean")
    assert list(groups.data[0].x) == ["Code", "Summarization"]
    flat = charts.bars({"Accuracy": 6.0}, "criteria", "mean", horizontal=True)
    assert flat.data[0].orientation == "h"
    for empty in (
        lambda: charts.score_distribution([]),
        lambda: charts.verdict_counts({"A": 0, "B": 0, "tie": 0}),
        lambda: charts.bars({}, "t", "a"),
    ):
        with pytest.raises(ValueError):
            empty()


def standing(name: str, mean: float | None, low: float | None, high: float | None, bt=None):
    return ModelStanding(
        name=name,
        answers=3,
        graded=3,
        mean_grade=mean,
        ci_low=low,
        ci_high=high,
        wins=1,
        ties=0,
        losses=1,
        win_rate=0.5,
        bt_strength=bt,
    )


def test_leaderboard_charts() -> None:
    standings = [standing("x", 7.0, 6.0, 8.5, 1.5), standing("y", 5.0, None, None)]
    grades = charts.leaderboard_grades(standings)
    assert list(grades.data[0].x) == ["x", "y"]
    assert list(grades.data[0].error_y.array) == [1.5, 0]
    assert list(grades.data[0].error_y.arrayminus) == [1.0, 0]
    strengths = charts.leaderboard_strengths(standings)
    assert list(strengths.data[0].x) == ["x"]
    with pytest.raises(ValueError):
        charts.leaderboard_strengths([standing("y", 5.0, None, None)])
    with pytest.raises(ValueError):
        charts.leaderboard_grades([standing("z", None, None, None)])
