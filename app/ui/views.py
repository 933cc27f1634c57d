"""Streamlit views of one judgment: verdict first, then confidence, charts and feedback.

Shared by the single-item page and the batch page's row inspector. Model text (the
feedback, the raw output) is never rendered as HTML: it is shown as plain text, or as
Markdown with raw HTML escaped and images reduced to their alt text.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from app.records import Judgment, Protocol, Status
from app.ui import charts
from app.ui.tables import plain_feedback

CONFIDENCE_HELP = (
    "How likely the same decision (grade, winner or top answer) is when each criterion score "
    "is drawn from the judge's own probabilities for that score. Near 100%: the judge was "
    "sure. Near 50% for a pair, or low for a grade: the scores could easily have gone the "
    "other way, so read the verdict as a weak one."
)
CONSISTENCY_HELP = (
    "With swap debiasing the pair is judged in both orders (A first, then B first). A judge "
    "that prefers a position gives different verdicts; PocketJudge then calls it a tie."
)


def show_judgment(
    judgment: Judgment,
    *,
    names: Mapping[str, str] | None = None,
    scale: tuple[float, float] | None = None,
    top: float | None = None,
    key: str = "result",
) -> None:
    """The whole result of one judgment; `key` keeps widget keys unique per place.

    `scale` is the criterion scores' axis, `top` the highest overall score possible.
    """
    if judgment.status is not Status.OK:
        _show_failure(judgment)
        return
    _headline(judgment, top)
    _confidence(judgment)
    _charts(judgment, names, scale, key)
    _feedback(judgment, key)
    _raw(judgment)


def _show_failure(judgment: Judgment) -> None:
    if judgment.status is Status.UNPARSED:
        st.warning(
            f"The judge's output could not be read as a valid judgment: {judgment.error}. "
            "No score is invented; the raw output is below. Try more max new tokens, "
            "fewer criteria, or another model."
        )
    else:
        st.error(f"This item could not be judged: {judgment.error}")
    _raw(judgment, expanded=judgment.status is Status.UNPARSED)


def _headline(judgment: Judgment, top: float | None) -> None:
    labels = charts.answer_labels(judgment)
    if judgment.protocol is Protocol.PAIRWISE:
        winner = judgment.winner
        text = "Tie" if winner == "tie" else f"Answer {winner} is better"
        st.subheader(f"Verdict: {text}")
        if judgment.consistent is False:
            st.caption(
                "The two orders disagreed, so the verdict is a tie."
                if winner == "tie"
                else "The two orders disagreed; the verdict comes from the expected scores "
                "averaged over both orders."
            )
    elif judgment.ranking:
        order = " > ".join(labels[n - 1] for n in judgment.ranking)
        st.subheader(f"Ranking: {order}")
    else:
        st.subheader("Grade" if len(judgment.answers) == 1 else "Grades")
    out_of = f" / {top:g}" if top is not None else ""
    columns = st.columns(len(judgment.answers))
    for column, label, scores in zip(columns, labels, judgment.answers):
        expected = scores.expected_overall
        column.metric(
            label if label.startswith("Answer") else f"Answer {label}",
            f"{scores.overall:g}{out_of}",
            help=None
            if expected is None
            else f"Expected overall (from the score probabilities): {expected:.2f}",
        )


def _confidence(judgment: Judgment) -> None:
    columns = st.columns(3)
    if judgment.confidence is not None:
        columns[0].metric("Confidence", f"{judgment.confidence:.0%}", help=CONFIDENCE_HELP)
    else:
        columns[0].metric("Confidence", "n/a", help="This backend gives no score probabilities.")
    if judgment.consistent is not None:
        agreed = "agreed" if judgment.consistent else "disagreed"
        columns[1].metric("Position consistency", agreed, help=CONSISTENCY_HELP)
    if judgment.latency_s is not None:
        columns[2].metric("Time", f"{judgment.latency_s:.1f} s")


def _charts(
    judgment: Judgment,
    names: Mapping[str, str] | None,
    scale: tuple[float, float] | None,
    key: str,
) -> None:
    bars, radar = st.tabs(["Scores per criterion", "Radar"])
    with bars:
        st.plotly_chart(charts.criterion_bars(judgment, names, scale), key=f"{key}_bars")
    with radar:
        st.plotly_chart(charts.criterion_radar(judgment, names, scale), key=f"{key}_radar")
    if charts.has_reference_metrics(judgment):
        st.plotly_chart(charts.reference_metrics_chart(judgment), key=f"{key}_reference")


def _feedback(judgment: Judgment, key: str) -> None:
    st.markdown("**Feedback**")
    as_markdown = st.toggle("Show the feedback as Markdown", key=f"{key}_feedback_markdown")
    if as_markdown:
        st.markdown(plain_feedback(judgment.feedback))
    else:
        st.text(judgment.feedback or "(no feedback)")


def _raw(judgment: Judgment, *, expanded: bool = False) -> None:
    if not judgment.raw_output and not judgment.raw_output_swapped:
        return
    with st.expander("Raw model output", expanded=expanded):
        st.code(judgment.raw_output or "", language="json")
        if judgment.raw_output_swapped:
            st.caption("Second order (answers swapped)")
            st.code(judgment.raw_output_swapped, language="json")
