"""Every accepted row layout maps to the right JudgeItem; bad rows name their field."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from app.catalog.rubrics import Rubric, builtin_rubrics, load_rubric
from app.io.layouts import LAYOUTS, UNKNOWN, detect_layout, row_id, to_item
from app.records import JudgeItem, Label
from models.foundation.datafiles import read_mapping
from models.foundation.errors import InputError
from tests.support.needs import SHARED_DATA, missing

AUTOJ_PROMPT = (
    "Write critiques for a submitted response on a given user's query, and grade the response:\n"
    "  \n[BEGIN DATA]\n***\n[Query]: Name a prime number.\n***\n[Response]: 7 is prime.\n"
    "***\nIt really is.\n***\n[END DATA]\n\nWrite critiques for this response."
)

# A row's own rubric, written as in a rubric file (scenarios/rubrics/*.yaml)
ROW_RUBRIC: dict[str, Any] = {
    "id": "tone",
    "name": "Tone",
    "description": "How the answer sounds.",
    "criteria": [
        {
            "id": "politeness",
            "name": "Politeness",
            "description": "Is it polite?",
            "scale": {"min": 1, "max": 4},
            "levels": {1: "rude", "2-3": "neutral", "4": "warm"},
        }
    ],
}


def _with_rubric_criterion(**changes: Any) -> dict[str, Any]:
    criterion = {**ROW_RUBRIC["criteria"][0], **changes}
    return {"question": "q", "answers": ["a"], "rubric": {**ROW_RUBRIC, "criteria": [criterion]}}


# (case, row, layout, expected JudgeItem fields; metadata lists only what must be in it)
GOOD_ROWS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    (
        "ours-pairwise",
        {
            "id": 7,
            "question": "Q?",
            "answers": ["a", "b"],
            "reference": "r",
            "scenario": "others",
            "criteria": ["accuracy", "clarity"],
            "answer_models": ["m1", None],
            "label": {"winner": "b"},
            "extra": [1],
        },
        "ours",
        {
            "id": "7",
            "question": "Q?",
            "answers": ("a", "b"),
            "reference": "r",
            "scenario": "others",
            "criteria": ("accuracy", "clarity"),
            "answer_models": ("m1", None),
            "label": Label(winner="B"),
            "metadata": {"extra": [1]},
        },
    ),
    (
        "ours-score-label",
        {"question": "Q", "answers": ["a"], "label": {"score": 4, "scale_max": 5}},
        "ours",
        {"id": "row-3", "answers": ("a",), "label": Label(score=4, scale_max=5)},
    ),
    (
        "ours-row-rubric",
        {"question": "Q", "answers": ["a"], "rubric": ROW_RUBRIC},
        "ours",
        {"rubric": Rubric.model_validate(ROW_RUBRIC), "metadata": {}},
    ),
    (
        "ours-nested-metadata",
        {"question": "Q", "answers": ["a"], "metadata": {"source": "x"}, "top": 1},
        "ours",
        {"metadata": {"source": "x", "top": 1}},
    ),
    (
        "alpaca-single",
        {"instruction": "Translate", "input": "bonjour", "output": "hello"},
        "alpaca",
        {"question": "Translate\n\nbonjour", "answers": ("hello",)},
    ),
    (
        "alpaca-blank-input",
        {"instruction": "Say hi", "input": "  ", "output": "hi", "reference": "hello"},
        "alpaca",
        {"question": "Say hi", "answers": ("hi",), "reference": "hello"},
    ),
    *[
        (
            f"alpaca-{key}",
            {"instruction": "I", "output": "one", key: "two"},
            "alpaca",
            {"question": "I", "answers": ("one", "two")},
        )
        for key in ("output_2", "output2", "output_b")
    ],
    (
        "judgelm",
        {
            "question_id": 12,
            "question_body": "Q",
            "answer1_body": "a1",
            "answer2_body": "a2",
            "answer1_model_id": "alpaca",
            "answer2_model_id": "vicuna",
            "reference": {"text": "ref"},
            "score": [6, 9],
        },
        "judgelm",
        {
            "id": "12",
            "question": "Q",
            "answers": ("a1", "a2"),
            "reference": "ref",
            "answer_models": ("alpaca", "vicuna"),
            "label": Label(winner="B"),
            "metadata": {"score": [6, 9]},
        },
    ),
    (
        "judgelm-tie-string-reference",
        {
            "question_body": "Q",
            "answer1_body": "a",
            "answer2_body": "b",
            "reference": "r",
            "score": [7.0, 7.0],
        },
        "judgelm",
        {"label": Label(winner="tie"), "reference": "r", "answer_models": None},
    ),
    (
        "judgelm-three-answers",
        {
            "question_body": "Q",
            "answer1_body": "a",
            "answer2_body": "b",
            "answer3_body": "c",
            "score": [1, 2, 3],
        },
        "judgelm",
        {"answers": ("a", "b", "c"), "label": None},
    ),
    (
        "pandalm-majority",
        {
            "instruction": "I",
            "input": "x",
            "response1": "r1",
            "response2": "r2",
            "annotator1": 2,
            "annotator2": 2,
            "annotator3": 1,
        },
        "pandalm",
        {
            "question": "I\n\nx",
            "answers": ("r1", "r2"),
            "label": Label(winner="B"),
            "metadata": {"annotator1": 2, "annotator3": 1},
        },
    ),
    (
        "pandalm-no-majority",
        {
            "instruction": "I",
            "input": "",
            "response1": "r1",
            "response2": "r2",
            "annotator1": 0,
            "annotator2": 1,
            "annotator3": 2,
        },
        "pandalm",
        {"question": "I", "label": Label(winner="tie")},
    ),
    (
        "pandalm-first-wins",
        {
            "instruction": "I",
            "response1": "r1",
            "response2": "r2",
            "annotator1": 1,
            "annotator2": "1",
            "annotator3": 0,
        },
        "pandalm",
        {"label": Label(winner="A")},
    ),
    *[
        (
            f"autoj-pairwise-label-{code}",
            {
                "id": "autoj-1",
                "scenario": "default",
                "prompt": "P",
                "response 1": "one",
                "response 2": "two",
                "label": code,
            },
            "autoj_pairwise",
            {
                "id": "autoj-1",
                "question": "P",
                "answers": ("one", "two"),
                "scenario": "default",
                "label": Label(winner=winner),
            },
        )
        for code, winner in ((0, "A"), (1, "B"), (2, "tie"))
    ],
    (
        "autoj-single",
        {
            "usrmsg": AUTOJ_PROMPT,
            "target_output": "Fine.\n\nRating: [[8]]",
            "pred_score": 8.0,
            "scenario": "default",
            "source_dataset": "x",
        },
        "autoj_single",
        {
            "question": "Name a prime number.",
            "answers": ("7 is prime.\n***\nIt really is.",),
            "scenario": "default",
            "label": Label(score=8.0, scale_max=10),
            "metadata": {"target_output": "Fine.\n\nRating: [[8]]", "source_dataset": "x"},
        },
    ),
    (
        "autoj-single-rating-from-critique",
        {"usrmsg": AUTOJ_PROMPT, "target_output": "Meh.\nRating: [[3]]"},
        "autoj_single",
        {"label": Label(score=3, scale_max=10)},
    ),
    (
        "llmbar",
        {"input": "Do X", "output_1": "x", "output_2": "y", "label": 1},
        "llmbar",
        {"question": "Do X", "answers": ("x", "y"), "label": Label(winner="A")},
    ),
    (
        "llmbar-string-label",
        {"input": "Do X", "output_1": "x", "output_2": "y", "label": "2"},
        "llmbar",
        {"label": Label(winner="B")},
    ),
    (
        "pointwise-question",
        {"question": "Q", "response": "R", "reference": "ref", "score": 4, "scale_max": 5},
        "pointwise",
        {
            "question": "Q",
            "answers": ("R",),
            "reference": "ref",
            "label": Label(score=4, scale_max=5),
        },
    ),
    (
        "pointwise-instruction-scale-range",
        {"instruction": "I", "response": "R", "score": "3", "scale": "1-7"},
        "pointwise",
        {"question": "I", "label": Label(score=3, scale_max=7)},
    ),
    (
        "pointwise-scale-list-no-score",
        {"question": "Q", "response": "R", "scale": [1, 5]},
        "pointwise",
        {"label": None, "metadata": {"scale": [1, 5]}},
    ),
]


@pytest.mark.parametrize(
    ("row", "layout", "expected"),
    [case[1:] for case in GOOD_ROWS],
    ids=[case[0] for case in GOOD_ROWS],
)
def test_layout_maps_to_item(row: dict[str, Any], layout: str, expected: dict[str, Any]) -> None:
    assert detect_layout(row) == layout
    item = to_item(row, 3)
    assert isinstance(item, JudgeItem)
    assert item.metadata["layout"] == layout
    for field, value in expected.items():
        if field == "metadata":
            assert value.items() <= item.metadata.items()
        else:
            assert getattr(item, field) == value, field


def test_consumed_fields_leave_metadata() -> None:
    row = {"id": "x", "prompt": "P", "response 1": "a", "response 2": "b", "label": 0, "note": "n"}
    assert to_item(row, 1).metadata == {"note": "n", "layout": "autoj_pairwise"}


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"id": 3, "question": "q"}, "3"),
        ({"question_id": 4.0}, "4"),
        ({"id": " a "}, "a"),
        ({"id": ""}, "row-9"),
        ({"id": [1]}, "row-9"),
        (None, "row-9"),
    ],
)
def test_row_id(row: dict[str, Any] | None, expected: str) -> None:
    assert row_id(row, 9) == expected


# (case, row, field the error names, a fragment of its message)
BAD_ROWS: list[tuple[str, Any, str, str]] = [
    ("not-an-object", [1, 2], "", "expected a JSON object, got array"),
    ("unknown-layout", {"foo": 1}, "", "unrecognised row layout (keys: foo)"),
    ("ours-missing-question", {"answers": ["a"]}, "question", "add a non-empty 'question'"),
    ("ours-blank-question", {"question": " ", "answers": ["a"]}, "question", "is empty"),
    (
        "ours-question-int",
        {"question": 5, "answers": ["a"]},
        "question",
        "expected a string, got int",
    ),
    ("ours-missing-answers", {"question": "q"}, "answers", "add an 'answers' field"),
    ("ours-answers-int", {"question": "q", "answers": 3}, "answers", "got int"),
    ("ours-answers-empty-list", {"question": "q", "answers": []}, "answers", "got 0"),
    ("ours-seven-answers", {"question": "q", "answers": ["a"] * 7}, "answers", "got 7"),
    ("ours-empty-answer", {"question": "q", "answers": ["a", " "]}, "answers[1]", "empty"),
    ("ours-null-answer", {"question": "q", "answers": ["a", None]}, "answers[1]", "add"),
    ("ours-answer-int", {"question": "q", "answers": [1]}, "answers[0]", "got int"),
    (
        "ours-bad-winner",
        {"question": "q", "answers": ["a", "b"], "label": {"winner": "C"}},
        "label.winner",
        "winner",
    ),
    (
        "ours-models-mismatch",
        {"question": "q", "answers": ["a", "b"], "answer_models": ["m"]},
        "answer_models",
        "one model per answer",
    ),
    (
        "ours-criteria-string",
        {"question": "q", "answers": ["a"], "criteria": "acc"},
        "criteria",
        "list",
    ),
    ("ours-scenario-int", {"question": "q", "answers": ["a"], "scenario": 1}, "scenario", "int"),
    ("ours-id-list", {"id": [1], "question": "q", "answers": ["a"]}, "id", "got array"),
    (
        "ours-reference-list",
        {"question": "q", "answers": ["a"], "reference": [1]},
        "reference",
        "expected a string",
    ),
    (
        "ours-rubric-string",
        {"question": "q", "answers": ["a"], "rubric": "tone"},
        "rubric",
        "written like a rubric file",
    ),
    (
        "ours-rubric-missing-field",
        {"question": "q", "answers": ["a"], "rubric": {"id": "tone", "criteria": []}},
        "rubric.name",
        "required field is missing",
    ),
    (
        "ours-rubric-unknown-field",
        {"question": "q", "answers": ["a"], "rubric": {**ROW_RUBRIC, "colour": "red"}},
        "rubric.colour",
        "unknown field 'colour'; allowed: id, name",
    ),
    (
        "ours-rubric-levels-gap",
        _with_rubric_criterion(levels={1: "rude", "4": "warm"}),
        "rubric.criteria[0].levels",
        "no level for score(s) 2, 3",
    ),
    (
        "ours-rubric-bad-scale",
        _with_rubric_criterion(scale={"min": 4, "max": 1}),
        "rubric.criteria[0].scale",
        "must be below max",
    ),
    (
        "ours-rubric-bad-id",
        {"question": "q", "answers": ["a"], "rubric": {**ROW_RUBRIC, "id": "Tone!"}},
        "rubric.id",
        "not a valid id",
    ),
    ("alpaca-missing-output", {"instruction": "i", "input": ""}, "output", "add a non-empty"),
    ("alpaca-empty-second", {"instruction": "i", "output": "a", "output2": ""}, "output2", "empty"),
    ("judgelm-missing-answer2", {"question_body": "q", "answer1_body": "a"}, "answer2_body", "add"),
    (
        "judgelm-bad-score",
        {"question_body": "q", "answer1_body": "a", "answer2_body": "b", "score": "9 vs 6"},
        "score",
        "2 numbers",
    ),
    (
        "pandalm-bad-vote",
        {"instruction": "i", "response1": "a", "response2": "b", "annotator2": 3},
        "annotator2",
        "expected 0 (tie), 1 or 2",
    ),
    (
        "autoj-empty-response-2",
        {"prompt": "p", "response 1": "a", "response 2": ""},
        "response 2",
        "empty",
    ),
    (
        "autoj-label-3",
        {"prompt": "p", "response 1": "a", "response 2": "b", "label": 3},
        "label",
        "expected 0",
    ),
    ("autoj-single-no-sections", {"usrmsg": "just text"}, "usrmsg", "[Query]:"),
    (
        "autoj-single-empty-response",
        {"usrmsg": "[Query]: q\n***\n[Response]: \n***\n[END DATA]"},
        "usrmsg",
        "'[Response]:' section is empty",
    ),
    (
        "autoj-single-bad-score",
        {"usrmsg": AUTOJ_PROMPT, "pred_score": "high"},
        "pred_score",
        "expected a number",
    ),
    (
        "llmbar-label-0",
        {"input": "i", "output_1": "a", "output_2": "b", "label": 0},
        "label",
        "expected 1 or 2",
    ),
    (
        "llmbar-missing-input",
        {"output_1": "a", "output_2": "b"},
        "input",
        "add a non-empty 'input'",
    ),
    ("pointwise-empty-response", {"question": "q", "response": ""}, "response", "empty"),
    ("pointwise-bad-score", {"question": "q", "response": "r", "score": [1]}, "score", "number"),
    (
        "pointwise-bad-scale",
        {"question": "q", "response": "r", "score": 1, "scale": "big"},
        "scale",
        "top of the scale",
    ),
]


@pytest.mark.parametrize(
    ("row", "field", "fragment"),
    [case[1:] for case in BAD_ROWS],
    ids=[case[0] for case in BAD_ROWS],
)
def test_bad_row_names_field(row: Any, field: str, fragment: str) -> None:
    with pytest.raises(InputError) as caught:
        to_item(row, 5)
    assert caught.value.line == 5
    assert caught.value.field == field
    assert fragment in caught.value.message


def test_unknown_layout_lists_every_accepted_layout() -> None:
    with pytest.raises(InputError) as caught:
        to_item({"text": "x"}, 1)
    for name, keys in LAYOUTS.items():
        assert f"{name} {keys}" in caught.value.message
    assert detect_layout({"text": "x"}) == UNKNOWN


# --- the real data files, when this machine has them ---

# file name -> layout of its rows, or the field every row lacks (files that are not judge data)
REAL_FILES = {
    "pairwise_dev.jsonl": "autoj_pairwise",
    "pairwise_train.jsonl": "autoj_pairwise",
    "single_train.jsonl": "autoj_single",
    "natural.json": "llmbar",
    "adversarial_neighbor.json": "llmbar",
    "vicuna_eval.json": "prometheus",
    "scenario_classifier_train.jsonl": "missing:output",
    "scenario_classifier_test.jsonl": "missing:output",
}


def _first_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        with path.open("rb") as stream:
            return [json.loads(line) for line in itertools.islice(stream, 3)]
    return json.loads(path.read_bytes())[:3]


@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_file_first_rows(name: str) -> None:
    found = sorted(SHARED_DATA.rglob(name)) if SHARED_DATA.is_dir() else []
    if not found:
        missing(f"{name} is not under {SHARED_DATA}: ../shared must sit beside the checkout")
    expected = REAL_FILES[name]
    for line, row in enumerate(_first_rows(found[0]), start=1):
        if expected.startswith("missing:"):
            with pytest.raises(InputError) as caught:
                to_item(row, line)
            assert caught.value.field == expected.removeprefix("missing:")
        else:
            item = to_item(row, line)
            assert item.metadata["layout"] == expected
            assert item.label is not None
            assert item.question.strip() and all(a.strip() for a in item.answers)
            if expected == "autoj_single":
                assert "[Query]" not in item.question and "[END DATA]" not in item.answers[0]


def test_other_shared_files_map_or_fail_cleanly() -> None:
    """A data file this test does not know (a new one in ../shared) maps or names its line."""
    others = [
        p
        for p in sorted(SHARED_DATA.rglob("*"))
        if p.suffix in (".json", ".jsonl") and p.name not in REAL_FILES
    ]
    for path in others:
        for line, row in enumerate(_first_rows(path), start=1):
            try:
                to_item(row, line)
            except InputError as exc:
                assert exc.line == line, path


def test_dumped_item_reads_back_unchanged() -> None:
    item = JudgeItem(
        id="x",
        question="Q",
        answers=("a", "b"),
        reference="r",
        scenario="code",
        criteria=("accuracy",),
        answer_models=("m", None),
        label=Label(winner="tie"),
        rubric=Rubric.model_validate(ROW_RUBRIC),
        metadata={"layout": "ours", "source": {"k": 1}},
    )
    assert to_item(json.loads(json.dumps(item.model_dump(mode="json"))), 1) == item


@pytest.mark.parametrize("name", sorted(builtin_rubrics()))
def test_a_rubric_file_pasted_into_a_row_is_that_rubric(name: str) -> None:
    path = builtin_rubrics()[name]
    row = {"question": "q", "answers": ["a"], "rubric": read_mapping(path)}
    assert to_item(row, 1).rubric == load_rubric(path)


def test_every_layout_is_one_record_with_its_keys_rules_and_mapping():
    from app.io.layouts import _RULES, LAYOUT_RECORDS

    assert list(LAYOUTS) == list(LAYOUT_RECORDS)
    ranks = [rank for rank, _, _ in _RULES]
    assert len(ranks) == len(set(ranks))  # one order over all layouts' rules
    for name, layout in LAYOUT_RECORDS.items():
        assert layout.name == name and layout.rules and callable(layout.mapper)
        assert LAYOUTS[name] == layout.keys
