"""Judgments survive a JSONL round trip and flatten to predictable CSV columns."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from app.io.reader import InputRow, read_rows
from app.io.writer import (
    csv_columns,
    error_judgment,
    judgment_to_row,
    to_csv,
    write_jsonl,
)
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from models.foundation.errors import InputError


def scores(overall: float, **criteria: int) -> AnswerScores:
    return AnswerScores(criteria=criteria, overall=overall)


PAIRWISE = Judgment(
    id="p1",
    protocol=Protocol.PAIRWISE,
    status=Status.OK,
    winner="A",
    ranking=(1, 2),
    answers=(
        scores(8.5, accuracy=9, clarity=8),
        AnswerScores(
            criteria={"accuracy": 5, "clarity": 6},
            overall=5.3,
            expected_criteria={"accuracy": 5.2, "clarity": 6.1},
            expected_overall=5.4,
        ),
    ),
    feedback="A is right. B: naïve ✓",
    confidence=0.8,
    consistent=True,
    swapped=True,
    raw_output="{...}",
    scenario="code",
    criteria=("accuracy", "clarity"),
    model="tiny",
    template="default",
    latency_s=1.25,
    prompt_tokens=100,
    completion_tokens=20,
    line=3,
    metadata={"layout": "ours", "nested": {"k": [1, 2]}},
)
MULTI = Judgment(
    id="m1",
    protocol=Protocol.MULTI,
    status=Status.OK,
    ranking=(3, 1, 2),
    answers=(scores(6, accuracy=6), scores(4, accuracy=4), scores(9, accuracy=9, safety=10)),
    line=4,
)
UNPARSED = Judgment(
    id="u1", protocol=Protocol.SINGLE, status=Status.UNPARSED, raw_output="no json", line=5
)
ERROR = Judgment(id="e1", protocol=Protocol.SINGLE, status=Status.ERROR, error="bad", line=6)
ALL = [PAIRWISE, MULTI, UNPARSED, ERROR]


def read_back(text: str) -> list[Judgment]:
    return [Judgment.model_validate(json.loads(line)) for line in text.splitlines()]


def test_jsonl_round_trip_to_path(tmp_path: Path) -> None:
    path = tmp_path / "out" / "judgments.jsonl"
    assert write_jsonl(ALL, path) == len(ALL)
    text = path.read_text(encoding="utf-8")
    assert "naïve ✓" in text  # not \\u-escaped
    assert read_back(text) == ALL


def test_jsonl_append(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    write_jsonl(ALL[:2], path)
    write_jsonl(ALL[2:], path, append=True)
    assert read_back(path.read_text(encoding="utf-8")) == ALL


@pytest.mark.parametrize("kind", ["text", "binary"])
def test_jsonl_to_stream(kind: str) -> None:
    stream: io.StringIO | io.BytesIO = io.StringIO() if kind == "text" else io.BytesIO()
    write_jsonl(ALL, stream)
    assert not stream.closed
    value = stream.getvalue()
    text = value.decode("utf-8") if isinstance(value, bytes) else value
    assert read_back(text) == ALL


def test_jsonl_keeps_rows_written_before_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "partial.jsonl"

    def judgments():
        yield PAIRWISE
        yield MULTI
        raise RuntimeError("backend crashed")

    with pytest.raises(RuntimeError):
        write_jsonl(judgments(), path)
    assert read_back(path.read_text(encoding="utf-8")) == [PAIRWISE, MULTI]


def test_jsonl_escapes_a_lone_surrogate_instead_of_failing() -> None:
    judgment = ERROR.model_copy(update={"error": "bad byte \udcff"})
    stream = io.BytesIO()
    write_jsonl([judgment], stream)
    assert read_back(stream.getvalue().decode("utf-8")) == [judgment]


def test_judgment_to_row() -> None:
    row = judgment_to_row(PAIRWISE)
    assert row["id"] == "p1" and row["line"] == 3 and row["status"] == "ok"
    assert row["winner"] == "A" and row["ranking"] == "1,2"
    assert row["overall_1"] == 8.5 and row["overall_2"] == 5.3
    assert row["expected_overall_2"] == 5.4 and "expected_overall_1" not in row
    assert row["accuracy_1"] == 9 and row["clarity_2"] == 6
    assert row["confidence"] == 0.8 and row["consistent"] is True and row["swapped"] is True
    assert row["model"] == "tiny" and row["latency_s"] == 1.25
    assert judgment_to_row(ERROR)["error"] == "bad"


def test_csv_columns() -> None:
    assert csv_columns(ALL) == [
        "id", "line", "status", "error", "protocol", "scenario", "winner", "leaning",
        "uncertain", "ranking",
        "overall_1", "overall_2", "overall_3",
        "expected_overall_2",
        "accuracy_1", "accuracy_2", "accuracy_3",
        "clarity_1", "clarity_2", "clarity_3",
        "safety_1", "safety_2", "safety_3",
        "confidence", "consistent", "swapped", "truncated", "mode", "feedback",
        "feedback_note", "model", "template",
        "latency_s", "prompt_tokens", "completion_tokens", "raw_output",
    ]  # fmt: skip


def test_criterion_clashing_with_a_fixed_column_is_prefixed() -> None:
    judgment = Judgment(
        id="x",
        protocol=Protocol.SINGLE,
        status=Status.OK,
        answers=(AnswerScores(criteria={"overall": 5}, overall=5),),
    )
    assert "criterion_overall_1" in csv_columns([judgment])
    assert judgment_to_row(judgment)["criterion_overall_1"] == 5


@pytest.mark.parametrize("kind", ["path", "text", "binary"])
def test_csv_output(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "judgments.csv"
    if kind == "path":
        assert to_csv(ALL, path) == len(ALL)
        text = path.read_text(encoding="utf-8")
    else:
        stream: io.StringIO | io.BytesIO = io.StringIO() if kind == "text" else io.BytesIO()
        to_csv(iter(ALL), stream)
        value = stream.getvalue()
        text = value.decode("utf-8") if isinstance(value, bytes) else value
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [r["id"] for r in rows] == ["p1", "m1", "u1", "e1"]
    assert list(rows[0]) == csv_columns(ALL)
    assert rows[0]["feedback"] == PAIRWISE.feedback
    assert rows[1]["ranking"] == "3,1,2" and rows[1]["safety_3"] == "10"
    assert rows[1]["clarity_1"] == "" and rows[3]["overall_1"] == ""
    assert rows[3]["status"] == "error" and rows[3]["error"] == "bad"


def test_csv_of_nothing_is_a_header() -> None:
    stream = io.StringIO()
    assert to_csv([], stream) == 0
    assert stream.getvalue().strip().startswith("id,line,status,error")


def test_error_judgment_from_bad_rows() -> None:
    data = b'{"id": 9, "question": ""}\nnot json\n{"question": "Q", "answers": ["a"]}\n'
    rows = list(read_rows(data))
    judgments = [error_judgment(r, Protocol.SINGLE, model="tiny") for r in rows]
    assert len(judgments) == len(rows) == 3  # rows in == rows out
    first, second, third = judgments
    assert first.id == "9" and first.line == 1 and first.status is Status.ERROR
    assert first.error.startswith("line 1, field 'question'")
    assert first.metadata == {"error_field": "question"} and first.model == "tiny"
    assert second.id == "row-2" and "invalid JSON" in second.error and second.metadata == {}
    assert third.id == "row-3" and third.error == "the row could not be judged"


def test_error_judgment_with_an_explicit_message() -> None:
    item = JudgeItem(id="it", question="Q", answers=("a",), scenario="code")
    row = InputRow(line=7, item=item, error=None, raw={"id": "it"})
    judgment = error_judgment(row, Protocol.ANCHORED, error="backend failed", template="t")
    assert judgment.id == "it" and judgment.error == "backend failed"
    assert judgment.scenario == "code" and judgment.template == "t" and judgment.line == 7
    row = InputRow(line=2, item=None, error=InputError(2, "", "x"), raw=None)
    assert error_judgment(row, Protocol.MULTI).error == "line 2: x"


def test_a_heads_criteria_verdict_gets_a_column_only_where_there_is_one() -> None:
    judged = PAIRWISE.model_copy(update={"criteria_verdict": "B"})
    assert "criteria_verdict" not in csv_columns([PAIRWISE])
    columns = csv_columns([PAIRWISE, judged])
    assert columns.index("criteria_verdict") < columns.index("overall_1")
    assert judgment_to_row(judged)["criteria_verdict"] == "B"
    ranked = PAIRWISE.model_copy(update={"criteria_ranking": (2, 1)})
    assert judgment_to_row(ranked)["criteria_ranking"] == "2,1"
