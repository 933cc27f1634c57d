"""BatchJob: a background batch that is started, watched, stopped and resumed.

Replies that wait on an Event (a `Gate`) hold the worker inside a chosen row,
so a stop lands mid-run deterministically.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence

import pytest

from app.batches.job import BatchJob
from app.batches.run import BACKEND_STREAK
from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.scenarios import load_catalog
from app.io.reader import InputRow, read_rows
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.records import JudgeItem, Status
from models.backends.base import Message
from models.foundation.errors import BackendError
from tests.support.fake_backend import FakeBackend

CATALOG = load_catalog()
CONFIG = JudgeConfig(choice=CriteriaChoice(criteria=("accuracy", "clarity")))
TIMEOUT = 10.0


def graded(score: int) -> str:
    """A single-answer reply giving `score` on both criteria (so the overall is `score`)."""
    scores = {"accuracy": score, "clarity": score}
    return json.dumps({"scores": scores, "overall": score, "feedback": "Fine."})


class Gate:
    """A reply that signals `entered`, then waits for `release` before answering."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, messages: Sequence[Message]) -> str:
        self.entered.set()
        assert self.release.wait(TIMEOUT), "the test never released the gate"
        return self.text


def rows(count: int) -> list[InputRow]:
    return [
        InputRow(
            line=n,
            item=JudgeItem(id=f"r{n}", question=f"Question {n}?", answers=(f"Answer {n}.",)),
            error=None,
            raw=None,
        )
        for n in range(1, count + 1)
    ]


def job(row_list: Sequence[InputRow], *replies, lock=None) -> tuple[BatchJob, FakeBackend]:
    backend = FakeBackend(replies)
    service = JudgeService(backend, "fake-model", CATALOG)
    return BatchJob(service, row_list, CONFIG, lock=lock), backend


def finish(batch: BatchJob) -> None:
    assert batch.wait(TIMEOUT), "the batch thread did not end"


def questions(backend: FakeBackend) -> list[str]:
    return [
        next(q for q in prompt.split("\n") if q.startswith("Question "))
        for prompt in backend.prompts
    ]


# --------------------------------------------------------------------------- runs


def test_idle_job_before_start() -> None:
    batch, backend = job(rows(2), graded(5), graded(6))
    snap = batch.snapshot()
    assert batch.state == snap.state == "idle"
    assert (snap.done, snap.total, snap.judgments) == (0, 2, [])
    assert (snap.rate, snap.eta_s, snap.elapsed_s) == (0.0, None, 0.0)
    batch.stop()  # nothing to stop
    assert batch.state == "idle"
    assert batch.wait(0) is True
    assert backend.calls == []


def test_start_judges_every_row_in_order_then_done() -> None:
    batch, backend = job(rows(4), graded(9), graded(2), graded(7), graded(4))
    batch.start()
    finish(batch)
    snap = batch.snapshot()
    assert snap.state == batch.state == "done"
    assert (snap.done, snap.total, snap.ok, snap.unparsed, snap.errors) == (4, 4, 4, 0, 0)
    assert [j.id for j in snap.judgments] == ["r1", "r2", "r3", "r4"]
    assert [j.line for j in snap.judgments] == [1, 2, 3, 4]
    assert [j.answers[0].overall for j in snap.judgments] == [9.0, 2.0, 7.0, 4.0]
    assert all(j.model == "fake-model" for j in snap.judgments)
    assert questions(backend) == [f"Question {n}?" for n in range(1, 5)]
    assert snap.fraction == 1.0
    assert batch.error is None
    assert [item.id for item in batch.items] == ["r1", "r2", "r3", "r4"]

    batch.start()  # done: no-op
    batch.resume()
    finish(batch)
    assert len(backend.calls) == 4
    assert batch.state == "done"


def test_empty_batch_is_done_at_once() -> None:
    batch, backend = job([])
    batch.start()
    finish(batch)
    snap = batch.snapshot()
    assert snap.state == "done"
    assert (snap.done, snap.total, snap.fraction, snap.eta_s) == (0, 0, 1.0, 0.0)
    assert backend.calls == []


