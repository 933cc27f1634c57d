"""Past runs from the run history: list and filter them, open one again, compare two."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import streamlit as st

from app.catalog.scenarios import Catalog, load_catalog
from app.reports import charts
from app.reports.dashboard import summarize
from app.reports.leaderboard import grade_scale, leaderboard
from app.runs.compare import RunComparison, compare_runs
from app.runs.store import RunInfo, RunStore, RunStoreError, StoredRow
from app.ui.batch_view import criterion_name, judgment_downloads, render_dashboard, render_standings
from app.ui.run_tables import (
    EMPTY_HINT,
    RunFilter,
    choices,
    deltas_frame,
    filter_runs,
    flips_frame,
    run_days,
    run_facts,
    run_label,
    runs_frame,
    signed,
)

ROWS_CACHE = "runs.rows"
DAYS = "runs_days"
DAY_BOUNDS = "runs.day_bounds"  # the first and last day of the runs when DAYS was set
CACHED_RUNS = 4


def stored_rows(store: RunStore, run: RunInfo) -> list[StoredRow]:
    """A run's rows, read again only when the run changed (a few runs kept per session)."""
    cache: dict = st.session_state.setdefault(ROWS_CACHE, {})
    key = (str(store.path), run.id, run.rows, run.status, run.finished)
    if key not in cache:
        while len(cache) >= CACHED_RUNS:
            cache.pop(next(iter(cache)))
        cache[key] = store.rows(run.id)
    return cache[key]


def render_filters(runs: Sequence[RunInfo]) -> RunFilter:
    first, last = run_days(runs)
    if st.session_state.get(DAY_BOUNDS) != (first, last) or DAYS not in st.session_state:
        # all days at first, and again once a run starts on a new day (else it stays hidden)
        st.session_state[DAY_BOUNDS] = st.session_state[DAYS] = (first, last)
    columns = st.columns([1.3, 1, 1, 1, 1])  # room for both dates
    days = columns[0].date_input("Started between", min_value=first, max_value=last, key=DAYS)
    if isinstance(days, tuple | list):  # one day picked so far: from it on
        days = (days[0], days[-1] if len(days) > 1 else last) if days else None
    else:
        days = (days, days)
    picked = [
        columns[n].multiselect(label, choices(runs, field), key=f"runs_{field}", placeholder="any")
        for n, (label, field) in enumerate(
            (("Model", "model"), ("Input file", "input_name"), ("Scenario", "scenario")), 1
        )
    ]
    statuses = columns[4].multiselect(
        "Status", choices(runs, "status"), key="runs_status", placeholder="any"
    )
    return RunFilter(days, *picked, statuses=statuses)


def pick(label: str, runs: Sequence[RunInfo], key: str, index: int = 0) -> RunInfo:
    by_id = {run.id: run for run in runs}
    chosen = st.selectbox(
        label,
        list(by_id),
        index=min(index, len(by_id) - 1),
        format_func=lambda ident: run_label(by_id[ident]),
        key=key,
    )
    return by_id[chosen]


# -- one run ------------------------------------------------------------------------------


def render_run(store: RunStore, runs: Sequence[RunInfo], catalog: Catalog) -> None:
    run = pick("Run", runs, "open_run")
    rows = stored_rows(store, run)
    total = f" of {run.total}" if run.total is not None else ""
    if run.status == "running":
        st.info(f"This run is still going: {run.rows}{total} rows are stored so far.")
    elif run.status == "incomplete":
        st.info(
            f"This run is incomplete (stopped, failed or killed): {run.rows}{total} rows are "
            "stored. The same batch run again (the same file and settings) goes on in it."
        )
    with st.expander("Settings and versions"):
        st.dataframe(run_facts(run), hide_index=True, key="run_facts")
        st.json(run.settings, expanded=False)
    if not rows:
        st.caption("No row of this run was stored.")
        return
    render_run_downloads(run, rows)
    judgments = [row.judgment for row in rows]
    items = [row.item for row in rows]
    dash = summarize(items, judgments, catalog)
    # position consistency shows when rows were judged in both orders (app and CLI alike)
    render_dashboard(dash, catalog, model=run.model or "", swap=True, key="run_dash")
    st.header("Model leaderboard")
    render_standings(leaderboard(items, judgments, scale=grade_scale(judgments)), key="run_")


def render_run_downloads(run: RunInfo, rows: Sequence[StoredRow]) -> None:
    st.header("Download")
    st.caption("The stored rows, in input order, and the run's report as one HTML page.")
    columns = st.columns(3)
    judgments = [row.judgment for row in rows]
    judgment_downloads(columns, partial(list, judgments), run.input_name, key="run_download")
    columns[2].download_button(
        "Download HTML report",
        partial(run_html, run, rows),
        file_name=f"{Path(run.input_name or 'run').stem}.{run.id}.report.html",
        mime="text/html",
        key="run_download_html",
        on_click="ignore",
    )


