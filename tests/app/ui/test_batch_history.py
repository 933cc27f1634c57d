"""A batch judged on the Batch page (tiny real model) is kept in the run history and shows
on the Runs page; a history that cannot be opened gives one warning and the batch goes on."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.records import Status
from app.runs.store import HOME_ENV, RunStore
from tests.app.ui.conftest import FAST_CRITERIA
from tests.app.ui.test_batch_page import PAGE, current_run, finish, rows, upload


def test_a_batch_is_recorded_and_the_runs_page_shows_it(
    make_app: Callable[..., AppTest], app_env: Path
) -> None:
    data = rows(3)
    at = make_app(PAGE)
    upload(at, data)
    at.button(key="run_batch").click().run()
    finish(at)
    snap = current_run(at).job.snapshot()
    assert snap.state == "done"
    [run] = RunStore().runs()
    assert run.id == current_run(at).job.history_run_id
    assert (run.source, run.status, run.input_name, run.total, run.rows) == (
        "app", "complete", "batch.jsonl", 4, 4,
    )  # fmt: skip
    assert run.input_hash == hashlib.sha256(data).hexdigest()
    assert run.model == app_env.name and run.template == current_run(at).job.config.judge.template
    assert (run.protocol, run.scenario) == ("auto", "auto")
    assert run.counts == {"ok": 3, "unparsed": 0, "error": 1}
    assert run.settings["criteria"] == list(FAST_CRITERIA) and run.settings["swap"] is True
    assert "n_threads" not in run.settings  # how fast, not what: no part of the run key
    assert run.versions["model_file"]["name"] == app_env.name
    stored = RunStore().rows(run.id)
    assert [r.judgment for r in stored] == snap.judgments
    assert [r.item.id if r.item else None for r in stored] == ["r0", "r1", "r2", None]
    assert any(f"run `{run.id}`" in caption.value for caption in at.caption)

    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, at.exception
    table = next(t.value for t in at.dataframe if "input file" in t.value.columns)
    assert list(table["id"]) == [run.id]
    shown = {metric.label: metric.value for metric in at.metric}
    assert (shown["Rows judged"], shown["error"]) == ("4", "1")


def test_a_history_that_cannot_be_opened_warns_once_and_the_batch_goes_on(
    make_app: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(HOME_ENV, str(blocker))
    at = make_app(PAGE)
    upload(at, rows(2))
    at.button(key="run_batch").click().run()
    finish(at)
    job = current_run(at).job
    assert job.snapshot().state == "done"
    assert [j.status for j in job.snapshot().judgments] == [Status.OK] * 2 + [Status.ERROR]
    warnings = [w.value for w in at.warning if "run history" in w.value]
    assert len(warnings) == 1 and "Cannot open the run history" in warnings[0]
    assert "Done: 3 rows judged" in at.success[0].value
