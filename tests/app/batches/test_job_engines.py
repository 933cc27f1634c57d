"""The app's batch with two engines (app/batches/job.py, app/batches/engine_pool.py) on the
tiny real model: rows in order, as one engine gives them; Stop stops every engine, the
engines the run opened are closed, and Resume judges each remaining row once."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from app.api import load_judge
from app.batches.job import BatchJob
from app.io.reader import InputRow
from app.records import JudgeItem
from tests.support.processes import engine_workers

ROWS = 24


def rows(count: int = ROWS) -> list[InputRow]:
    return [
        InputRow(
            line=n,
            item=JudgeItem(
                id=f"r{n}", question=f"What is {n} + {n}?", answers=(str(2 * n), str(n))
            ),
            error=None,
            raw=None,
        )
        for n in range(1, count + 1)
    ]


@pytest.fixture(scope="module")
def judge(tiny_gguf_model: Path):
    with load_judge(str(tiny_gguf_model), threads=1, isolated=True) as opened:
        yield opened


def finished(job: BatchJob, timeout: float = 300) -> None:
    assert job.wait(timeout), job.snapshot()


def test_two_engines_give_the_rows_in_order_as_one_does(judge, tiny_gguf_model: Path):
    # engines other tests' judges hold open (the app's cached judge) are not this run's
    before = len(engine_workers(os.getpid(), tiny_gguf_model.name))
    one = BatchJob(judge, rows(12), judge.config)
    one.start()
    finished(one)
    two = BatchJob(judge, rows(12), judge.config, engines=2)
    two.start()
    finished(two)
    assert two.state == "done"
    judged = two.snapshot().judgments
    assert [j.line for j in judged] == list(range(1, 13))
    assert [(j.id, j.winner, j.confidence) for j in judged] == [
        (j.id, j.winner, j.confidence) for j in one.snapshot().judgments
    ]
    # the engine the run opened is closed with it; the shared one stays
    assert len(engine_workers(os.getpid(), tiny_gguf_model.name)) == before


def test_stop_stops_every_engine_and_resume_judges_each_row_once(judge, tiny_gguf_model: Path):
    before = len(engine_workers(os.getpid(), tiny_gguf_model.name))
    job = BatchJob(judge, rows(), judge.config, engines=2)
    job.start()
    deadline = time.monotonic() + 300
    while len(job.snapshot().judgments) < 3:
        assert time.monotonic() < deadline and job.state == "running"
        time.sleep(0.01)
    assert len(engine_workers(os.getpid(), tiny_gguf_model.name)) == before + 1
    job.stop()
    finished(job)
    assert job.state == "stopped"
    kept = len(job.snapshot().judgments)
    assert 3 <= kept < ROWS
    time.sleep(0.5)  # nothing more is judged once stopped, by either engine
    assert len(job.snapshot().judgments) == kept
    assert len(engine_workers(os.getpid(), tiny_gguf_model.name)) == before
    job.resume()
    finished(job)
    assert job.state == "done"
    assert [j.line for j in job.snapshot().judgments] == list(range(1, ROWS + 1))
