"""The batch flow on the tiny real model: preview, run to done, stop and resume, an engine
killed mid-batch, two tabs."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.records import Status
from app.runs.store import RunStore
from app.ui import model_cache
from app.ui.batch_view import RUN, BatchRun
from app.ui.settings import MAX_UPLOAD_ENV
from app.ui.state import settings_from

PAGE = "app_pages/batch.py"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MODELS = ("model-x", "model-y", "model-z")
WAIT_S = 120


def rows(count: int) -> bytes:
    """`count` pairwise rows whose answers name the models that wrote them, and one bad row."""
    lines = []
    for n in range(count):
        first, second = MODELS[n % 3], MODELS[(n + 1) % 3]
        lines.append(
            {
                "id": f"r{n}",
                "question": f"Name a primary colour ({n}).",
                "answers": ["Red.", "Green is one."],
                "answer_models": [first, second],
            }
        )
    text = "".join(json.dumps(line) + "\n" for line in lines)
    return (text + '{"id": "bad", "answers": ["x"]}\n').encode("utf-8")


def upload(at: AppTest, data: bytes, name: str = "batch.jsonl") -> AppTest:
    at.file_uploader(key="upload").upload(name, data, "application/jsonl").run()
    assert not at.exception, at.exception
    return at


def table_with(at: AppTest, column: str):
    """The first table on the page that has `column`."""
    return next(t.value for t in at.dataframe if column in t.value.columns)


def current_run(at: AppTest) -> BatchRun:
    return at.session_state[RUN]


def finish(at: AppTest) -> AppTest:
    """Wait for the job's thread, then rerun the page as the polling fragment would."""
    assert current_run(at).job.wait(WAIT_S)
    at.run()
    assert not at.exception, at.exception
    return at


def test_preview_shows_row_errors_before_running(make_app: Callable[..., AppTest]) -> None:
    at = make_app(PAGE)
    assert at.button(key="run_batch").disabled
    upload(at, (EXAMPLES / "bad_rows.jsonl").read_bytes(), "bad_rows.jsonl")
    assert [m.value for m in at.metric] == ["6", "2", "4"]
    assert "4 of 6 rows have problems" in at.warning[0].value
    shown = at.dataframe[0].value
    assert list(shown["line"]) == [2, 3, 4, 5]  # only the rows with problems, by default
    assert "invalid JSON" in shown.iloc[0]["error"]
    assert "field 'question'" in shown.iloc[1]["error"]
    at.toggle(key="preview_errors").set_value(False).run()
    assert len(at.dataframe[0].value) == 6
    assert not at.button(key="run_batch").disabled


def test_the_preview_checks_rows_against_the_chosen_protocol_and_criteria(
    make_app: Callable[..., AppTest],
) -> None:
    """A 3-answer row is fine for "auto" (ranked) but an error row for pairwise: the preview
    says so before the run, with the message the run would give."""
    data = "".join(
        json.dumps(row) + "\n"
        for row in (
            {"id": "two", "question": "Q?", "answers": ["a", "b"]},
            {"id": "three", "question": "Q?", "answers": ["a", "b", "c"]},
        )
    ).encode()
    at = make_app(PAGE)
    upload(at, data)
    assert [m.value for m in at.metric] == ["2", "2", "0"]
    at.sidebar.radio(key="protocol").set_value("pairwise").run()
    assert [m.value for m in at.metric] == ["2", "2", "1"]
    shown = at.dataframe[0].value
    flagged = shown[shown["status"] == "error"]
    assert list(flagged["id"]) == ["three"]
    assert "pairwise judging needs exactly 2 answers" in flagged.iloc[0]["error"]


def test_every_example_layout_previews_clean(make_app: Callable[..., AppTest]) -> None:
    at = make_app(PAGE)
    for path in sorted(EXAMPLES.glob("*.json*")):
        if path.name == "bad_rows.jsonl":
            continue
        upload(at, path.read_bytes(), path.name)
        assert at.metric[2].value == "0", path.name  # no row with problems
        assert not at.error, path.name


