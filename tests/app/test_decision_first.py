"""Decision-first replies: schema order, value rules that keep the scores in line with the
decision written before them, the parser, and reachable overalls."""

from __future__ import annotations

import itertools
import json

import pytest

from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import (
    ScoringRule,
    ranking_reachable,
    reachable_overalls,
    verdict_from_overall,
    verdict_reachable,
)
from app.formats.output_format import ReplyLayout, json_schema, output_spec
from app.formats.parsing import ParseFailure, parse_output
from app.formats.prompts import get_template, template_names
from app.records import Protocol

CATALOG = load_catalog()
RULE = ScoringRule(CATALOG.specs_for(criteria_ids=["accuracy", "relevance", "clarity"]))
FIRST = ReplyLayout(decision_first=True)


def test_decision_first_templates_are_registered() -> None:
    assert {"pocketjudge-decision", "pocketjudge-decision-compact"} <= set(template_names())
    assert get_template("pocketjudge-decision").decision_first
    assert not get_template("pocketjudge").decision_first


@pytest.mark.parametrize(
    ("protocol", "n", "keys"),
    [
        (Protocol.PAIRWISE, 2, ["verdict", "scores", "feedback"]),
        (Protocol.SINGLE, 1, ["overall", "scores", "feedback"]),
        (Protocol.MULTI, 3, ["ranking", "scores", "feedback"]),
    ],
)
def test_the_decision_is_the_first_key(protocol: Protocol, n: int, keys: list[str]) -> None:
    assert json_schema(protocol, RULE, n, FIRST)["required"] == keys
    lean = ReplyLayout(decision_first=True, criteria=False, feedback=False)
    assert json_schema(protocol, RULE, n, lean)["required"] == keys[:1]


def test_reachable_overalls_brute_force() -> None:
    rubric = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")
    for rule in (RULE, ScoringRule(rubric.specs(), rubric.aggregate)):
        specs = rule.specs
        for fixed_count in range(len(specs) + 1):
            fixed = {
                s.key: s.scale_min + (i % (s.scale_max - s.scale_min + 1))
                for i, s in enumerate(specs[:fixed_count])
            }
            free = [range(s.scale_min, s.scale_max + 1) for s in specs[fixed_count:]]
            truth = {
                rule.rounded_overall(
                    {**fixed, **dict(zip([s.key for s in specs[fixed_count:]], values))}
                )
                for values in itertools.product(*free)
            }
            assert reachable_overalls(rule, fixed) == truth


def test_verdict_and_ranking_reachability() -> None:
    assert verdict_reachable(frozenset({5, 6}), frozenset({6, 7}), "A") is False
    assert verdict_reachable(frozenset({5, 6}), frozenset({6, 7}), "tie") is True
    assert verdict_reachable(frozenset({5, 6}), frozenset({6, 7}), "B") is True
    assert ranking_reachable([frozenset({3}), frozenset({4, 5}), frozenset({1, 9})], [2, 1, 3])
    assert not ranking_reachable([frozenset({9}), frozenset({4, 5}), frozenset({1})], [2, 1, 3])


@pytest.mark.parametrize("verdict", ["A", "B", "tie"])
def test_scores_written_after_a_verdict_can_only_agree_with_it(verdict: str) -> None:
    """Walk every score position greedily toward the worst choice: still consistent."""
    rules = output_spec(Protocol.PAIRWISE, RULE, 2, FIRST).value_rules
    done = {("verdict",): verdict}
    for key in ("A", "B"):
        for spec in RULE.specs:
            rule = rules.rule_for(("scores", key, spec.key), done)
            assert rule is not None and rule.record and rule.allowed
            # the opposite of the verdict: A as low and B as high as allowed, or the reverse
            low = verdict == "A" if key == "A" else verdict != "A"
            pick = min if low else max
            done[("scores", key, spec.key)] = pick(int(v) for v in rule.allowed)
    overall = [
        RULE.rounded_overall({s.key: done[("scores", k, s.key)] for s in RULE.specs}) for k in "AB"
    ]
    assert verdict_from_overall(*overall) == verdict


def test_a_forced_decision_allows_only_itself() -> None:
    rules = output_spec(Protocol.PAIRWISE, RULE, 2, FIRST, forced_decision="B").value_rules
    assert rules.rule_for(("verdict",), {}).allowed == ('"B"',)
    multi = output_spec(Protocol.MULTI, RULE, 3, FIRST, forced_decision=(3, 1, 2)).value_rules
    assert [multi.rule_for(("ranking", i), {}).allowed for i in range(3)] == [
        ("3",),
        ("1",),
        ("2",),
    ]


def test_parser_checks_the_scores_against_the_decision() -> None:
    good = {
        "verdict": "A",
        "scores": {"A": dict.fromkeys(RULE.keys, 8), "B": dict.fromkeys(RULE.keys, 5)},
        "feedback": "A is right.",
    }
    parsed = parse_output(json.dumps(good), Protocol.PAIRWISE, RULE, 2, FIRST)
    assert parsed.verdict == "A" and parsed.feedback == "A is right."
    bad = {**good, "verdict": "B"}
    with pytest.raises(ParseFailure, match="contradicts the criterion scores"):
        parse_output(json.dumps(bad), Protocol.PAIRWISE, RULE, 2, FIRST)
    alone = ReplyLayout(decision_first=True, criteria=False, feedback=False)
    assert parse_output('{"verdict": "tie"}', Protocol.PAIRWISE, RULE, 2, alone).scores == ()
    with pytest.raises(ParseFailure, match="verdict"):
        parse_output('{"verdict": "C"}', Protocol.PAIRWISE, RULE, 2, alone)
    grade = parse_output('{"overall": 7}', Protocol.SINGLE, RULE, 1, alone)
    assert grade.stated_overall == (7,) and grade.feedback is None