def run_html(run: RunInfo, rows: Sequence[StoredRow]) -> bytes:
    from app.runs.report import run_report

    return run_report(run, rows).encode("utf-8")


# -- two runs -----------------------------------------------------------------------------


def render_comparison(store: RunStore, runs: Sequence[RunInfo], catalog: Catalog) -> None:
    if len(runs) < 2:
        st.info("Comparing needs two runs: widen the filters, or judge another batch.")
        return
    left, right = st.columns(2)
    with left:
        run_a = pick("Run A", runs, "compare_a", index=1)  # the older of the newest two
    with right:
        run_b = pick("Run B", runs, "compare_b")
    if run_a.id == run_b.id:
        st.info("Pick two different runs.")
        return
    comparison = compare_runs(
        run_a, stored_rows(store, run_a), run_b, stored_rows(store, run_b), catalog
    )
    if not comparison.same_inputs:
        st.warning(
            f"These runs read different input files ({run_a.input_name or '?'} and "
            f"{run_b.input_name or '?'}, or the same name with other contents): only rows "
            "with the same id are compared."
        )
    st.download_button(
        "Download comparison report (HTML)",
        partial(comparison_html, comparison),
        file_name=f"compare.{run_a.id}.{run_b.id}.html",
        mime="text/html",
        key="compare_download_html",
        on_click="ignore",
    )
    render_agreement(comparison)
    render_flips(comparison)
    render_deltas(comparison, catalog)
    for name, standings in (("A", comparison.leaderboard_a), ("B", comparison.leaderboard_b)):
        run = run_a if name == "A" else run_b
        st.subheader(f"Leaderboard of run {name} ({run.id})")
        render_standings(standings, key=f"compare_{name.lower()}_")


def render_agreement(comparison: RunComparison) -> None:
    st.header("Agreement")
    columns = st.columns(6)
    agreement = comparison.agreement
    columns[0].metric(
        "Agreement",
        "-" if agreement is None else f"{agreement:g}%",
        help="Share of the common rows with the same decision: the same pairwise winner, "
        "the same ranking, or grades at most 1 point apart.",
    )
    columns[1].metric("Common rows", comparison.common, help="Rows both runs judged ok.")
    columns[2].metric("Only in A", comparison.only_a)
    columns[3].metric("Only in B", comparison.only_b)
    columns[4].metric("Flips", len(comparison.flips))
    columns[5].metric("Overall change (B - A)", signed(comparison.overall_delta))


def render_flips(comparison: RunComparison) -> None:
    st.header("Flipped rows")
    if not comparison.flips:
        st.caption("No common row changed its decision.")
        return
    st.caption(
        "Rows whose decision changed: another pairwise winner, another answer ranked first, "
        "or grades more than 1 point apart."
    )
    st.dataframe(flips_frame(comparison), hide_index=True, key="compare_flips")


def render_deltas(comparison: RunComparison, catalog: Catalog) -> None:
    st.header("Score changes")
    if not (comparison.criterion_deltas or comparison.group_deltas):
        st.caption("No scores to compare: the common rows have no criterion or overall scores.")
        return
    by_criterion = {
        criterion_name(key, catalog): value for key, value in comparison.criterion_deltas.items()
    }
    groups = comparison.group_deltas
    for what, deltas, title, key in (
        ("criterion", by_criterion, "Mean score change per criterion (B - A)", "criteria"),
        ("scenario group", groups, "Mean overall change by scenario group (B - A)", "groups"),
    ):
        if not deltas:
            continue
        left, right = st.columns(2)
        left.dataframe(deltas_frame(deltas, what), hide_index=True, key=f"compare_{key}_table")
        right.plotly_chart(
            charts.bars(deltas, title, "B - A", horizontal=True), key=f"compare_{key}_chart"
        )


def comparison_html(comparison: RunComparison) -> bytes:
    from app.runs.report import comparison_report

    return comparison_report(comparison).encode("utf-8")


# -- the page -----------------------------------------------------------------------------


def page() -> None:
    st.title("Runs")
    st.caption(
        "Every batch judged on the Batch page or with `python -m app judge` is kept in the run "
        "history: open one again (its dashboard and files), or compare two."
    )
    try:
        store = RunStore()
        runs = store.runs()
    except (RunStoreError, sqlite3.Error) as exc:
        st.error(f"The run history cannot be read: {exc}")
        return
    if not runs:
        st.info(EMPTY_HINT)
        return
    shown = filter_runs(runs, render_filters(runs))
    st.caption(f"{len(shown)} of {len(runs)} runs, newest first.")
    st.dataframe(runs_frame(shown), hide_index=True, key="runs_table")
    if not shown:
        st.info("No run matches these filters.")
        return
    catalog = load_catalog()
    one, two = st.tabs(["Open a run", "Compare two runs"])
    with one:
        render_run(store, shown, catalog)
    with two:
        render_comparison(store, shown, catalog)


page()