def test_a_file_over_the_size_limit_is_refused(
    make_app: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MAX_UPLOAD_ENV, "0.0001")  # 100 bytes
    at = make_app(PAGE)
    upload(at, (EXAMPLES / "bad_rows.jsonl").read_bytes(), "bad_rows.jsonl")
    message = at.error[0].value
    assert "the limit is 100 bytes" in message and "Split the file" in message
    assert at.button(key="run_batch").disabled


def test_batch_runs_to_done_with_dashboard_leaderboard_and_downloads(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app(PAGE)
    upload(at, rows(4))
    at.button(key="run_batch").click().run()
    assert not at.exception, at.exception
    finish(at)
    snap = current_run(at).job.snapshot()
    assert snap.state == "done" and snap.done == snap.total == 5
    assert [j.status for j in snap.judgments] == [Status.OK] * 4 + [Status.ERROR]
    assert "Done: 5 rows judged" in at.success[0].value
    headers = [h.value for h in at.header]
    for header in ("Download", "Dashboard", "Model leaderboard", "Inspect a row"):
        assert header in headers
    assert {button.key for button in at.get("download_button")} >= {
        "download_jsonl",
        "download_csv",
    }
    board = table_with(at, "Bradley-Terry strength")
    assert set(board["model"]) == set(MODELS)
    intervals = board[["95% CI low", "mean grade", "95% CI high"]].dropna()
    assert len(intervals) == len(MODELS)  # every model has two or more grades
    for low, mean, high in intervals.itertuples(index=False):
        assert 1 <= low <= mean <= high <= 10  # inside the 1-10 scale, however few grades
    dashboard = {metric.label: metric.value for metric in at.metric}
    assert dashboard["Rows judged"] == "5" and dashboard["error"] == "1"
    assert "Position consistency" in dashboard  # swap is on by default
    assert any(subheader.value == "Rows to inspect" for subheader in at.subheader)
    charts = at.get("plotly_chart")
    assert len(charts) >= 5  # scores, verdicts, groups, criteria, leaderboard (+ inspector)
    assert settings_from(at.session_state).swap


def test_stop_keeps_the_judged_rows_and_resume_finishes(
    make_app: Callable[..., AppTest], app_env: Path
) -> None:
    at = make_app(PAGE)
    upload(at, rows(6))
    handle = model_cache.shared_judge(settings_from(at.session_state))
    with handle.lock:  # the job waits for the model at its first row
        at.button(key="run_batch").click().run()
        assert current_run(at).job.state == "running"
        at.button(key="stop_batch").click().run()
        assert current_run(at).job.state == "stopping"
    finish(at)
    snap = current_run(at).job.snapshot()
    assert snap.state == "stopped" and snap.done == 1 < snap.total
    assert "Stopped after 1 of 7 rows" in at.info[0].value
    assert len(table_with(at, "verdict")) == 1  # the live results table
    at.button(key="resume_batch").click().run()
    finish(at)
    snap = current_run(at).job.snapshot()
    assert snap.state == "done" and snap.done == 7
    assert [j.id for j in snap.judgments] == [f"r{n}" for n in range(6)] + ["bad"]


def test_a_batch_with_two_engines_gives_every_row_in_order(
    make_app: Callable[..., AppTest], app_env: Path
) -> None:
    """The sidebar's "Engines for a batch" (0 by default: one per usable core) runs a batch
    on that many engines; its rows still come in input order, each once."""
    at = make_app(PAGE)
    at.sidebar.number_input(key="workers").set_value(2).run()
    upload(at, rows(6))
    at.button(key="run_batch").click().run()
    assert current_run(at).job._engines == 2
    finish(at)
    snap = current_run(at).job.snapshot()
    assert snap.state == "done" and [j.id for j in snap.judgments] == [
        f"r{n}" for n in range(6)
    ] + ["bad"]


def test_an_engine_killed_mid_batch_leaves_the_page_up_and_resume_finishes(
    make_app: Callable[..., AppTest], app_env: Path
) -> None:
    """The model runs in an engine worker (models/backends/worker_backend.py): killing it
    mid-batch fails the batch with the signal named, keeps the rows judged, marks the run
    incomplete, and Resume starts a fresh worker that judges the rest."""
    at = make_app(PAGE)
    upload(at, rows(6))
    handle = model_cache.shared_judge(settings_from(at.session_state))
    engine = handle.judge.backend
    first_pid, starts = engine.pid, engine.engine.starts
    assert first_pid is not None and first_pid != os.getpid()
    at.button(key="run_batch").click().run()
    job = current_run(at).job
    deadline = time.monotonic() + WAIT_S
    while job.snapshot().done < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    with handle.lock:  # between two rows: the next row's first call meets the dead worker
        os.kill(first_pid, signal.SIGKILL)
    finish(at)
    snap = job.snapshot()
    assert snap.state == "failed" and job.engine_stopped and 2 <= snap.done < snap.total
    message = at.error[0].value
    assert "SIGKILL" in message and "The app is still running" in message, message
    assert f"the {snap.done} rows judged are kept" in message
    assert len(table_with(at, "verdict")) == snap.done  # the judged rows stay on the page
    [run] = RunStore().runs()
    assert (run.status, run.rows) == ("incomplete", snap.done)
    at.button(key="resume_batch").click().run()
    finish(at)
    snap = job.snapshot()
    assert snap.state == "done" and snap.done == 7
    assert [j.id for j in snap.judgments] == [f"r{n}" for n in range(6)] + ["bad"]
    assert engine.engine.starts == starts + 1 and engine.pid not in (None, first_pid)
    assert RunStore().runs()[0].status == "complete"


def test_two_tabs_judge_at_once_on_one_model(make_app: Callable[..., AppTest]) -> None:
    batch_tab = make_app(PAGE)
    upload(batch_tab, rows(3))
    batch_tab.button(key="run_batch").click().run()
    single_tab = make_app()
    single_tab.text_area(key="question").input("Which colour is the sky?")
    single_tab.text_area(key="answer_1").input("Blue.")
    single_tab.button(key="judge").click().run()
    assert not single_tab.exception
    judgment, *_ = single_tab.session_state["single.result"]
    assert judgment.status is Status.OK
    finish(batch_tab)
    run = current_run(batch_tab)
    assert run.job.snapshot().state == "done"
    assert run.handle is model_cache.shared_judge(settings_from(single_tab.session_state))


def other_rows(count: int) -> bytes:
    """Pairwise rows unlike `rows`: other questions, other ids, the better answer second."""
    lines = [
        {"id": f"s{n}", "question": f"What is {n} times two?", "answers": ["Nine.", str(2 * n)]}
        for n in range(count)
    ]
    return "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")


