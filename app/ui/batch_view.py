"""The batch page's views: live progress, dashboard, leaderboard, downloads, row inspector.

A run lives in the session as a `BatchRun`: the `BatchJob` judging in its own thread, the
shared model it runs on, and what the views need to label results. The live part is an
`st.fragment` that reruns every `POLL_S` seconds while the job runs and reruns the whole
page once when it ends, so the dashboard appears without a click.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from app.batches.job import BatchJob, BatchSnapshot
from app.catalog.rubrics import Rubric
from app.catalog.scenarios import Catalog, load_catalog
from app.records import Judgment
from app.reports import charts
from app.reports.dashboard import Dashboard, summarize
from app.reports.leaderboard import ModelStanding, grade_scale, leaderboard
from app.ui.model_cache import RUNNING_STATES, SharedJudge
from app.ui.settings import measured_rows
from app.ui.tables import (
    criterion_names,
    csv_bytes,
    jsonl_bytes,
    overall_top,
    progress_text,
    results_frame,
    rubric_scale,
)
from app.ui.views import (
    CONFIDENCE_HELP,
    CONSISTENCY_HELP,
    engine_stopped_message,
    show_judgment,
    show_measured,
)

POLL_S = 1.0
RUN = "batch.run"
POLLING = "batch.polling"
MESSAGE = "batch.message"


@dataclass
class BatchRun:
    job: BatchJob
    handle: SharedJudge
    source: str  # the uploaded file's name
    rubric: Rubric | None
    swap: bool
    model: str = ""  # the judge's name, for its measured agreement
    explained: dict[int, Judgment] = field(default_factory=dict)  # row index -> with critique

    @property
    def running(self) -> bool:
        return self.job.state in RUNNING_STATES


def resume(run: BatchRun) -> None:
    """Button callback: go on with the rows not judged yet, on the same model."""
    if run.handle.retired:
        st.session_state[MESSAGE] = (
            "The model this run used was unloaded (the model or its load settings changed). "
            "Download what was judged, then start a new run."
        )
        return
    run.handle.track(run.job)
    run.job.resume()


def render_live(run: BatchRun) -> None:
    """Progress, stop button and live results; polls while the job runs."""
    running = run.running
    st.session_state[POLLING] = running
    st.fragment(run_every=POLL_S if running else None)(_live)(run)


def _live(run: BatchRun) -> None:
    snap = run.job.snapshot()
    st.progress(
        snap.fraction,
        text=progress_text(snap.done, snap.total, snap.rate, snap.eta_s, snap.state),
    )
    columns = st.columns(4)
    columns[0].metric("ok", snap.ok)
    columns[1].metric("unparsed", snap.unparsed)
    columns[2].metric("error", snap.errors)
    if snap.state in RUNNING_STATES:
        columns[3].button(
            "Stop",
            key="stop_batch",
            on_click=run.job.stop,
            disabled=snap.state == "stopping",
            help="Stops after the row in progress. The judged rows are kept; resume goes on.",
        )
    st.dataframe(results_frame(snap.judgments), hide_index=True, key="live_results")
    if snap.state not in RUNNING_STATES and st.session_state.get(POLLING):
        st.session_state[POLLING] = False
        st.rerun()


def render_outcome(run: BatchRun) -> None:
    """What a run that is not running any more offers: resume, dashboard, downloads."""
    snap = run.job.snapshot()
    if st.session_state.get(MESSAGE):
        st.warning(st.session_state.pop(MESSAGE))
    if snap.state == "stopped":
        st.info(
            f"Stopped after {snap.done} of {snap.total} rows. The judged rows are kept; "
            "resume goes on with the rest."
        )
        st.button("Resume", key="resume_batch", on_click=resume, args=(run,))
    elif snap.state == "failed" and run.job.engine_stopped:
        then = (
            f"the {snap.done} rows judged are kept, and Resume starts a fresh engine and goes "
            "on from the row it was on."
        )
        st.error(engine_stopped_message(snap.error or "the judge engine stopped", then))
        st.button("Resume", key="resume_batch", on_click=resume, args=(run,))
    elif snap.state == "failed":
        st.error(f"The run failed: {snap.error}. Resume tries that row again.")
        st.button("Resume", key="resume_batch", on_click=resume, args=(run,))
    elif snap.state == "done":
        st.success(f"Done: {snap.total} rows judged in {snap.elapsed_s:.1f} s.")
    if not snap.judgments:
        return
    catalog = load_catalog()
    render_downloads(run, snap)
    dash = summarize(run.job.items, snap.judgments, catalog)
    render_dashboard(dash, catalog, model=run.model, swap=run.swap, rubric=run.rubric)
    render_leaderboard(run, snap)
    render_inspector(run, snap, catalog)


def render_downloads(run: BatchRun, snap: BatchSnapshot) -> None:
    st.header("Download")
    if snap.done < snap.total:
        st.caption(f"The files hold the {snap.done} rows judged so far, of {snap.total}.")
    else:
        st.caption("One row per input row, in order, with its status (ok, unparsed, error).")
    judgment_downloads(st.columns(2), snap.judgments, run.source)


def judgment_downloads(
    columns: Sequence[Any],
    judgments: Sequence[Judgment] | Callable[[], Sequence[Judgment]],
    source: str | None,
    key: str = "download",
) -> None:
    """Two buttons, Download JSONL and Download CSV (keys `<key>_jsonl`, `<key>_csv`), in the
    first two `columns`, named after the input file `source`. Given a function that returns
    the judgments, the files are made when a button is clicked, not on every rerun."""
    stem = Path(source or "").stem or "results"
    files = (
        ("JSONL", jsonl_bytes, "jsonl", "application/jsonl"),
        ("CSV", csv_bytes, "csv", "text/csv"),
    )
    for column, (label, encode, suffix, mime) in zip(columns, files, strict=False):
        if callable(judgments):
            data: Any = partial(_encoded, encode, judgments)
        else:
            data = encode(judgments)
        column.download_button(
            f"Download {label}",
            data,
            file_name=f"{stem}.judged.{suffix}",
            mime=mime,
            key=f"{key}_{suffix}",
            on_click="ignore",
        )


def _encoded(
    encode: Callable[[Sequence[Judgment]], bytes], judgments: Callable[[], Sequence[Judgment]]
) -> bytes:
    return encode(judgments())


def render_dashboard(
    dash: Dashboard,
    catalog: Catalog,
    *,
    model: str = "",
    swap: bool = False,
    rubric: Rubric | None = None,
    key: str = "dash",
) -> None:
    """The summary metrics and charts of a batch (chart keys `<key>_scores`, ...); `model`
    names the judge whose measured agreement is shown, `swap` shows position consistency."""
    st.header("Dashboard")
    counts = dash.status_counts
    columns = st.columns(7)
    columns[0].metric("Rows judged", dash.total)
    columns[1].metric("ok", counts.get("ok", 0))
    columns[2].metric("unparsed", counts.get("unparsed", 0))
    columns[3].metric("error", counts.get("error", 0))
    columns[6].metric(
        "Uncertain verdicts",
        dash.verdicts.get("uncertain", 0),
        help="Pairwise verdicts below the judge's confidence threshold: reported as "
        "'uncertain' with their leaning, not as decisions.",
    )
    if dash.mean_confidence is not None:
        columns[4].metric("Mean confidence", f"{dash.mean_confidence:.0%}", help=CONFIDENCE_HELP)
    if swap and dash.position_consistency is not None:
        columns[5].metric(
            "Position consistency", f"{dash.position_consistency:.0%}", help=CONSISTENCY_HELP
        )
    if model:
        show_measured(measured_rows(model), model)
    left, right = st.columns(2)
    if dash.overall_scores:
        left.plotly_chart(charts.score_distribution(dash.overall_scores), key=f"{key}_scores")
    if any(dash.verdicts.values()):
        right.plotly_chart(charts.verdict_counts(dash.verdicts), key=f"{key}_verdicts")
    means = {g: s.mean_overall for g, s in dash.by_group.items() if s.mean_overall is not None}
    left, right = st.columns(2)
    if means:
        left.plotly_chart(
            charts.bars(means, "Mean overall score by scenario group", "mean overall"),
            key=f"{key}_groups",
        )
    right.dataframe(_group_table(dash), hide_index=True)
    if dash.criterion_means:
        names = {name: criterion_name(name, catalog, rubric) for name in dash.criterion_means}
        means = {names[k]: v for k, v in dash.criterion_means.items()}
        st.plotly_chart(
            charts.bars(means, "Mean score per criterion", "mean score", horizontal=True),
            key=f"{key}_criteria",
        )
    if dash.problem_rows:
        st.subheader("Rows to inspect")
        st.caption("Unparsed rows keep the raw output; error rows say what to fix.")
        st.dataframe(
            pd.DataFrame(dash.problem_rows, columns=["line", "id", "status", "error"]),
            hide_index=True,
        )


def _group_table(dash: Dashboard) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "group": name,
                "rows": group.count,
                "ok": group.ok,
                "mean overall": group.mean_overall,
                "A": group.verdicts.get("A", 0),
                "B": group.verdicts.get("B", 0),
                "tie": group.verdicts.get("tie", 0),
            }
            for name, group in dash.by_group.items()
        ],
        columns=["group", "rows", "ok", "mean overall", "A", "B", "tie"],
    )


def criterion_name(key: str, catalog: Catalog, rubric: Rubric | None = None) -> str:
    """A criterion's display name: the rubric's, else the library's, else its key."""
    if rubric is not None:
        for criterion in rubric.criteria:
            if criterion.id == key:
                return criterion.name
    return catalog.criteria[key].name if key in catalog.criteria else key


