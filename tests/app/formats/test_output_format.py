"""The judge's output as a JSON schema and as value rules for step-by-step decoding."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from app.catalog.criteria_types import CriterionSpec, default_weight
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule, ranking_from_overall
from app.formats.output_format import (
    FEEDBACK_MAX_CHARS,
    VERDICTS,
    JudgeValueRules,
    answer_keys,
    json_schema,
    output_spec,
)
from app.formats.parsing import parse_output
from app.records import Protocol
from models.backends.base import OutputSpec, ValueRule
from models.backends.json_tracker import JsonTracker

TEN = tuple(str(i) for i in range(1, 11))


def spec(key: str, low: int = 1, high: int = 10, weight: float = 1.0) -> CriterionSpec:
    return CriterionSpec(
        key=key, name=key, description=key, scale_min=low, scale_max=high, weight=weight
    )


SMALL = ScoringRule(
    tuple(
        spec(k, weight=default_weight(i))
        for i, k in enumerate(("accuracy", "relevance", "clarity"))
    )
)


def vqa_rule() -> ScoringRule:
    rubric = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")
    return ScoringRule(rubric.specs(), rubric.aggregate)


def rules(protocol: Protocol, n: int, rule: ScoringRule = SMALL) -> JudgeValueRules:
    return JudgeValueRules(protocol, rule, answer_keys(protocol, n))


# --------------------------------------------------------------------------- answer keys


@pytest.mark.parametrize(
    ("protocol", "n", "keys"),
    [
        (Protocol.SINGLE, 1, ()),
        (Protocol.ANCHORED, 1, ()),
        (Protocol.PAIRWISE, 2, ("A", "B")),
        (Protocol.MULTI, 3, ("1", "2", "3")),
        (Protocol.MULTI, 6, ("1", "2", "3", "4", "5", "6")),
    ],
)
def test_answer_keys(protocol: Protocol, n: int, keys: tuple[str, ...]) -> None:
    assert answer_keys(protocol, n) == keys


# --------------------------------------------------------------------------- JSON schema


def _check_scores_object(schema: dict[str, Any], rule: ScoringRule) -> None:
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == list(rule.keys)
    assert list(schema["properties"]) == list(rule.keys)
    for criterion in rule.specs:
        prop = schema["properties"][criterion.key]
        assert prop["type"] == "integer"
        assert prop["enum"] == list(range(criterion.scale_min, criterion.scale_max + 1))


@pytest.mark.parametrize("protocol", [Protocol.SINGLE, Protocol.ANCHORED])
def test_schema_one_answer(protocol: Protocol) -> None:
    schema = json_schema(protocol, SMALL, 1)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["scores", "overall", "feedback"]
    assert list(schema["properties"]) == ["scores", "overall", "feedback"]
    _check_scores_object(schema["properties"]["scores"], SMALL)
    assert schema["properties"]["overall"] == {"type": "integer", "enum": list(range(1, 11))}
    assert schema["properties"]["feedback"] == {"type": "string", "maxLength": FEEDBACK_MAX_CHARS}


def test_schema_pairwise() -> None:
    schema = json_schema(Protocol.PAIRWISE, SMALL, 2)
    assert schema["required"] == ["scores", "overall", "verdict", "feedback"]
    assert list(schema["properties"]) == ["scores", "overall", "verdict", "feedback"]
    scores = schema["properties"]["scores"]
    assert scores["required"] == ["A", "B"]
    assert scores["additionalProperties"] is False
    for key in ("A", "B"):
        _check_scores_object(scores["properties"][key], SMALL)
    overall = schema["properties"]["overall"]
    assert overall["required"] == ["A", "B"]
    assert overall["properties"]["A"]["enum"] == list(range(1, 11))
    assert schema["properties"]["verdict"] == {"type": "string", "enum": ["A", "B", "tie"]}
    assert "ranking" not in schema["properties"]


def test_schema_multi() -> None:
    schema = json_schema(Protocol.MULTI, SMALL, 4)
    assert schema["required"] == ["scores", "overall", "ranking", "feedback"]
    assert list(schema["properties"]) == ["scores", "overall", "ranking", "feedback"]
    assert schema["properties"]["scores"]["required"] == ["1", "2", "3", "4"]
    assert schema["properties"]["overall"]["required"] == ["1", "2", "3", "4"]
    ranking = schema["properties"]["ranking"]
    assert ranking["type"] == "array"
    assert ranking["items"] == {"type": "integer", "enum": [1, 2, 3, 4]}
    assert ranking["minItems"] == ranking["maxItems"] == 4
    assert "verdict" not in schema["properties"]


def test_schema_rubric_scales_and_sum_range() -> None:
    rule = vqa_rule()
    schema = json_schema(Protocol.PAIRWISE, rule, 2)
    _check_scores_object(schema["properties"]["scores"]["properties"]["A"], rule)
    assert schema["properties"]["overall"]["properties"]["B"]["enum"] == list(range(16))
    family = schema["properties"]["scores"]["properties"]["B"]["properties"]["animal_family"]
    assert family["enum"] == [0, 1, 2, 3]


def test_schema_default_scenario_is_json_serialisable() -> None:
    rule = ScoringRule(load_catalog().specs_for("default"))
    for protocol, n in [(Protocol.SINGLE, 1), (Protocol.PAIRWISE, 2), (Protocol.MULTI, 6)]:
        schema = json_schema(protocol, rule, n)
        assert json.loads(json.dumps(schema)) == schema


def test_output_spec() -> None:
    spec_ = output_spec(Protocol.MULTI, SMALL, 3)
    assert isinstance(spec_, OutputSpec)
    assert spec_.json_schema == json_schema(Protocol.MULTI, SMALL, 3)
    assert isinstance(spec_.value_rules, JudgeValueRules)
    assert spec_.value_rules.keys == ("1", "2", "3")
    assert spec_.value_rules.protocol is Protocol.MULTI


# --------------------------------------------------------------------------- value rules


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("scores",), True),
        (("scores", "A"), True),
        (("scores", "A", "accuracy"), True),
        (("overall",), True),
        (("overall", "B"), True),
        (("verdict",), True),
        (("ranking",), True),
        (("ranking", 2), True),
        (("feedback",), False),
        (("explanation",), False),
        ((), False),
    ],
)
def test_constrains(path: tuple[str | int, ...], expected: bool) -> None:
    assert rules(Protocol.PAIRWISE, 2).constrains(path) is expected


def test_score_positions_give_all_candidates() -> None:
    single = rules(Protocol.SINGLE, 1)
    assert single.rule_for(("scores", "accuracy"), {}) == ValueRule(TEN)
    rule = single.rule_for(("scores", "clarity"), {("scores", "accuracy"): 1})
    assert rule is not None
    assert rule.candidates == TEN and rule.allowed is None and rule.record is True
    pairwise = rules(Protocol.PAIRWISE, 2)
    assert pairwise.rule_for(("scores", "B", "relevance"), {}) == ValueRule(TEN)
    multi = rules(Protocol.MULTI, 3)
    assert multi.rule_for(("scores", "3", "accuracy"), {}) == ValueRule(TEN)


def test_score_positions_use_each_criterion_scale() -> None:
    vqa = rules(Protocol.SINGLE, 1, vqa_rule())
    assert vqa.rule_for(("scores", "animal_class"), {}) == ValueRule(("0", "1", "2"))
    assert vqa.rule_for(("scores", "animal_species"), {}) == ValueRule(
        ("0", "1", "2", "3", "4", "5")
    )


@pytest.mark.parametrize(
    ("protocol", "n", "path"),
    [
        (Protocol.SINGLE, 1, ("scores",)),
        (Protocol.SINGLE, 1, ("scores", "creativity")),
        (Protocol.SINGLE, 1, ("scores", "A", "accuracy")),
        (Protocol.PAIRWISE, 2, ("scores", "A")),
        (Protocol.PAIRWISE, 2, ("scores", "accuracy")),
        (Protocol.PAIRWISE, 2, ("scores", "A", "creativity")),
        (Protocol.PAIRWISE, 2, ("feedback",)),
        (Protocol.PAIRWISE, 2, ()),
        (Protocol.SINGLE, 1, ("verdict",)),
        (Protocol.MULTI, 3, ("verdict",)),
        (Protocol.MULTI, 3, ("ranking",)),
    ],
)
def test_positions_without_a_rule(protocol: Protocol, n: int, path: tuple[str | int, ...]) -> None:
    assert rules(protocol, n).rule_for(path, {}) is None


def test_overall_is_the_rounded_mean_of_done_scores_single() -> None:
    value_rules = rules(Protocol.SINGLE, 1)
    done = {("scores", "accuracy"): 8, ("scores", "relevance"): 6, ("scores", "clarity"): 9}
    rule = value_rules.rule_for(("overall",), done)
    # (16 + 12 + 9) / 5 = 7.4 -> 7
    assert rule == ValueRule(TEN, ("7",), record=False)
    done[("scores", "clarity")] = 10  # 38 / 5 = 7.6 -> 8
    assert value_rules.rule_for(("overall",), done) == ValueRule(TEN, ("8",), record=False)
    done[("scores", "clarity")] = 7  # 35 / 5 = 7.0
    assert value_rules.rule_for(("overall",), done).allowed == ("7",)


def test_overall_rounds_halves_up() -> None:
    value_rules = rules(
        Protocol.SINGLE, 1, ScoringRule((spec("a", weight=2.0), spec("b", weight=2.0)))
    )
    done = {("scores", "a"): 7, ("scores", "b"): 8}
    assert value_rules.rule_for(("overall",), done).allowed == ("8",)


def test_overall_waits_for_all_scores_of_its_answer() -> None:
    value_rules = rules(Protocol.PAIRWISE, 2)
    done: dict[tuple[str | int, ...], Any] = {
        ("scores", "A", "accuracy"): 9,
        ("scores", "A", "relevance"): 8,
        ("scores", "B", "accuracy"): 1,
        ("scores", "B", "relevance"): 1,
        ("scores", "B", "clarity"): 1,
    }
    assert value_rules.rule_for(("overall", "A"), done) is None  # A's clarity not written yet
    assert value_rules.rule_for(("overall", "B"), done) == ValueRule(TEN, ("1",), record=False)
    done[("scores", "A", "clarity")] = 7  # (18 + 16 + 7) / 5 = 8.2
    assert value_rules.rule_for(("overall", "A"), done).allowed == ("8",)


def test_overall_ignores_non_integer_scores() -> None:
    value_rules = rules(Protocol.SINGLE, 1)
    done = {("scores", "accuracy"): 8, ("scores", "relevance"): "6", ("scores", "clarity"): 9}
    assert value_rules.rule_for(("overall",), done) is None


def test_overall_sum_rubric() -> None:
    value_rules = rules(Protocol.MULTI, 2, vqa_rule())
    scores = [2, 3, 5, 1, 2]
    keys = vqa_rule().keys
    done = {("scores", "2", key): value for key, value in zip(keys, scores)}
    rule = value_rules.rule_for(("overall", "2"), done)
    assert rule == ValueRule(tuple(str(i) for i in range(16)), ("13",), record=False)
    assert value_rules.rule_for(("overall", "1"), done) is None


@pytest.mark.parametrize(("a", "b", "verdict"), [(8, 5, "A"), (4, 9, "B"), (6, 6, "tie")])
def test_verdict_only_the_consistent_one(a: int, b: int, verdict: str) -> None:
    value_rules = rules(Protocol.PAIRWISE, 2)
    rule = value_rules.rule_for(("verdict",), {("overall", "A"): a, ("overall", "B"): b})
    assert rule == ValueRule(('"A"', '"B"', '"tie"'), (f'"{verdict}"',))
    assert rule.record is True
    assert rule.candidates == tuple(f'"{v}"' for v in VERDICTS)


def test_verdict_waits_for_both_overalls() -> None:
    value_rules = rules(Protocol.PAIRWISE, 2)
    assert value_rules.rule_for(("verdict",), {("overall", "A"): 8}) is None


def test_ranking_allows_the_tied_group() -> None:
    value_rules = rules(Protocol.MULTI, 4)
    done: dict[tuple[str | int, ...], Any] = {
        ("overall", "1"): 6,
        ("overall", "2"): 9,
        ("overall", "3"): 4,
        ("overall", "4"): 6,
    }
    candidates = ("1", "2", "3", "4")
    assert value_rules.rule_for(("ranking", 0), done) == ValueRule(candidates, ("2",), record=False)
    done[("ranking", 0)] = 2
    assert value_rules.rule_for(("ranking", 1), done).allowed == ("1", "4")
    done[("ranking", 1)] = 4
    assert value_rules.rule_for(("ranking", 2), done).allowed == ("1",)
    done[("ranking", 2)] = 1
    assert value_rules.rule_for(("ranking", 3), done).allowed == ("3",)
    done[("ranking", 3)] = 3
    assert value_rules.rule_for(("ranking", 4), done) is None  # every answer placed


def test_ranking_waits_for_every_overall() -> None:
    value_rules = rules(Protocol.MULTI, 3)
    done = {("overall", "1"): 6, ("overall", "2"): 9}
    assert value_rules.rule_for(("ranking", 0), done) is None


# --------------------------------------------------------------------------- rules vs. tracker


def _follow(text: str, value_rules: JudgeValueRules) -> list[tuple[tuple[str | int, ...], str]]:
    """Feed `text` through a JsonTracker and check every ruled value it writes.

    Returns the (path, literal) pairs that had a rule, in order.
    """
    tracker = JsonTracker()
    checked: list[tuple[tuple[str | int, ...], str]] = []
    rule: ValueRule | None = None
    path: tuple[str | int, ...] = ()
    for char in text:
        starts_value = tracker.expecting_value() and not char.isspace()
        if rule is None and starts_value and value_rules.constrains(tracker.path()):
            path = tracker.path()
            rule = value_rules.rule_for(path, tracker.done)
        partial = tracker.partial_value()
        tracker.feed(char)
        if rule is not None and partial is not None and tracker.partial_value() is None:
            literal = partial + (char if char == '"' else "")  # a string ends with its quote
            allowed = rule.allowed if rule.allowed is not None else rule.candidates
            assert literal in rule.candidates, (path, literal)
            assert literal in allowed, (path, literal, allowed)
            checked.append((path, literal))
            rule = None
    return checked


def _consistent_output(protocol: Protocol, n: int, rule: ScoringRule, rng: random.Random) -> str:
    keys = answer_keys(protocol, n) or ("",)
    blocks = [{s.key: rng.randint(s.scale_min, s.scale_max) for s in rule.specs} for _ in keys]
    overall = [rule.rounded_overall(block) for block in blocks]
    if protocol in (Protocol.SINGLE, Protocol.ANCHORED):
        data: dict[str, Any] = {"scores": blocks[0], "overall": overall[0]}
    else:
        data = {
            "scores": dict(zip(keys, blocks)),
            "overall": dict(zip(keys, overall)),
        }
        if protocol is Protocol.PAIRWISE:
            data["verdict"] = (
                "A" if overall[0] > overall[1] else "B" if overall[1] > overall[0] else "tie"
            )
        else:
            data["ranking"] = [
                number for group in ranking_from_overall(overall) for number in group
            ]
    data["feedback"] = 'Fine, {"verdict": "B"} is quoted here.'
    return json.dumps(data, indent=rng.choice([None, 2]))


@pytest.mark.parametrize(
    ("protocol", "n"),
    [(Protocol.SINGLE, 1), (Protocol.ANCHORED, 1), (Protocol.PAIRWISE, 2), (Protocol.MULTI, 4)],
)
def test_consistent_outputs_satisfy_every_rule(protocol: Protocol, n: int) -> None:
    """A consistent output only ever writes values the rules allow, and it parses."""
    rng = random.Random(99)
    for rule in (SMALL, vqa_rule(), ScoringRule(load_catalog().specs_for("default"))):
        value_rules = rules(protocol, n, rule)
        for _ in range(25):
            text = _consistent_output(protocol, n, rule, rng)
            checked = _follow(text, value_rules)
            keys = answer_keys(protocol, n) or ("",)
            expected_count = len(keys) * (len(rule.specs) + 1)
            expected_count += 1 if protocol is Protocol.PAIRWISE else 0
            expected_count += n if protocol is Protocol.MULTI else 0
            assert len(checked) == expected_count
            parse_output(text, protocol, rule, n)  # the parser agrees
