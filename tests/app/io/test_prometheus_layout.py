"""Prometheus "absolute grading" rows: the whole prompt in `instruction` (vicuna_eval.json)
or the Feedback Collection's `orig_*` fields become one answer graded on the row's rubric."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.io.layouts import detect_layout, row_id, to_item
from app.io.reader import read_rows
from app.records import JudgeItem, Label
from models.foundation.errors import InputError
from tests.support.needs import shared_file

LEVELS = {str(n): f"Level {n} text." for n in range(1, 6)}


def _prompt(
    question: str = "Name a prime number.",
    response: str = "7 is prime.",
    reference: str | None = "2 is the smallest prime.",
    rubric: str | None = None,
) -> str:
    if rubric is None:
        rubric = "[Is the answer correct?]\n" + "\n".join(
            f"Score {n}: {text}" for n, text in LEVELS.items()
        )
    parts = [
        "###Task Description:\nAn instruction, a response to evaluate, ...\n",
        f"###The instruction to evaluate:\n{question}\n",
        f"###Response to evaluate:\n{response}\n",
    ]
    if reference is not None:
        parts.append(f"###Reference Answer (Score 5):\n{reference}\n")
    if rubric:
        parts.append(f"###Score Rubrics:\n{rubric}\n")
    return "\n".join([*parts, "###Feedback: "])


def _row(**fields: Any) -> dict[str, Any]:
    return {
        "instruction": _prompt(),
        "gpt4_score": [4, 5, 5],
        "gpt4_feedback": ["f1", "f2", "f3"],
        "category": "math",
        "response_source": "vicuna",
        "idx": 3,
        **fields,
    }


FIELDS_ROW = {
    "orig_instruction": "Name a prime number.",
    "orig_response": "9 is prime.",
    "orig_reference_answer": "2 is prime.",
    "orig_criteria": "Is the answer correct?",
    **{f"orig_score{n}_description": text for n, text in zip(range(1, 6), LEVELS.values())},
    "orig_score": "2",
    "orig_feedback": "9 = 3 x 3.",
    "instruction": _prompt(response="9 is prime."),
    "output": "Feedback: 9 = 3 x 3. [RESULT] 2",
}


def test_prompt_row_maps_to_one_answer_graded_on_its_rubric() -> None:
    row = _row()
    assert detect_layout(row) == "prometheus"
    item = to_item(row, 1)
    assert (item.id, row_id(row, 1)) == ("3-vicuna", "3-vicuna")
    assert item.question == "Name a prime number."
    assert item.answers == ("7 is prime.",)
    assert item.reference == "2 is the smallest prime."
    assert item.answer_models == ("vicuna",)
    assert item.label is not None and item.label.scale_max == 5.0
    assert item.label.score == pytest.approx(14 / 3)  # the mean of the three grades
    assert item.rubric is not None
    (criterion,) = item.rubric.criteria
    assert (criterion.id, criterion.description) == ("rubric", "Is the answer correct?")
    assert (criterion.scale_min, criterion.scale_max, criterion.levels) == (1, 5, LEVELS)
    # the prompt and the source are consumed; the raw grades stay beside the label
    assert item.metadata == {
        "gpt4_score": [4, 5, 5],
        "gpt4_feedback": ["f1", "f2", "f3"],
        "category": "math",
        "idx": 3,
        "layout": "prometheus",
    }


def test_prompt_without_reference_and_with_multiline_levels() -> None:
    rubric = "[Clear?]\nScore 1: Not\nclear at all.\n\n" + "\n".join(
        f"Score {n}: ok {n}" for n in range(2, 6)
    )
    item = to_item({"instruction": _prompt(reference=None, rubric=rubric)}, 4)
    assert item.reference is None and item.label is None and item.id == "row-4"
    assert item.rubric is not None
    assert item.rubric.criteria[0].levels["1"] == "Not clear at all."


def test_an_explicit_id_wins_over_idx_and_source() -> None:
    assert to_item(_row(id="abc"), 1).id == "abc"
    assert to_item(_row(response_source=None), 1).id == "3"


def test_feedback_collection_fields() -> None:
    assert detect_layout(FIELDS_ROW) == "prometheus"
    item = to_item(FIELDS_ROW, 2)
    assert item.question == "Name a prime number." and item.answers == ("9 is prime.",)
    assert item.reference == "2 is prime."
    assert item.label == Label(score=2.0, scale_max=5.0)
    assert item.rubric is not None and item.rubric.criteria[0].levels == LEVELS
    assert item.rubric == to_item(_row(), 1).rubric
    # the prompt repeats the orig_* fields and is dropped; the teacher's critique stays
    assert "instruction" not in item.metadata
    assert item.metadata["output"] == FIELDS_ROW["output"]


@pytest.mark.parametrize(
    "row",
    [
        {"instruction": "Write a poem.", "output": "Roses..."},
        {"instruction": "Summarise: ###Notes", "input": "x", "output": "y"},
    ],
)
def test_alpaca_rows_keep_their_layout(row: dict[str, Any]) -> None:
    assert detect_layout(row) == "alpaca"
    assert detect_layout({"instruction": "Q", "response": "R"}) == "pointwise"


# (case, row, field the error names, a fragment of its message)
BAD_ROWS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "no rubric section",
        _row(instruction=_prompt(rubric="")),
        "instruction",
        "no '###Score Rubrics:' section",
    ),
    (
        "no response section",
        _row(instruction=_prompt().replace("###Response to evaluate:", "Response:")),
        "instruction",
        "no '###Response to evaluate:' section",
    ),
    ("empty response", _row(instruction=_prompt(response=" ")), "instruction", "is empty"),
    (
        "a level missing",
        _row(instruction=_prompt(rubric="[C?]\nScore 1: a\nScore 2: b\nScore 4: d\nScore 5: e")),
        "instruction",
        "no description for score 3",
    ),
    (
        "a sixth level",
        _row(
            instruction=_prompt(rubric="[C?]\n" + "\n".join(f"Score {n}: x" for n in range(1, 7)))
        ),
        "instruction",
        "gives score 6",
    ),
    (
        "no criterion",
        _row(instruction=_prompt(rubric="\n".join(f"Score {n}: x" for n in range(1, 6)))),
        "instruction",
        "criterion in brackets",
    ),
    ("grade out of range", _row(gpt4_score=[4, 6]), "gpt4_score", "from 1 to 5"),
    ("grades not numbers", _row(gpt4_score=["good"]), "gpt4_score", "from 1 to 5"),
    ("no grades", _row(gpt4_score=[]), "gpt4_score", "from 1 to 5"),
    (
        "fields: no criterion",
        {k: v for k, v in FIELDS_ROW.items() if k != "orig_criteria"},
        "orig_criteria",
        "add a non-empty 'orig_criteria'",
    ),
    (
        "fields: blank level",
        {**FIELDS_ROW, "orig_score4_description": " "},
        "orig_score4_description",
        "is empty",
    ),
    ("fields: empty response", {**FIELDS_ROW, "orig_response": ""}, "orig_response", "empty"),
    ("fields: bad score", {**FIELDS_ROW, "orig_score": "7"}, "orig_score", "from 1 to 5"),
]


@pytest.mark.parametrize(
    ("row", "field", "fragment"),
    [case[1:] for case in BAD_ROWS],
    ids=[case[0] for case in BAD_ROWS],
)
def test_bad_row_names_field(row: dict[str, Any], field: str, fragment: str) -> None:
    assert detect_layout(row) == "prometheus"
    with pytest.raises(InputError) as caught:
        to_item(row, 7)
    assert (caught.value.line, caught.value.field) == (7, field)
    assert fragment in caught.value.message


def test_a_bad_row_is_an_error_row_and_the_others_are_kept() -> None:
    rows = [_row(idx=1), _row(idx=2, instruction=_prompt(rubric="")), _row(idx=3)]
    read = list(read_rows(json.dumps(rows).encode(), name="rows.json"))
    assert [r.ok for r in read] == [True, False, True]
    assert [r.item.id for r in read if r.item] == ["1-vicuna", "3-vicuna"]
    error = read[1].error
    assert error is not None and (error.line, error.field) == (2, "instruction")
    assert "###Score Rubrics:" in error.message


# --- the real file, when ../shared is beside the checkout ---


def test_vicuna_eval_reads_whole() -> None:
    path = shared_file("prometheus/vicuna_eval.json")
    rows = list(read_rows(path))
    assert len(rows) == 320 and all(row.ok for row in rows), [r.error for r in rows if r.error]
    items = [row.item for row in rows if row.item is not None]
    assert len({item.id for item in items}) == 320  # idx is shared by a request's 4 answers
    for item in items:
        assert item.metadata["layout"] == "prometheus"
        assert len(item.answers) == 1 and item.reference
        assert item.rubric is not None and len(item.rubric.criteria) == 1
        assert list(item.rubric.criteria[0].levels) == ["1", "2", "3", "4", "5"]
        assert item.label is not None and item.label.scale_max == 5.0
        assert item.label.score is not None and 1 <= item.label.score <= 5
        assert "###" not in item.question + item.answers[0] + item.reference
        assert JudgeItem.model_validate_json(item.model_dump_json()) == item


def test_vicuna_eval_first_row_exactly() -> None:
    path = shared_file("prometheus/vicuna_eval.json")
    raw = json.loads(path.read_bytes())[0]
    item = next(iter(read_rows(path))).item
    assert item is not None
    prompt = raw["instruction"]
    after = prompt.split("###The instruction to evaluate:\n")[1]
    question, after = after.split("\n\n###Response to evaluate:\n")
    response, after = after.split("\n\n###Reference Answer (Score 5):\n")
    reference, after = after.split("\n\n###Score Rubrics:\n")
    rubric_lines = after.removesuffix("\n\n###Feedback: ").split("\n")
    assert question == "How can I improve my time management skills?"
    assert (item.id, item.question, item.answers) == ("1-vicuna", question, (response,))
    assert item.reference == reference.strip()
    assert item.answer_models == ("vicuna",)
    assert item.label == Label(score=5.0, scale_max=5.0)
    assert item.rubric is not None
    (criterion,) = item.rubric.criteria
    assert rubric_lines[0] == f"[{criterion.description}]"
    assert criterion.description == (
        "Does the response provide detailed and actionable steps grounded on real-world scenarios?"
    )
    assert [f"Score {k}: {v}" for k, v in criterion.levels.items()] == rubric_lines[1:]
    assert {k: item.metadata[k] for k in ("idx", "category", "gpt4_score")} == {
        "idx": 1,
        "category": "generic",
        "gpt4_score": [5, 5, 5],
    }
