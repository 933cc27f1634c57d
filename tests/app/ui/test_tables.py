"""Preview and result tables, downloads, feedback text and the rubric editor's tables."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from app.catalog.rubrics import RUBRICS_DIR, builtin_rubrics, load_rubric
from app.io.reader import read_rows
from app.records import AnswerScores, Judgment, Protocol, Status
from app.ui.rubric_tables import blank_rubric, rubric_from_tables, rubric_tables
from app.ui.tables import (
    csv_bytes,
    duration_text,
    jsonl_bytes,
    overall_top,
    plain_feedback,
    preview_frame,
    progress_text,
    results_frame,
    rubric_scale,
    verdict_text,
)
from models.foundation.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
OK = Judgment(
    id="a",
    protocol=Protocol.PAIRWISE,
    status=Status.OK,
    winner="B",
    answers=(
        AnswerScores(criteria={"accuracy": 5.0}, overall=5.0),
        AnswerScores(criteria={"accuracy": 7.0}, overall=7.0),
    ),
    criteria=("accuracy",),
    confidence=0.8,
    line=1,
)
ERROR = Judgment(id="b", protocol=None, status=Status.ERROR, error="line 2: bad", line=2)


def test_preview_shows_each_bad_row_with_its_error() -> None:
    rows = list(read_rows(EXAMPLES / "bad_rows.jsonl"))
    frame = preview_frame(rows)
    assert list(frame["line"]) == [1, 2, 3, 4, 5, 6]
    assert list(frame["status"]) == ["ok", "error", "error", "error", "error", "ok"]
    errors = dict(zip(frame["line"], frame["error"]))
    assert "invalid JSON" in errors[2]
    assert "field 'question'" in errors[3]
    assert "answers[1]" in errors[4]
    assert "not valid UTF-8" in errors[5]
    assert frame.loc[0, "layout"] == "ours" and frame.loc[0, "answers"] == 2


def test_results_table_and_verdicts() -> None:
    frame = results_frame([OK, ERROR])
    assert list(frame["status"]) == ["ok", "error"]
    assert frame.loc[0, "verdict"] == "B" and frame.loc[0, "overall"] == "5 / 7"
    assert verdict_text(ERROR) is None
    ranked = OK.model_copy(update={"protocol": Protocol.MULTI, "winner": None, "ranking": (2, 1)})
    assert verdict_text(ranked) == "2 > 1"


def test_downloads_keep_one_row_per_judgment() -> None:
    lines = jsonl_bytes([OK, ERROR]).decode("utf-8").splitlines()
    assert [Judgment.model_validate(json.loads(line)) for line in lines] == [OK, ERROR]
    rows = list(csv.DictReader(io.StringIO(csv_bytes([OK, ERROR]).decode("utf-8"))))
    assert [(r["id"], r["status"]) for r in rows] == [("a", "ok"), ("b", "error")]
    assert rows[0]["overall_2"] == "7.0"


def test_feedback_images_are_not_fetched() -> None:
    assert plain_feedback("Good ![x](http://example.com/p.png) work") == "Good [image: x] work"
    assert plain_feedback(None) == ""


def test_progress_line() -> None:
    assert duration_text(None) == "?"
    assert duration_text(42) == "42 s"
    assert duration_text(185) == "3 min 05 s"
    assert duration_text(7800) == "2 h 10 min"
    line = progress_text(3, 10, 0.5, 14.0, "running")
    assert line == "3 / 10 rows · 0.50 rows/s · about 14 s left · running"
    assert progress_text(10, 10, 0.5, 0.0, "done") == "10 / 10 rows · 0.50 rows/s · done"


@pytest.mark.parametrize("name", sorted(builtin_rubrics()))
def test_rubric_tables_round_trip(name: str) -> None:
    rubric = load_rubric(RUBRICS_DIR / f"{name}.yaml")
    criteria, levels = rubric_tables(rubric)
    assert list(criteria["id"]) == [c.id for c in rubric.criteria]
    rebuilt = rubric_from_tables(
        rubric.id, rubric.name, rubric.description, rubric.aggregate, criteria, levels
    )
    assert rebuilt == rubric


def test_edited_tables_are_validated_like_a_file() -> None:
    rubric = blank_rubric()
    criteria, levels = rubric_tables(rubric)
    criteria.loc[0, "max"] = 6.0  # numeric editor cells come back as floats
    with pytest.raises(ConfigError, match=r"criteria\[0\]\.levels.*no level for score\(s\) 6"):
        rubric_from_tables("r", "R", "d", "weighted_mean", criteria, levels)
    levels.loc[len(levels)] = {"criterion": "quality", "scores": "6", "description": "Superb."}
    widened = rubric_from_tables("r", "R", "d", "weighted_mean", criteria, levels)
    assert widened.criteria[0].scale_max == 6 and widened.criteria[0].levels["6"] == "Superb."
    with pytest.raises(ConfigError, match="not a valid id"):
        rubric_from_tables("Bad Id", "R", "d", "weighted_mean", criteria, levels)
    levels.loc[len(levels)] = {"criterion": "missing", "scores": "1", "description": "x"}
    with pytest.raises(ValueError, match="not in the criteria table: missing"):
        rubric_from_tables("r", "R", "d", "weighted_mean", criteria, levels)


def test_scales_for_library_criteria_and_rubrics() -> None:
    vqa = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")  # points that add up
    by_rubric = OK.model_copy(update={"scenario": f"rubric:{vqa.id}"})
    assert (rubric_scale(None, OK), overall_top(None, OK)) == ((1, 10), 10)
    assert rubric_scale(vqa, by_rubric) == (0, 5)
    assert overall_top(vqa, by_rubric) == 15  # 2 + 3 + 5 + 2 + 3 points
    assert (rubric_scale(None, by_rubric), overall_top(None, by_rubric)) == (None, None)
    # a head's grade is on 1-10 beside the rubric's criteria, and the judgment says so
    by_head = by_rubric.model_copy(update={"overall_scale": (1, 10)})
    assert overall_top(vqa, by_head) == 10 and rubric_scale(vqa, by_head) == (0, 5)