def render_leaderboard(run: BatchRun, snap: BatchSnapshot) -> None:
    scale = grade_scale(snap.judgments, run.rubric)
    st.header("Model leaderboard")
    render_standings(leaderboard(run.job.items, snap.judgments, scale=scale))


def render_standings(standings: Sequence[ModelStanding], key: str = "") -> None:
    """A leaderboard's table and charts (keys `<key>leaderboard`, `<key>board_grades`,
    `<key>board_strengths`), or why there is none."""
    if not standings:
        st.caption(
            "No leaderboard: the rows do not name the models that wrote the answers "
            "(`answer_models` in PocketJudge rows, `answerN_model_id` in JudgeLM rows)."
        )
        return
    table = pd.DataFrame(
        [
            {
                "model": s.name,
                "answers": s.answers,
                "mean grade": s.mean_grade,
                "95% CI low": s.ci_low,
                "95% CI high": s.ci_high,
                "wins": s.wins,
                "ties": s.ties,
                "losses": s.losses,
                "win rate": s.win_rate,
                "Bradley-Terry strength": s.bt_strength,
            }
            for s in standings
        ]
    )
    st.dataframe(table, hide_index=True, key=f"{key}leaderboard")
    st.caption(
        "Win rate counts a tie as half a win. A Bradley-Terry strength of 2 means odds of 2:1 "
        "against an average model; strengths come from pairwise and ranking verdicts."
    )
    left, right = st.columns(2)
    if any(s.mean_grade is not None for s in standings):
        left.plotly_chart(charts.leaderboard_grades(standings), key=f"{key}board_grades")
    if any(s.bt_strength is not None for s in standings):
        right.plotly_chart(charts.leaderboard_strengths(standings), key=f"{key}board_strengths")


