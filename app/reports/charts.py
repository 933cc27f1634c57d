"""Plotly figures for judgments, dashboards and leaderboards. Pure: no Streamlit.

Every builder returns a `go.Figure` and raises ValueError when it has nothing to draw, so a
page decides up front whether to show a chart (see `has_scores`, `has_reference_metrics`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from app.records import Judgment, Protocol, Status

METRIC_LABELS = {
    "rouge1": "ROUGE-1",
    "rouge2": "ROUGE-2",
    "rougeL": "ROUGE-L",
    "bleu": "BLEU",
    "bertscore_f1": "BERTScore F1",
}
VERDICT_LABELS = {"A": "A wins", "B": "B wins", "tie": "Tie"}
_LAYOUT: dict[str, Any] = {
    "margin": {"l": 40, "r": 20, "t": 50, "b": 40},
    "legend": {"orientation": "h", "y": -0.2},
}


def answer_labels(judgment: Judgment) -> list[str]:
    """ "A"/"B" for a pair, "Answer 1".. otherwise."""
    if judgment.protocol is Protocol.PAIRWISE:
        return ["A", "B"][: len(judgment.answers) or 2]
    count = len(judgment.answers) or len(judgment.reference_metrics or ())
    return [f"Answer {n}" for n in range(1, count + 1)]


def has_scores(judgment: Judgment) -> bool:
    return judgment.status is Status.OK and bool(judgment.answers)


def has_reference_metrics(judgment: Judgment) -> bool:
    return bool(judgment.reference_metrics)


def _criteria_order(judgment: Judgment) -> list[str]:
    keys = list(judgment.criteria)
    for scores in judgment.answers:
        keys += [k for k in scores.criteria if k not in keys]
    return keys


def _criteria_axis(
    judgment: Judgment, names: Mapping[str, str] | None
) -> tuple[list[str], list[str]]:
    """The criteria a chart shows (keys, in order) and their display names."""
    if not has_scores(judgment):
        raise ValueError("this judgment has no scores to chart")
    keys = _criteria_order(judgment)
    return keys, [(names or {}).get(k, k) for k in keys]


def criterion_bars(
    judgment: Judgment,
    names: Mapping[str, str] | None = None,
    scale: tuple[float, float] | None = None,
) -> go.Figure:
    """Grouped bars: one group per criterion, one bar per answer."""
    keys, labels = _criteria_axis(judgment, names)
    figure = go.Figure()
    for label, scores in zip(answer_labels(judgment), judgment.answers):
        figure.add_bar(name=label, x=labels, y=[scores.criteria.get(k) for k in keys])
    figure.update_layout(
        barmode="group", title="Scores per criterion", yaxis_title="score", **_LAYOUT
    )
    if scale is not None:
        figure.update_yaxes(range=[min(0, scale[0]), scale[1]])
    return figure


def criterion_radar(
    judgment: Judgment,
    names: Mapping[str, str] | None = None,
    scale: tuple[float, float] | None = None,
) -> go.Figure:
    """The same scores on a radar, one closed outline per answer."""
    keys, theta = _criteria_axis(judgment, names)
    figure = go.Figure()
    for label, scores in zip(answer_labels(judgment), judgment.answers):
        values = [scores.criteria.get(k) for k in keys]
        figure.add_trace(
            go.Scatterpolar(
                r=[*values, values[0]], theta=[*theta, theta[0]], name=label, fill="toself"
            )
        )
    low, high = scale if scale is not None else (0, 10)
    figure.update_layout(
        title="Criterion profile",
        polar={"radialaxis": {"range": [min(0, low), high]}},
        **_LAYOUT,
    )
    return figure


def reference_metrics_chart(judgment: Judgment) -> go.Figure:
    """Grouped bars of ROUGE-1/2/L, BLEU and BERTScore F1 (0..1), one bar per answer."""
    if not has_reference_metrics(judgment):
        raise ValueError("this judgment has no reference metrics (no reference answer)")
    rows = judgment.reference_metrics or ()
    names = [m for m in METRIC_LABELS if any(m in row for row in rows)]
    names += [m for row in rows for m in row if m not in names]
    figure = go.Figure()
    labels = answer_labels(judgment)
    for index, row in enumerate(rows):
        label = labels[index] if index < len(labels) else f"Answer {index + 1}"
        figure.add_bar(
            name=label, x=[METRIC_LABELS.get(m, m) for m in names], y=[row.get(m) for m in names]
        )
    figure.update_layout(
        barmode="group", title="Similarity to the reference", yaxis_range=[0, 1], **_LAYOUT
    )
    return figure


def score_distribution(scores: Sequence[float], title: str = "Overall scores") -> go.Figure:
    """Histogram of overall scores."""
    if not scores:
        raise ValueError("no scores to chart")
    figure = go.Figure(go.Histogram(x=list(scores), xbins={"size": 0.5}, name="answers"))
    figure.update_layout(title=title, xaxis_title="overall score", yaxis_title="answers", **_LAYOUT)
    return figure


def verdict_counts(verdicts: Mapping[str, int]) -> go.Figure:
    """Bars of A wins / B wins / ties."""
    if not any(verdicts.values()):
        raise ValueError("no verdicts to chart")
    keys = [k for k in ("A", "B", "tie") if k in verdicts] + [
        k for k in verdicts if k not in VERDICT_LABELS
    ]
    figure = go.Figure(
        go.Bar(x=[VERDICT_LABELS.get(k, k) for k in keys], y=[verdicts[k] for k in keys])
    )
    figure.update_layout(title="Pairwise verdicts", yaxis_title="rows", **_LAYOUT)
    return figure


def bars(
    values: Mapping[str, float], title: str, axis_title: str, *, horizontal: bool = False
) -> go.Figure:
    """One bar per key (results by scenario group, criterion means)."""
    if not values:
        raise ValueError(f"nothing to chart for {title!r}")
    keys, numbers = list(values), list(values.values())
    if horizontal:
        figure = go.Figure(go.Bar(x=numbers, y=keys, orientation="h"))
        figure.update_layout(xaxis_title=axis_title, height=max(300, 24 * len(keys) + 120))
    else:
        figure = go.Figure(go.Bar(x=keys, y=numbers))
        figure.update_layout(yaxis_title=axis_title)
    figure.update_layout(title=title, **_LAYOUT)
    return figure


def leaderboard_grades(standings: Sequence[Any]) -> go.Figure:
    """Mean grade per answering model with its confidence interval as error bars.

    `standings` are `app.reports.leaderboard.ModelStanding`s: name, mean_grade, ci_low, ci_high.
    """
    graded = [s for s in standings if s.mean_grade is not None]
    if not graded:
        raise ValueError("no graded answers to chart")
    means = [s.mean_grade for s in graded]
    upper = [(s.ci_high - s.mean_grade) if s.ci_high is not None else 0 for s in graded]
    lower = [(s.mean_grade - s.ci_low) if s.ci_low is not None else 0 for s in graded]
    figure = go.Figure(
        go.Bar(
            x=[s.name for s in graded],
            y=means,
            error_y={"type": "data", "array": upper, "arrayminus": lower, "symmetric": False},
        )
    )
    figure.update_layout(title="Mean grade (95% CI)", yaxis_title="overall score", **_LAYOUT)
    return figure


def leaderboard_strengths(standings: Sequence[Any]) -> go.Figure:
    """Bradley-Terry strength per answering model (from pairwise verdicts)."""
    rated = [s for s in standings if s.bt_strength is not None]
    if not rated:
        raise ValueError("no pairwise verdicts to rate models with")
    figure = go.Figure(go.Bar(x=[s.name for s in rated], y=[s.bt_strength for s in rated]))
    figure.update_layout(title="Bradley-Terry strength", yaxis_title="strength", **_LAYOUT)
    return figure
