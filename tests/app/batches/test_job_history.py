"""BatchJob with a run history: each row recorded as it is judged, the run finished when
done, marked incomplete on a stop or a failure and taken up again on a resume; a history
that fails never fails the batch."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from app import __version__
from app.batches.job import BatchJob, upload_run_start
from app.judging.service import JudgeService
from app.records import Status
from app.runs.store import RunStore
from tests.app.batches.test_job import CATALOG, CONFIG, Gate, finish, graded, rows
from tests.support.fake_backend import FakeBackend

DATA = b'{"id": "r1"}\n'


def start(total: int, data: bytes = DATA, **settings):
    return upload_run_start(
        data,
        "answers.jsonl",
        {"swap": True, **settings},
        model="fake-model",
        template=CONFIG.judge.template,
        protocol="auto",
        scenario="auto",
        total=total,
    )


def job(count: int, *replies, history_path: Path | None = None) -> BatchJob:
    service = JudgeService(FakeBackend(replies), "fake-model", CATALOG)
    return BatchJob(service, rows(count), CONFIG, history=start(count), history_path=history_path)


def test_the_run_key_hashes_the_bytes_and_the_settings() -> None:
    first = start(3)
    assert first == start(3)  # the same upload and settings: the same run, to go on in
    assert first.run_key != start(3, data=b"other").run_key
    assert first.run_key != start(3, swap=False).run_key
    assert first.input_hash == hashlib.sha256(DATA).hexdigest()  # as the CLI records a file
    assert (first.source, first.input_name, first.model, first.total) == (
        "app", "answers.jsonl", "fake-model", 3,
    )  # fmt: skip
    assert first.versions["pocketjudge"] == __version__
    assert first.settings == {"swap": True}


def test_each_row_is_recorded_as_it_is_judged_and_the_run_completes() -> None:
    gate = Gate(graded(8))
    batch = job(3, graded(5), gate, graded(6))
    batch.start()
    assert gate.entered.wait(10)  # row 2 is being judged: row 1 is in the history
    [running] = RunStore().runs()
    assert (running.status, running.rows, running.source) == ("running", 1, "app")
    assert running.id == batch.history_run_id
    gate.release.set()
    finish(batch)
    assert batch.state == "done" and batch.history_warning is None
    [run] = RunStore().runs()
    assert (run.status, run.rows, run.total, run.counts["ok"]) == ("complete", 3, 3, 3)
    assert (run.input_name, run.model, run.template) == (
        "answers.jsonl", "fake-model", CONFIG.judge.template,
    )  # fmt: skip
    stored = RunStore().rows(run.id)
    assert [r.judgment for r in stored] == batch.snapshot().judgments
    assert [r.item for r in stored] == batch.items  # with their input items


def test_a_stop_leaves_the_run_incomplete_and_a_resume_goes_on_in_it() -> None:
    gate = Gate(graded(8))
    batch = job(4, graded(3), gate, graded(5), graded(6))
    batch.start()
    assert gate.entered.wait(10)
    batch.stop()
    gate.release.set()
    finish(batch)
    [stopped] = RunStore().runs()
    assert (stopped.status, stopped.rows, stopped.counts["ok"]) == ("incomplete", 2, 2)
    batch.resume()
    finish(batch)
    [run] = RunStore().runs()
    assert run.id == stopped.id
    assert (run.status, run.rows) == ("complete", 4)
    assert [r.judgment.id for r in RunStore().rows(run.id)] == ["r1", "r2", "r3", "r4"]


def test_a_failed_job_leaves_the_run_incomplete() -> None:
    batch = job(3, graded(6), RuntimeError("GPU on fire"))
    batch.start()
    finish(batch)
    assert batch.state == "failed"
    [run] = RunStore().runs()
    assert (run.status, run.rows) == ("incomplete", 1)


def test_a_history_that_cannot_be_opened_does_not_stop_the_batch(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    batch = job(2, graded(5), graded(6), history_path=blocker / "runs.sqlite3")
    assert "cannot open the run history" in (batch.history_warning or "")
    batch.start()
    finish(batch)
    assert batch.state == "done" and batch.snapshot().ok == 2
    assert batch.history_run_id is None


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (sqlite3.OperationalError("disk I/O error"), "disk I/O error"),
        (RuntimeError("a bug"), "RuntimeError: a bug"),
    ],
)
def test_a_history_failing_mid_run_does_not_stop_the_batch(
    monkeypatch: pytest.MonkeyPatch, error: Exception, said: str
) -> None:
    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(RunStore, "add", broken)
    batch = job(3, graded(5), graded(6), graded(7))
    batch.start()
    finish(batch)
    assert batch.state == "done"
    assert [j.status for j in batch.snapshot().judgments] == [Status.OK] * 3
    assert said in (batch.history_warning or "")
    [run] = RunStore().runs()
    assert run.status == "incomplete" and run.rows == 0  # left as it was at the failure


def test_without_a_history_nothing_is_recorded() -> None:
    service = JudgeService(FakeBackend([graded(5)]), "fake-model", CATALOG)
    batch = BatchJob(service, rows(1), CONFIG)
    batch.start()
    finish(batch)
    assert batch.state == "done" and batch.history_run_id is None
    assert RunStore().runs() == []