def render_inspector(run: BatchRun, snap: BatchSnapshot, catalog: Catalog) -> None:
    st.header("Inspect a row")
    judgments = snap.judgments
    index = st.selectbox(
        "Row",
        range(len(judgments)),
        format_func=lambda i: (
            f"line {judgments[i].line} · {judgments[i].id} · {judgments[i].status.value}"
        ),
        key="inspect_row",
    )
    if index is None or index >= len(judgments):
        return
    judgment = run.explained.get(index, judgments[index])
    item = run.job.items[index]
    show_judgment(
        judgment,
        names=criterion_names(judgment, catalog, run.rubric),
        scale=rubric_scale(run.rubric, judgment),
        top=overall_top(run.rubric, judgment),
        key="inspect",
        on_explain=None if item is None else lambda: _explain(run, index, item, judgment),
    )


def _explain(run: BatchRun, index: int, item, judgment: Judgment) -> None:
    """Button callback: a critique of one row, on the run's model (when it is still loaded)."""
    if run.handle.retired or run.running:
        st.session_state[MESSAGE] = (
            "Explain needs the run's model free: wait for the run to end (or the model was "
            "unloaded; start a new run)."
        )
        return
    with run.handle.use() as judge:
        run.explained[index] = judge.explain(item, judgment, run.job.config)