def verdicts(judgments) -> list[tuple[str, str | None, float | None]]:
    return [(j.id, j.winner, j.confidence) for j in judgments]


def test_two_sessions_judging_at_once_share_the_model_and_each_gets_its_own_results(
    make_app: Callable[..., AppTest],
) -> None:
    """Two sessions run batches side by side on one loaded model; each gets exactly its
    own rows, with the verdicts the same rows get when judged alone."""
    first, second = make_app(PAGE), make_app(PAGE)
    upload(first, rows(5))
    upload(second, other_rows(5))
    first.button(key="run_batch").click().run()
    second.button(key="run_batch").click().run()
    assert current_run(first).running and current_run(second).running  # at once
    finish(first)
    finish(second)
    together = [current_run(tab).job.snapshot().judgments for tab in (first, second)]
    assert current_run(first).handle is current_run(second).handle  # one loaded model
    assert [j.id for j in together[0]] == [f"r{n}" for n in range(5)] + ["bad"]
    assert [j.id for j in together[1]] == [f"s{n}" for n in range(5)]

    for data, mixed in ((rows(5), together[0]), (other_rows(5), together[1])):
        alone = make_app(PAGE)
        upload(alone, data)
        alone.button(key="run_batch").click().run()
        finish(alone)
        solo = current_run(alone).job.snapshot().judgments
        for (ident, winner, confidence), (solo_id, solo_winner, solo_confidence) in zip(
            verdicts(mixed), verdicts(solo), strict=True
        ):
            assert (ident, winner) == (solo_id, solo_winner)
            assert confidence == pytest.approx(solo_confidence, abs=1e-4)
