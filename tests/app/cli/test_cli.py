"""The command line on the tiny random-weight GGUF: every input layout, bad rows, listings.

The CLI runs in-process through `app.cli.main`, and once as `python -m app`.
The tiny model writes junk, but the grammar and value rules make every
judgment valid, so no row may come back unparsed.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.catalog.scenarios import SCENARIOS_DIR, load_catalog
from app.cli import main
from app.records import Judgment, Protocol, Status
from models.registry import load_registry

REPO_ROOT = Path(__file__).resolve().parents[3]
# The tiny tokenizer spells the default scenario's ten criteria in many tokens: one
# judgment call takes 200-600 tokens of JSON, so --max-tokens 200 cannot finish most
# (see test_too_few_tokens_says_so). 900 leaves room for the 400-character feedback.
MAX_TOKENS = "900"
GOOD_TEXT = "The capital of France is Paris."


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_json(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return path


def read_output(path: Path) -> list[Judgment]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Judgment.model_validate(json.loads(line)) for line in lines]


def model_args(model: Path, *extra: str) -> list[str]:
    return ["--model", str(model), "--threads", "1", "--quiet", *extra]


def judge(
    model: Path, source: Path, out: Path, *extra: str, max_tokens: str = MAX_TOKENS
) -> tuple[int, list[Judgment]]:
    code = main(["judge", str(source), "--out", str(out), "--max-tokens", max_tokens,
                 *model_args(model, *extra)])  # fmt: skip
    return code, read_output(out) if out.exists() else []


# -- one input file per layout ---------------------------------------------------

OURS = [
    {"id": "o1", "question": "What is the capital of France?", "answers": [GOOD_TEXT, "Lyon."]},
    {
        "id": "o2",
        "question": "Name a primary colour.",
        "answers": ["Blue.", "Green is one."],
        "reference": "Red, blue or yellow.",
        "scenario": "open_question",
    },
    {"id": "o3", "question": "Which fruit is red?", "answers": ["Apple", "Banana", "Cherry"]},
]

LAYOUT_FILES: dict[str, tuple[str, list[dict[str, Any]], Protocol | tuple[Protocol, ...]]] = {
    "alpaca": (
        "jsonl",
        [
            {
                "instruction": "Translate to French.",
                "input": "Good morning",
                "output": "Bonjour",
                "output_2": "Bonsoir",
            },
            {"instruction": "Say hello politely.", "output": "Hello, how are you?"},
        ],
        (Protocol.PAIRWISE, Protocol.SINGLE),
    ),
    "judgelm": (
        "jsonl",
        [
            {
                "question_id": 11,
                "question_body": "What is 2 + 2?",
                "answer1_body": "4",
                "answer2_body": "5",
                "score": [9, 2],
            },
            {
                "question_id": 12,
                "question_body": "Name a planet.",
                "answer1_body": "Mars",
                "answer2_body": "The Moon",
                "answer3_body": "Venus",
            },
        ],
        (Protocol.PAIRWISE, Protocol.MULTI),
    ),
    "pandalm": (
        "json",
        [
            {
                "instruction": "Summarise the sentence.",
                "input": "The cat sat on the mat all day long.",
                "response1": "A cat sat on a mat.",
                "response2": "Dogs bark.",
                "annotator1": 1,
                "annotator2": 1,
                "annotator3": 0,
            },
            {
                "instruction": "Give a synonym of happy.",
                "input": "",
                "response1": "Sad",
                "response2": "Glad",
                "annotator1": 2,
                "annotator2": 2,
                "annotator3": 2,
            },
        ],
        Protocol.PAIRWISE,
    ),
    "autoj_pairwise": (
        "jsonl",
        [
            {
                "id": "aj1",
                "scenario": "code_generation",
                "prompt": "Write a Python function that adds two numbers.",
                "response 1": "def add(a, b):\n    return a + b",
                "response 2": "def add(a, b):\n    return a - b",
                "label": 0,
            },
            {
                "id": "aj2",
                "scenario": "chitchat",
                "prompt": "How are you today?",
                "response 1": "Fine, thanks!",
                "response 2": "I am a teapot.",
                "label": 2,
            },
        ],
        Protocol.PAIRWISE,
    ),
    "autoj_single": (
        "jsonl",
        [
            {
                "usrmsg": "Rate the response.\n[BEGIN DATA]\n***\n[Query]: What is 3 * 3?\n***\n"
                "[Response]: 9\n***\n[END DATA]",
                "target_output": "Correct and short. Rating: [[9]]",
                "pred_score": 9.0,
                "scenario": "math_reasoning",
            },
            {
                "usrmsg": "[Query]: Write a haiku about rain.\n[Response]: Rain falls soft.",
                "target_output": "Not a haiku. Rating: [[3]]",
                "scenario": "creative_writing",
            },
        ],
        Protocol.SINGLE,
    ),
    "llmbar": (
        "json",
        [
            {
                "input": "List two colours.",
                "output_1": "Red and blue.",
                "output_2": "Red.",
                "label": 1,
            },
            {
                "input": "Answer with one word: is ice cold?",
                "output_1": "Yes, ice is very cold indeed.",
                "output_2": "Yes.",
                "label": 2,
            },
            {"input": "Spell cat.", "output_1": "c-a-t", "output_2": "d-o-g", "label": 1},
        ],
        Protocol.PAIRWISE,
    ),
    "pointwise": (
        "jsonl",
        [
            {"question": "What is H2O?", "response": "Water.", "score": 5, "scale_max": 5},
            {"instruction": "Name a mammal.", "response": "A shark.", "score": 1, "scale": "1-5"},
        ],
        Protocol.SINGLE,
    ),
}


def check_rows(
    judgments: list[Judgment], n_rows: int, layout: str, error_lines: frozenset[int] = frozenset()
) -> None:
    """One row out per row in, in order: an error row exactly at `error_lines` (rows the
    protocol cannot judge), every other row judged."""
    assert len(judgments) == n_rows
    assert [j.line for j in judgments] == list(range(1, n_rows + 1))
    for judgment in judgments:
        wanted = Status.ERROR if judgment.line in error_lines else Status.OK
        assert judgment.status is wanted, judgment.error
        assert judgment.metadata.get("layout") == layout
        assert judgment.model and judgment.template == "pocketjudge"


@pytest.mark.parametrize("layout", list(LAYOUT_FILES))
def test_each_layout_in_its_natural_protocol(
    tiny_gguf_model: Path, tmp_path: Path, layout: str
) -> None:
    suffix, rows, protocols = LAYOUT_FILES[layout]
    writer = write_jsonl if suffix == "jsonl" else write_json
    source = writer(tmp_path / f"{layout}.{suffix}", rows)
    code, judgments = judge(tiny_gguf_model, source, tmp_path / "out.jsonl")
    assert code == 0
    check_rows(judgments, len(rows), layout)
    if isinstance(protocols, Protocol):
        protocols = (protocols,) * len(rows)
    for judgment, protocol, row in zip(judgments, protocols, rows):
        assert judgment.status is Status.OK, judgment.error
        assert judgment.protocol is protocol
        n_answers = 1 if protocol is Protocol.SINGLE else 2 if protocol is Protocol.PAIRWISE else 3
        assert len(judgment.answers) == n_answers
        if protocol is Protocol.PAIRWISE:
            assert judgment.swapped and judgment.winner in ("A", "B", "tie", "uncertain")
            # A verdict below the judge's threshold is "uncertain" and names its leaning.
            assert judgment.leaning in ("A", "B", "tie")
            assert (judgment.winner == "uncertain") is judgment.uncertain
            assert judgment.raw_output and judgment.raw_output_swapped
        if protocol is Protocol.MULTI:
            assert sorted(judgment.ranking) == [1, 2, 3]
        if "scenario" in row:
            assert judgment.scenario == row["scenario"]
        # llama.cpp reads the score distributions, so every judgment has expected scores.
        assert all(a.expected_overall is not None for a in judgment.answers)


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        ("auto", (Protocol.PAIRWISE, Protocol.PAIRWISE, Protocol.MULTI)),
        ("single", (Protocol.SINGLE,) * 3),
        ("pairwise", (Protocol.PAIRWISE,) * 3),
        ("multi", (Protocol.MULTI,) * 3),
    ],
)
def test_our_layout_in_every_protocol(
    tiny_gguf_model: Path, tmp_path: Path, protocol: str, expected: tuple[Protocol, ...]
) -> None:
    source = write_jsonl(tmp_path / "ours.jsonl", OURS)
    code, judgments = judge(tiny_gguf_model, source, tmp_path / "out.jsonl", "--protocol", protocol)
    assert code == (1 if protocol == "pairwise" else 0)  # 1: some rows are error rows
    three_answers = frozenset({3}) if protocol == "pairwise" else frozenset()
    check_rows(judgments, len(OURS), "ours", three_answers)
    assert [j.id for j in judgments] == ["o1", "o2", "o3"]
    assert tuple(j.protocol for j in judgments) == expected
    for judgment, row in zip(judgments, OURS):
        if protocol == "pairwise" and len(row["answers"]) != 2:
            assert judgment.status is Status.ERROR
            assert "exactly 2 answers" in judgment.error
            continue
        assert judgment.status is Status.OK, judgment.error
        assert len(judgment.answers) == len(row["answers"])
        assert judgment.swapped is (judgment.protocol is Protocol.PAIRWISE)  # swap is on
        assert judgment.confidence is not None and 0.0 <= judgment.confidence <= 1.0
    assert judgments[1].scenario == "open_question"
    # no scenario in the row: the classifier's pick, with its guesses kept
    assert judgments[0].scenario == "open_question"
    assert next(iter(judgments[0].scenario_guesses)) == "open_question"
    assert judgments[1].scenario_guesses is None  # the row names its own


# -- bad rows ----------------------------------------------------------------------


def test_bad_rows_become_error_rows_and_the_rest_is_judged(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    lines = [
        json.dumps({"id": "g1", "question": "What is 1 + 1?", "answers": ["2"]}).encode(),
        b'{"id": "broken", "question": "unclosed", "answers": [',
        json.dumps({"id": "no-answers", "question": "Where are the answers?"}).encode(),
        b"",  # a blank line is skipped but still counted
        b'{"id": "latin1", "question": "caf\xe9?", "answers": ["yes"]}',
        json.dumps({"id": "g2", "question": "Is the sky blue?", "answers": ["Yes."]}).encode(),
    ]
    source = tmp_path / "bad.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    code, judgments = judge(tiny_gguf_model, source, tmp_path / "out.jsonl")
    assert code == 1  # the output is complete, and some rows are error rows
    assert len(judgments) == 5  # rows in == rows out (non-blank lines)
    by_line = {j.line: j for j in judgments}
    assert list(by_line) == [1, 2, 3, 5, 6]
    for line in (1, 6):
        assert by_line[line].status is Status.OK, by_line[line].error
    assert [by_line[n].id for n in (1, 3, 6)] == ["g1", "no-answers", "g2"]
    broken, missing, latin1 = by_line[2], by_line[3], by_line[5]
    for row in (broken, missing, latin1):
        assert row.status is Status.ERROR and row.answers == ()
    assert broken.error.startswith("line 2: invalid JSON")
    assert missing.error.startswith("line 3, field 'answers': add an 'answers' field")
    assert missing.metadata["error_field"] == "answers"
    assert latin1.error.startswith("line 5: the line is not valid UTF-8 (byte 0xe9")


def test_too_few_tokens_says_so(tiny_gguf_model: Path, tmp_path: Path) -> None:
    """Too few tokens for ten criteria: unparsed, with the reason, not a crash."""
    source = write_jsonl(tmp_path / "one.jsonl", [OURS[0]])
    code, judgments = judge(
        tiny_gguf_model,
        source,
        tmp_path / "out.jsonl",
        "--no-swap",
        "--mode",
        "generate",
        max_tokens="60",
    )
    assert code == 1  # an unparsed row
    [judgment] = judgments
    assert judgment.status is Status.UNPARSED
    assert "stopped at max_tokens=60" in judgment.error
    assert judgment.raw_output.replace(" ", "").startswith('{"scores":{"A":{"accuracy":')


# -- options -----------------------------------------------------------------------


def test_csv_is_written_next_to_the_jsonl(tiny_gguf_model: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ours.jsonl", OURS[:2])
    out_csv = tmp_path / "out.csv"
    code, judgments = judge(
        tiny_gguf_model, source, tmp_path / "out.jsonl", "--csv", str(out_csv), "--no-swap"
    )
    assert code == 0
    with out_csv.open(newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    assert [row["id"] for row in rows] == ["o1", "o2"]
    assert [row["status"] for row in rows] == ["ok", "ok"]
    assert {"overall_1", "overall_2", "accuracy_1", "accuracy_2", "winner"} <= set(rows[0])
    assert float(rows[0]["overall_1"]) == judgments[0].answers[0].overall


def test_rubric_with_a_reference(tiny_gguf_model: Path, tmp_path: Path) -> None:
    rubric = SCENARIOS_DIR / "rubrics" / "vqa_animal_identification.yaml"
    rows = [
        {
            "id": "vqa1",
            "question": "What animal is in the picture?",
            "answers": ["A red fox, a canid that hunts at night."],
            "reference": "Red fox (Vulpes vulpes), family Canidae, a mammal.",
        },
        {
            "id": "vqa2",
            "question": "What animal is in the picture?",
            "answers": ["Some kind of bird."],
            "reference": "Common raven (Corvus corax), family Corvidae, a bird.",
        },
    ]
    source = write_jsonl(tmp_path / "vqa.jsonl", rows)
    code, judgments = judge(
        tiny_gguf_model, source, tmp_path / "out.jsonl", "--rubric", str(rubric),
        "--protocol", "anchored",
    )  # fmt: skip
    assert code == 0
    keys = ("animal_class", "animal_family", "animal_species", "animal_context", "overall_accuracy")
    for judgment in judgments:
        assert judgment.status is Status.OK, judgment.error
        assert judgment.protocol is Protocol.ANCHORED
        assert judgment.scenario == "rubric:vqa_animal_identification"
        assert judgment.criteria == keys
        [scores] = judgment.answers
        assert scores.overall == sum(scores.criteria.values())  # aggregate: sum
        assert 0 <= scores.overall <= 15


def test_custom_criteria(tiny_gguf_model: Path, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "ours.jsonl", OURS[:1])
    code, judgments = judge(
        tiny_gguf_model, source, tmp_path / "out.jsonl", "--criteria", "accuracy, clarity"
    )
    assert code == 0
    assert judgments[0].status is Status.OK
    assert judgments[0].criteria == ("accuracy", "clarity")
    assert set(judgments[0].answers[0].criteria) == {"accuracy", "clarity"}


def test_unknown_criterion_stops_before_judging(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "ours.jsonl", OURS)
    out = tmp_path / "out.jsonl"
    code = main(["judge", str(source), "--out", str(out), "--criteria", "accuracy,nope",
                 *model_args(tiny_gguf_model)])  # fmt: skip
    assert code == 2
    assert not out.exists()  # nothing judged, no file of error rows
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert error.startswith("error: unknown criterion 'nope'; valid: accuracy, ")


def test_unknown_scenario_stops_before_judging(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "ours.jsonl", OURS)
    code = main(["judge", str(source), "--out", str(tmp_path / "out.jsonl"),
                 "--scenario", "nope", *model_args(tiny_gguf_model)])  # fmt: skip
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: unknown scenario 'nope'; valid: ")
    assert "code_generation" in error and "default" in error


def test_unknown_model_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "ours.jsonl", OURS)
    code = main(["judge", str(source), "--out", str(tmp_path / "out.jsonl"), "--model", "nope"])
    assert code == 2
    error = capsys.readouterr().err.strip()
    names = ", ".join(sorted(load_registry().names()))
    assert error == f"error: unknown model 'nope'; valid: {names}"


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.jsonl"
    code = main(["judge", str(missing), "--out", str(tmp_path / "out.jsonl")])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"error: {missing}: file not found"


# -- listings ----------------------------------------------------------------------


def test_scenarios_lists_58_in_8_groups(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "58 scenarios in 8 groups"
    groups = [line for line in lines[:-1] if not line.startswith(" ")]
    entries = [line for line in lines[:-1] if line.startswith("  ")]
    assert len(groups) == 8 and len(entries) == 58
    catalog = load_catalog()
    assert {line.split()[0] for line in entries} == set(catalog.scenarios)
    counts = {g.rsplit(" (", 1)[0]: int(g.rsplit("(", 1)[1].rstrip(")")) for g in groups}
    assert counts == {group: len(ids) for group, ids in catalog.groups.items()}


def test_models_lists_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    registry = load_registry()
    for entry in registry.models:
        assert f"{entry.name}" in out
    for entry in registry.models:
        trained = "trained judge" if entry.trained_for_judging else "NOT trained for judging"
        marks = " [default]" if entry.name == registry.default else ""
        assert f"{entry.name}{marks}: {entry.backend}, {trained}, " in out


# -- as a subprocess ---------------------------------------------------------------


def test_python_dash_m_app(tiny_gguf_model: Path, tmp_path: Path) -> None:
    source = write_json(tmp_path / "llmbar.json", LAYOUT_FILES["llmbar"][1][:2])
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "app", "judge", str(source), "--out", str(out),
         "--max-tokens", MAX_TOKENS, *model_args(tiny_gguf_model)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"2 rows -> {out}: 2 ok, 0 unparsed, 0 error" in result.stderr
    judgments = read_output(out)
    assert [j.status for j in judgments] == [Status.OK, Status.OK]
    assert all(j.metadata["layout"] == "llmbar" for j in judgments)
