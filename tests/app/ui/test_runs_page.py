"""The Runs page on a hand-made history: the table and its filters, one run opened again with
its dashboard and downloads, two runs compared against hand-computed figures."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from collections.abc import Callable
from datetime import date

import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from app.runs.store import RunStart, RunStore
from app.ui.run_tables import EMPTY_HINT
from app.ui.tables import csv_bytes, jsonl_bytes

PAGE = "app_pages/runs.py"
SAME_FILE = "ab" * 32
OTHER_FILE = "cd" * 32


def pair(line: int, winner: str, feedback: str, a: float | None = None, b: float | None = None):
    answers = ()
    if a is not None and b is not None:
        answers = tuple(
            AnswerScores(criteria={"accuracy": score}, overall=score) for score in (a, b)
        )
    return Judgment(
        id=f"r{line}", protocol=Protocol.PAIRWISE, status=Status.OK, winner=winner,
        answers=answers, feedback=feedback, line=line, scenario="code_generation",
        model="judge", swapped=True, consistent=line != 2,
    )  # fmt: skip


def item(line: int) -> JudgeItem:
    return JudgeItem(
        id=f"r{line}",
        question=f"Question {line}?",
        answers=("x", "y"),
        answer_models=("model-x", "model-y") if line % 2 else ("model-y", "model-z"),
    )


# Run A (older) and run B (newer) judged the same file. Common ok rows: r1-r4. Same winner
# on r1 and r3, another on r2 (B -> A) and r4 (tie -> B): 50 % agreement, 2 flips. Accuracy
# and overall changes (B - A) per answer: r1 +2, 0; r2 +3, -2; r3 0, 0: mean 3 / 6 = +0.5.
RUN_A = [
    pair(1, "A", "A1", 6, 4),
    pair(2, "B", "A2", 3, 7),
    pair(3, "A", "A3", 8, 2),
    pair(4, "tie", "A4"),
]
RUN_B = [
    pair(1, "A", "B1", 8, 4),
    pair(2, "A", "B2 says A", 6, 5),
    pair(3, "A", "B3", 8, 2),
    pair(4, "B", "B4 says B"),
    Judgment(id="r5", protocol=None, status=Status.ERROR, error="line 5: bad row", line=5),
]


def record(
    store: RunStore,
    key: str,
    started: str,
    judgments: list[Judgment],
    *,
    model: str,
    input_name: str,
    input_hash: str,
    source: str = "cli",
    complete: bool = True,
) -> str:
    run_id, _ = store.start(
        RunStart(
            run_key=key, source=source, input_name=input_name, input_hash=input_hash,
            model=model, template="pocketjudge", protocol="pairwise", scenario="auto",
            total=len(judgments) + (0 if complete else 3), settings={"swap": True},
            versions={"pocketjudge": "0.1.0"},
        )
    )  # fmt: skip
    items = {j.line: item(j.line) for j in judgments if j.status is Status.OK}
    if complete:
        store.finish(run_id, judgments, items)
    else:
        for judgment in judgments:
            store.add(run_id, judgment, items.get(judgment.line))
        store.stop(run_id)
    with sqlite3.connect(store.path) as db:  # a start of our choosing, for the date filter
        db.execute("UPDATE runs SET started = ? WHERE id = ?", (started, run_id))
    return run_id


@pytest.fixture
def history() -> dict[str, str]:
    """Three runs: A and B on the same file, and an incomplete one on another file."""
    store = RunStore()
    return {
        "a": record(store, "ka", "2026-01-10T09:00:00+00:00", RUN_A, model="judge-a",
                    input_name="answers.jsonl", input_hash=SAME_FILE),
        "b": record(store, "kb", "2026-02-20T10:30:00+00:00", RUN_B, model="judge-b",
                    input_name="answers.jsonl", input_hash=SAME_FILE, source="app"),
        "other": record(store, "ko", "2026-02-21T08:00:00+00:00", RUN_A[:2], model="judge-a",
                        input_name="other.jsonl", input_hash=OTHER_FILE, complete=False),
    }  # fmt: skip


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> dict[str, Callable[[], bytes]]:
    """file name -> what its download button makes when clicked (the page makes every file
    on demand, so each button holds a function)."""
    held: dict[str, Callable[[], bytes]] = {}
    original = MediaFileManager.add_deferred

    def add_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        held[file_name] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)
    return held


def tables_with(at: AppTest, *columns: str) -> list[pd.DataFrame]:
    """The tables on the page (both tabs, in order) that have these columns."""
    return [t.value for t in at.dataframe if set(columns) <= set(t.value.columns)]


def runs_table(at: AppTest) -> pd.DataFrame:
    return tables_with(at, "input file", "source")[0]


def shown_ids(at: AppTest) -> list[str]:
    return list(runs_table(at)["id"])


def metrics(at: AppTest) -> dict[str, str]:
    return {metric.label: metric.value for metric in at.metric}


def test_an_empty_history_says_how_to_fill_it(make_app: Callable[..., AppTest]) -> None:
    at = make_app(PAGE, fast=False)
    assert at.title[0].value == "Runs"
    assert [info.value for info in at.info] == [EMPTY_HINT]
    assert "python -m app judge" in EMPTY_HINT and "Batch page" in EMPTY_HINT
    assert not at.dataframe


def test_the_table_lists_every_run_and_the_filters_narrow_it(
    make_app: Callable[..., AppTest], history: dict[str, str]
) -> None:
    at = make_app(PAGE, fast=False)
    table = runs_table(at)
    assert list(table["id"]) == [history["other"], history["b"], history["a"]]  # newest first
    b = table.set_index("id").loc[history["b"]]
    assert (b["status"], b["source"], b["model"], b["input file"]) == (
        "complete", "app", "judge-b", "answers.jsonl",
    )  # fmt: skip
    assert (b["started"], b["scenario"], b["protocol"]) == (
        "2026-02-20 10:30:00",
        "auto",
        "pairwise",
    )
    assert (b["rows"], b["ok"], b["unparsed"], b["error"]) == (5, 4, 0, 1)
    other = table.set_index("id").loc[history["other"]]
    assert (other["status"], other["rows"], other["ok"]) == ("incomplete", 2, 2)

    at.multiselect(key="runs_model").set_value(["judge-a"]).run()
    assert shown_ids(at) == [history["other"], history["a"]]
    at.multiselect(key="runs_status").set_value(["complete"]).run()
    assert shown_ids(at) == [history["a"]]
    at.multiselect(key="runs_model").set_value([]).run()
    at.multiselect(key="runs_status").set_value([]).run()
    at.multiselect(key="runs_input_name").set_value(["other.jsonl"]).run()
    assert shown_ids(at) == [history["other"]]
    at.multiselect(key="runs_input_name").set_value([]).run()
    at.date_input(key="runs_days").set_value((date(2026, 2, 1), date(2026, 2, 20))).run()
    assert shown_ids(at) == [history["b"]]
    at.multiselect(key="runs_scenario").set_value(["auto"]).run()
    assert shown_ids(at) == [history["b"]]
    at.multiselect(key="runs_model").set_value(["judge-a"]).run()
    assert shown_ids(at) == []
    assert "No run matches these filters." in [info.value for info in at.info]
    assert not at.exception


def test_opening_a_run_shows_its_dashboard_and_its_files(
    make_app: Callable[..., AppTest],
    history: dict[str, str],
    downloads: dict[str, Callable[[], bytes]],
) -> None:
    at = make_app(PAGE, fast=False)
    at.selectbox(key="open_run").set_value(history["b"]).run()
    assert not at.exception, at.exception
    shown = metrics(at)
    assert (shown["Rows judged"], shown["ok"], shown["unparsed"], shown["error"]) == (
        "5", "4", "0", "1",
    )  # fmt: skip
    assert shown["Position consistency"] == "75%"  # with swap, r2's orders disagreed
    headers = [header.value for header in at.header]
    for header in ("Download", "Dashboard", "Model leaderboard"):
        assert header in headers
    board = tables_with(at, "Bradley-Terry strength")[0]  # the first tab's
    assert set(board["model"]) == {"model-x", "model-y", "model-z"}

    stored = RunStore().rows(history["b"])
    judgments = [row.judgment for row in stored]
    stem = "answers"
    assert downloads[f"{stem}.judged.jsonl"]() == jsonl_bytes(judgments)
    assert downloads[f"{stem}.judged.csv"]() == csv_bytes(judgments)
    lines = [json.loads(line) for line in downloads[f"{stem}.judged.jsonl"]().splitlines()]
    assert [(row["id"], row["status"]) for row in lines][-2:] == [("r4", "ok"), ("r5", "error")]
    rows = list(csv.DictReader(io.StringIO(downloads[f"{stem}.judged.csv"]().decode("utf-8-sig"))))
    assert [row["id"] for row in rows] == ["r1", "r2", "r3", "r4", "r5"]
    report = downloads[f"{stem}.{history['b']}.report.html"]().decode("utf-8")
    assert report.lstrip().lower().startswith("<!doctype html")
    assert f"Run {history['b']}" in report and "B4 says B" in report


def test_comparing_two_runs_shows_agreement_flips_and_deltas(
    make_app: Callable[..., AppTest],
    history: dict[str, str],
    downloads: dict[str, Callable[[], bytes]],
) -> None:
    at = make_app(PAGE, fast=False)
    at.selectbox(key="compare_a").set_value(history["a"])
    at.selectbox(key="compare_b").set_value(history["b"]).run()
    assert not at.exception, at.exception
    assert not at.warning  # the same input file
    shown = metrics(at)
    assert shown["Agreement"] == "50%"
    assert (shown["Common rows"], shown["Only in A"], shown["Only in B"]) == ("4", "0", "1")
    assert (shown["Flips"], shown["Overall change (B - A)"]) == ("2", "+0.5")
    [flips] = tables_with(at, "decision A", "feedback B")
    assert flips.to_dict("records") == [
        {"id": "r2", "question": "Question 2?", "decision A": "B", "decision B": "A",
         "feedback A": "A2", "feedback B": "B2 says A"},
        {"id": "r4", "question": "Question 4?", "decision A": "tie", "decision B": "B",
         "feedback A": "A4", "feedback B": "B4 says B"},
    ]  # fmt: skip
    [criteria] = tables_with(at, "criterion", "change (B - A)")
    assert criteria.to_dict("records") == [{"criterion": "Accuracy", "change (B - A)": 0.5}]
    [groups] = tables_with(at, "scenario group", "change (B - A)")
    assert list(groups["change (B - A)"]) == [0.5]
    charts = {chart.proto.id for chart in at.get("plotly_chart")}
    assert any("compare_criteria_chart" in ident for ident in charts)
    assert any("compare_groups_chart" in ident for ident in charts)
    _, board_a, board_b = tables_with(at, "Bradley-Terry strength")  # the run's, A's, B's
    for board in (board_a, board_b):
        assert set(board["model"]) == {"model-x", "model-y", "model-z"}
    report = downloads[f"compare.{history['a']}.{history['b']}.html"]().decode("utf-8")
    assert f"Run {history['a']} (A) vs run {history['b']} (B)" in report
    assert "B2 says A" in report


def test_runs_over_different_inputs_are_compared_with_a_warning(
    make_app: Callable[..., AppTest], history: dict[str, str]
) -> None:
    at = make_app(PAGE, fast=False)
    at.selectbox(key="compare_a").set_value(history["a"])
    at.selectbox(key="compare_b").set_value(history["other"]).run()
    assert "different input files" in at.warning[0].value
    shown = metrics(at)
    # "other" holds run A's first two rows: both agree, nothing flips
    assert (shown["Agreement"], shown["Common rows"], shown["Only in A"]) == ("100%", "2", "2")
    at.selectbox(key="compare_b").set_value(history["a"]).run()
    assert "Pick two different runs." in [info.value for info in at.info]


def test_a_run_on_a_later_day_shows_up_without_touching_the_dates(
    make_app: Callable[..., AppTest], history: dict[str, str]
) -> None:
    at = make_app(PAGE, fast=False)
    assert len(shown_ids(at)) == 3
    later = record(RunStore(), "kn", "2026-03-01T08:00:00+00:00", RUN_A[:1], model="judge-c",
                   input_name="new.jsonl", input_hash=OTHER_FILE)  # fmt: skip
    at.run()
    assert shown_ids(at) == [later, history["other"], history["b"], history["a"]]
    at.switch_page("app_pages/about.py").run()
    at.switch_page(PAGE).run()  # the date widget forgot its value: all days again
    assert len(shown_ids(at)) == 4
    assert not at.exception