def test_stop_mid_run_keeps_judged_rows_and_resume_judges_each_row_once() -> None:
    gate = Gate(graded(8))
    batch, backend = job(rows(5), graded(3), gate, graded(5), graded(6), graded(7))
    batch.start()
    assert gate.entered.wait(TIMEOUT)
    batch.stop()
    assert batch.state == "stopping"
    assert batch.snapshot().done == 1  # row 2 is in progress
    gate.release.set()
    finish(batch)

    stopped = batch.snapshot()
    assert stopped.state == "stopped"
    assert [j.id for j in stopped.judgments] == ["r1", "r2"]  # the row in progress is kept
    assert [j.answers[0].overall for j in stopped.judgments] == [3.0, 8.0]
    assert len(backend.calls) == 2
    batch.stop()  # already stopped: no-op
    assert batch.state == "stopped"

    batch.resume()
    finish(batch)
    done = batch.snapshot()
    assert done.state == "done"
    assert [j.id for j in done.judgments] == ["r1", "r2", "r3", "r4", "r5"]
    assert [j.answers[0].overall for j in done.judgments] == [3.0, 8.0, 5.0, 6.0, 7.0]
    assert all(j.status is Status.OK for j in done.judgments)
    assert len(backend.calls) == 5  # no row judged twice
    assert questions(backend) == [f"Question {n}?" for n in range(1, 6)]
    assert backend.replies == type(backend.replies)()  # every reply used exactly once


def test_resume_while_stopping_cancels_the_stop() -> None:
    gate = Gate(graded(8))
    batch, backend = job(rows(3), gate, graded(5), graded(6))
    batch.start()
    assert gate.entered.wait(TIMEOUT)
    batch.stop()
    batch.resume()
    assert batch.state == "running"
    gate.release.set()
    finish(batch)
    assert batch.state == "done"
    assert batch.snapshot().done == 3
    assert len(backend.calls) == 3


def test_unreadable_rows_become_error_judgments() -> None:
    data = b"\n".join(
        [
            b'{"id": "a", "question": "Question 1?", "answers": ["x"]}',
            b"not json",
            b'{"id": "c", "question": "Question 3?", "answers": [""]}',
            b'{"id": "d", "question": "Question 4?", "answers": ["y"]}',
        ]
    )
    batch, backend = job(list(read_rows(data, name="rows.jsonl")), graded(8), graded(4))
    batch.start()
    finish(batch)
    snap = batch.snapshot()
    assert snap.state == "done"
    assert [j.status for j in snap.judgments] == [
        Status.OK,
        Status.ERROR,
        Status.ERROR,
        Status.OK,
    ]
    assert [j.line for j in snap.judgments] == [1, 2, 3, 4]
    assert "invalid JSON" in snap.judgments[1].error
    assert snap.judgments[2].id == "c" and "answers[0]" in snap.judgments[2].error
    assert snap.judgments[1].model == "fake-model"
    assert snap.judgments[1].template == CONFIG.judge.template
    assert (snap.ok, snap.errors) == (2, 2)
    assert len(backend.calls) == 2


def test_backend_failure_is_an_error_row_not_a_failed_job() -> None:
    batch, _ = job(rows(2), BackendError("model crashed"), graded(5))
    batch.start()
    finish(batch)
    snap = batch.snapshot()
    assert snap.state == "done"
    assert snap.judgments[0].status is Status.ERROR
    assert "model crashed" in snap.judgments[0].error
    assert snap.errors == 1


