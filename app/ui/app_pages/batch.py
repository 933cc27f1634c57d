"""Judge a whole file: upload, preview with per-row errors, run, watch, stop, resume."""

from __future__ import annotations

import streamlit as st

from app.batches.job import BatchJob
from app.catalog.scenarios import load_catalog
from app.io.layouts import LAYOUTS
from app.io.reader import InputRow, read_rows
from app.judging.item_checks import row_problem
from app.ui import state
from app.ui.batch_view import RUN, BatchRun, render_live, render_outcome
from app.ui.history import batch_history
from app.ui.run_setup import prepare_run
from app.ui.settings import PROTOCOL_LABELS, Settings, max_upload_bytes, model_label
from app.ui.tables import preview_frame
from models.foundation.errors import InputError, PocketJudgeError

PARSED = "batch.parsed"


def parse_upload(upload) -> tuple[list[InputRow] | None, str | None]:
    """The rows of an uploaded file (parsed once per upload), or the reason there are none."""
    cached = st.session_state.get(PARSED)
    if cached is not None and cached[0] == upload.file_id:
        return cached[1], cached[2]
    try:
        rows = list(read_rows(upload.getvalue(), name=upload.name, max_bytes=max_upload_bytes()))
        error = None if rows else f"{upload.name} has no rows"
    except InputError as exc:
        rows, error = None, str(exc)
    st.session_state[PARSED] = (upload.file_id, rows, error)
    return rows, error


def settings_problems(rows: list[InputRow], settings: Settings) -> dict[int, str]:
    """line -> why a readable row cannot be judged with these settings (answers, criteria)."""
    config = settings.judge_config()
    catalog = load_catalog()
    found = {}
    for row in rows:
        if row.item is not None and (problem := row_problem(row.item, config, catalog)):
            found[row.line] = problem
    return found


def render_preview(rows: list[InputRow], settings: Settings) -> None:
    frame = preview_frame(rows, problems=settings_problems(rows, settings))
    bad = int((frame["status"] == "error").sum())
    columns = st.columns(3)
    columns[0].metric("Rows", len(rows))
    columns[1].metric("Readable", sum(row.ok for row in rows))
    columns[2].metric("With problems", bad)
    if bad:
        st.warning(
            f"{bad} of {len(rows)} rows have problems with the file or with the settings "
            "chosen (protocol, criteria): the error column says what to fix. "
            "They stay in the results as error rows, so the output has one row per input row."
        )
    only_bad = st.toggle("Show only rows with problems", value=bool(bad), key="preview_errors")
    shown = frame[frame["status"] == "error"] if only_bad else frame
    st.dataframe(shown, hide_index=True, key="preview")


def start(settings: Settings, rows: list[InputRow], upload) -> None:
    has_reference = any(r.item and r.item.reference for r in rows)
    prepared = prepare_run(settings, has_reference, "run")
    if prepared is None:
        return
    shared, loaded, config = prepared
    try:
        history = batch_history(
            settings, upload.getvalue(), upload.name, shared.name, config, len(rows)
        )
    except OSError as exc:  # the model or template file went away: judge without a record
        st.warning(f"This batch is not kept in the run history: {exc}")
        history = None
    engines = settings.workers or loaded.default_engines()
    job = BatchJob(loaded, rows, config, lock=shared.lock, history=history, engines=engines)
    try:
        shared.track(job)
    except PocketJudgeError as exc:
        st.error(str(exc))
        return
    job.start()
    st.session_state[RUN] = BatchRun(
        job, shared, upload.name, settings.rubric, settings.swap, model=shared.name
    )


def render_history_note(run: BatchRun) -> None:
    """Where the run is kept, or (one warning) why it is not; the batch goes on either way."""
    if run.job.history_warning:
        message = run.job.history_warning.removeprefix("warning: ")
        st.warning(f"{message[:1].upper()}{message[1:]}. The batch goes on without it.")
    elif run.job.history_run_id and not run.running:
        st.caption(
            f"Kept in the run history as run `{run.job.history_run_id}`: "
            "the Runs page shows it again and compares it with other runs."
        )


def page() -> None:
    settings = state.current_settings()
    st.title("Batch")
    st.caption(
        f"{PROTOCOL_LABELS[settings.protocol]} · scenario `{settings.scenario}` · model "
        f"`{model_label(settings.model)}`. Every input row gives exactly one output row."
    )
    limit_mb = max_upload_bytes() / 1_000_000
    upload = st.file_uploader(
        f"Upload a .jsonl or .json file (up to {limit_mb:g} MB)",
        type=["jsonl", "json", "ndjson"],
        key="upload",
        help="Accepted layouts: " + "; ".join(f"{k} {v}" for k, v in LAYOUTS.items()),
    )
    run: BatchRun | None = st.session_state.get(RUN)
    rows = None
    if upload is not None:
        rows, error = parse_upload(upload)
        if error:
            st.error(error)
        else:
            render_preview(rows, settings)
    busy = run is not None and run.running
    clicked = st.button(
        "Run batch",
        type="primary",
        key="run_batch",
        disabled=not rows or busy,
        help="Stop the current run first." if busy else None,
    )
    if clicked and rows:
        start(settings, rows, upload)
        run = st.session_state.get(RUN)
    if run is None:
        return
    st.header(f"Run: {run.source}")
    render_history_note(run)
    render_live(run)
    if not run.running:
        render_outcome(run)


page()
