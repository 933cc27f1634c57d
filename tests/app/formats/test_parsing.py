"""parse_output against a table of recorded raw outputs (tests/app/formats/parser_cases.json).

Each case names a protocol, the criteria (the `default` scenario's ten, a rubric as
`rubric:<file stem>`, or `{key: [min, max]}` with the usual weights: the first two
count double), the number of answers, the raw model text, and what must come out:
the scores, the stated overalls, the verdict and the ranking, or a failure whose
reason contains a given text.

Documented behaviour the table pins down:
- the last non-empty top-level JSON object wins, even when an earlier one was valid;
- a criterion key the rule does not know is ignored (dropped), never scored;
- whole floats (7.0) read as integers; strings, halves, booleans, NaN and null do not;
- the stated overall may differ from the exact weighted mean by up to 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.catalog.criteria_types import CriterionSpec, default_weight
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule
from app.formats.parsing import ParsedOutput, ParseFailure, last_json_object, parse_output
from app.records import Protocol

CASES_FILE = Path(__file__).parent / "parser_cases.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))


def rule_for(criteria: str | dict[str, list[int]]) -> ScoringRule:
    if criteria == "default":
        return ScoringRule(load_catalog().specs_for("default"))
    if isinstance(criteria, str) and criteria.startswith("rubric:"):
        rubric = load_rubric(RUBRICS_DIR / f"{criteria.removeprefix('rubric:')}.yaml")
        return ScoringRule(rubric.specs(), rubric.aggregate)
    assert isinstance(criteria, dict), criteria
    specs = tuple(
        CriterionSpec(
            key=key,
            name=key,
            description=key,
            scale_min=low,
            scale_max=high,
            weight=default_weight(i),
        )
        for i, (key, (low, high)) in enumerate(criteria.items())
    )
    return ScoringRule(specs)


def run_case(case: dict[str, Any]) -> ParsedOutput:
    return parse_output(
        case["raw"], Protocol(case["protocol"]), rule_for(case["criteria"]), case["n_answers"]
    )


def test_case_table_is_well_formed() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))
    assert {case["protocol"] for case in CASES} == {p.value for p in Protocol}
    statuses = {case["expected"]["status"] for case in CASES}
    assert statuses == {"ok", "failure"}


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_recorded_output(case: dict[str, Any]) -> None:
    expected = case["expected"]
    if expected["status"] == "failure":
        with pytest.raises(ParseFailure) as caught:
            run_case(case)
        assert expected["reason"] in str(caught.value)
        return
    parsed = run_case(case)
    assert [dict(block) for block in parsed.scores] == expected["scores"]
    assert all(type(v) is int for block in parsed.scores for v in block.values())
    assert list(parsed.stated_overall) == expected["overall"]
    assert parsed.verdict == expected["verdict"]
    ranking = list(parsed.ranking) if parsed.ranking is not None else None
    assert ranking == expected["ranking"]
    if ranking is not None:
        assert all(type(n) is int for n in ranking)
    if "feedback" in expected:
        assert parsed.feedback == expected["feedback"]
    assert len(parsed.scores) == case["n_answers"]


# --------------------------------------------------------------------------- last_json_object


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('x {"a": 1} y {"b": {"c": 2}} z', {"b": {"c": 2}}),
        ('{"a": {"b": {"c": 1}}}', {"a": {"b": {"c": 1}}}),
        ('{"a": 1} {} ', {"a": 1}),
        ('{"a": 1} {"b": ', {"a": 1}),
        ('{"a": "}{"} {"b": "{\\"c\\": 1}"}', {"b": '{"c": 1}'}),
        ('[{"a": 1}, {"b": 2}]', {"b": 2}),
    ],
)
def test_last_json_object(text: str, expected: dict[str, Any]) -> None:
    assert last_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "no braces", "{}", "{ not json }", "[1, 2]", '"{}"'])
def test_last_json_object_none_found(text: str) -> None:
    with pytest.raises(ParseFailure, match="no JSON object found"):
        last_json_object(text)


def test_parse_failure_is_a_value_error() -> None:
    assert issubclass(ParseFailure, ValueError)


def test_extra_criterion_is_dropped_not_scored() -> None:
    case = next(c for c in CASES if c["name"] == "extra_unknown_criterion_ignored")
    parsed = run_case(case)
    assert "creativity" not in parsed.scores[0]
    assert list(parsed.scores[0]) == ["accuracy", "relevance", "clarity"]


def test_scores_come_in_rule_order() -> None:
    """Scores are returned in the rule's criterion order, whatever order the model used."""
    rule = rule_for({"accuracy": [1, 10], "relevance": [1, 10], "clarity": [1, 10]})
    raw = '{"scores": {"clarity": 7, "accuracy": 8, "relevance": 6}, "overall": 7}'
    parsed = parse_output(raw, Protocol.SINGLE, rule, 1)
    assert list(parsed.scores[0]) == list(rule.keys)


def test_multi_answer_count_comes_from_n_answers() -> None:
    """Answers beyond n_answers are not read; fewer than n_answers fail."""
    rule = rule_for({"accuracy": [1, 10], "relevance": [1, 10], "clarity": [1, 10]})
    block = {"accuracy": 5, "relevance": 5, "clarity": 5}
    data = {
        "scores": {"1": block, "2": block, "3": block},
        "overall": {"1": 5, "2": 5, "3": 5},
        "ranking": [1, 2],
    }
    parsed = parse_output(json.dumps(data), Protocol.MULTI, rule, 2)
    assert parsed.stated_overall == (5, 5)
    assert parsed.ranking == (1, 2)
    with pytest.raises(ParseFailure, match=r"missing field 'scores\.4'"):
        parse_output(json.dumps(data), Protocol.MULTI, rule, 4)