def test_a_backend_down_for_several_rows_stops_the_job_and_resume_judges_them() -> None:
    """The app's batch goes through the CLI's loop (app.batches.run.write_batch): rows the
    backend fails on in a row are held back, and after BACKEND_STREAK of them the job
    stops, saying why, without keeping them as error rows; resume judges them."""
    down = [BackendError("connection refused")] * BACKEND_STREAK
    batch, backend = job(rows(5), graded(6), *down)
    batch.start()
    finish(batch)
    snap = batch.snapshot()
    assert snap.state == "failed" and f"{BACKEND_STREAK} rows in a row" in snap.error
    assert "connection refused" in snap.error and [j.id for j in snap.judgments] == ["r1"]

    backend.queue(*(graded(score) for score in (7, 8, 9, 10)))
    batch.resume()
    finish(batch)
    judged = batch.snapshot().judgments
    assert batch.state == "done" and [j.status for j in judged] == [Status.OK] * 5
    assert [j.answers[0].overall for j in judged] == [6.0, 7.0, 8.0, 9.0, 10.0]


def test_unexpected_exception_fails_the_job_and_resume_retries_that_row() -> None:
    batch, backend = job(rows(3), graded(6), RuntimeError("GPU on fire"))
    batch.start()
    finish(batch)
    assert batch.state == "failed"
    assert batch.error is not None and "GPU on fire" in batch.error
    snap = batch.snapshot()
    assert snap.state == "failed" and snap.error == batch.error
    assert [j.id for j in snap.judgments] == ["r1"]  # row 2 stays unjudged

    backend.queue(graded(7), graded(8))
    batch.resume()
    finish(batch)
    assert batch.state == "done"
    assert batch.error is None
    assert [j.answers[0].overall for j in batch.snapshot().judgments] == [6.0, 7.0, 8.0]
    assert len(backend.calls) == 4  # row 2 was tried twice: once failing, once judged


# --------------------------------------------------------------------------- watching


def test_snapshot_rate_and_eta() -> None:
    def slow(text: str):
        def answer(messages: Sequence[Message]) -> str:
            time.sleep(0.05)
            return text

        return answer

    gate = Gate(graded(5))
    batch, _ = job(rows(5), slow(graded(3)), slow(graded(4)), gate, graded(6), graded(7))
    batch.start()
    assert gate.entered.wait(TIMEOUT)
    running = batch.snapshot()
    assert running.state == "running"
    assert running.done == 2
    assert running.elapsed_s >= 0.1
    assert 0 < running.rate <= 2 / 0.1
    assert running.rate == pytest.approx(running.done / running.elapsed_s)
    assert running.eta_s == pytest.approx(3 / running.rate)

    batch.stop()
    gate.release.set()
    finish(batch)
    first = batch.snapshot()
    time.sleep(0.05)
    second = batch.snapshot()
    assert first.state == "stopped"
    assert second.elapsed_s == first.elapsed_s  # the clock stands still while stopped
    assert second.rate == first.rate == pytest.approx(3 / first.elapsed_s)
    assert second.eta_s == pytest.approx(2 / first.rate)

    batch.resume()
    finish(batch)
    done = batch.snapshot()
    assert done.elapsed_s >= first.elapsed_s
    assert done.rate == pytest.approx(5 / done.elapsed_s)
    assert done.eta_s == 0.0


def test_model_lock_is_held_during_model_calls_only() -> None:
    lock = threading.Lock()
    held: list[bool] = []

    def check(score: int):
        def answer(messages: Sequence[Message]) -> str:
            held.append(lock.locked())
            return graded(score)

        return answer

    batch, backend = job(rows(3), check(4), check(5), check(6), lock=lock)
    with lock:  # another page is using the model: the job waits for it
        batch.start()
        time.sleep(0.1)
        assert backend.calls == []
        assert batch.snapshot().done == 0
    finish(batch)
    assert batch.state == "done"
    assert held == [True, True, True]
    assert lock.acquire(blocking=False)  # released at the end
    lock.release()


def test_unreadable_row_does_not_wait_for_the_model_lock() -> None:
    lock = threading.Lock()
    bad = InputRow(line=1, item=None, error=None, raw=None)
    batch, _ = job([bad], lock=lock)
    with lock:
        batch.start()
        finish(batch)
    assert batch.snapshot().errors == 1
