"""Overall scores, verdicts, rankings and the probabilities behind the confidence."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from app.catalog.criteria_types import CriterionSpec, default_weight
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import (
    TEN_SCALE,
    ScoringRule,
    expected,
    probability_of_verdict,
    ranking_from_overall,
    round_half_up,
    rounded_overall_distribution,
    verdict_from_overall,
)


def spec(key: str, low: int = 1, high: int = 10, weight: float = 1.0) -> CriterionSpec:
    return CriterionSpec(
        key=key, name=key, description=key, scale_min=low, scale_max=high, weight=weight
    )


def rule_of(*scales: tuple[int, int], aggregate: str = "weighted_mean") -> ScoringRule:
    """Criteria c0, c1, ... with the given scales and the usual weights (first two count 2)."""
    return ScoringRule(
        tuple(spec(f"c{i}", low, high, default_weight(i)) for i, (low, high) in enumerate(scales)),
        aggregate,  # type: ignore[arg-type]
    )


def scores_of(*values: int) -> dict[str, int]:
    return {f"c{i}": v for i, v in enumerate(values)}


# --------------------------------------------------------------------------- round_half_up


@pytest.mark.parametrize(
    ("value", "expected_value"),
    [
        (2.5, 3),
        (3.5, 4),
        (0.5, 1),
        (1.5, 2),
        (2.4, 2),
        (2.49, 2),
        (2.51, 3),
        (7.0, 7),
        (0.0, 0),
        (-0.5, 0),
        (-1.5, -1),
        (5.499999999999999, 6),  # float noise around an exact 5.5
        (3.4999999993, 4),
    ],
)
def test_round_half_up(value: float, expected_value: int) -> None:
    assert round_half_up(value) == expected_value
    assert isinstance(round_half_up(value), int)


def test_round_half_up_differs_from_bankers_rounding() -> None:
    assert [round(v) for v in (0.5, 2.5, 4.5)] == [0, 2, 4]
    assert [round_half_up(v) for v in (0.5, 2.5, 4.5)] == [1, 3, 5]


# --------------------------------------------------------------------------- overall


def test_weighted_mean_first_two_weigh_two() -> None:
    rule = rule_of((1, 10), (1, 10), (1, 10), (1, 10))
    assert [s.weight for s in rule.specs] == [2.0, 2.0, 1.0, 1.0]
    # (2*10 + 2*4 + 6 + 2) / 6 = 36 / 6
    assert rule.overall(scores_of(10, 4, 6, 2)) == pytest.approx(6.0)
    # (2*7 + 2*7 + 2 + 3) / 6 = 33 / 6 = 5.5 -> 6
    assert rule.overall(scores_of(7, 7, 2, 3)) == pytest.approx(5.5)
    assert rule.rounded_overall(scores_of(7, 7, 2, 3)) == 6
    assert rule.overall_range == (1, 10)
    assert rule.shared_scale == (1, 10)


def test_default_scenario_weights() -> None:
    rule = ScoringRule(load_catalog().specs_for("default"))
    assert len(rule.specs) == 10
    assert sum(spec.weight for spec in rule.specs) == 12
    scores = dict.fromkeys(rule.keys, 7) | {"accuracy": 8, "instruction_following": 9}
    assert rule.overall(scores) == pytest.approx(90 / 12)
    assert rule.rounded_overall(scores) == 8


def test_explicit_weights() -> None:
    rule = ScoringRule((spec("a", weight=3.0), spec("b", weight=1.0)))
    assert rule.overall({"a": 10, "b": 2}) == pytest.approx(8.0)
    assert "a x3" in rule.describe()


def test_mixed_scales_mapped_to_ten() -> None:
    rule = rule_of((1, 5), (0, 2), (1, 10))
    assert rule.shared_scale is None
    assert rule.overall_range == TEN_SCALE
    # 3 on 1-5 -> 5.5, 2 on 0-2 -> 10, 4 on 1-10 -> 4: (2*5.5 + 2*10 + 4) / 5 = 7
    assert rule.overall(scores_of(3, 2, 4)) == pytest.approx(7.0)
    # the ends of every scale map to 1 and 10
    assert rule.overall(scores_of(1, 0, 1)) == pytest.approx(1.0)
    assert rule.overall(scores_of(5, 2, 10)) == pytest.approx(10.0)
    assert "mapped onto 1-10" in rule.describe()


def test_shared_small_scale_stays_on_its_scale() -> None:
    rubric = load_rubric(RUBRICS_DIR / "helpfulness_1to5.yaml")
    rule = ScoringRule(rubric.specs(), rubric.aggregate)
    assert rule.overall_range == (1, 5)
    assert rule.overall({"helpfulness": 4, "trustworthiness": 5}) == pytest.approx(4.5)
    assert rule.rounded_overall({"helpfulness": 4, "trustworthiness": 5}) == 5


def test_sum_aggregate() -> None:
    rubric = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")
    rule = ScoringRule(rubric.specs(), rubric.aggregate)
    assert rule.aggregate == "sum"
    assert rule.overall_range == (0, 15)
    scores = {
        "animal_class": 2,
        "animal_family": 3,
        "animal_species": 5,
        "animal_context": 1,
        "overall_accuracy": 2,
    }
    assert rule.overall(scores) == 13.0
    assert rule.rounded_overall(scores) == 13
    assert rule.describe() == "the sum of that answer's criterion scores"


def test_sum_ignores_weights() -> None:
    rule = ScoringRule((spec("a", 0, 3, 2.0), spec("b", 0, 5, 1.0)), "sum")
    assert rule.overall({"a": 3, "b": 4}) == 7.0
    assert rule.overall_range == (0, 8)


def test_describe_default_weighting() -> None:
    text = rule_of((1, 10), (1, 10), (1, 10)).describe()
    assert "the first two criteria count twice" in text
    assert "rounded to the nearest whole number" in text


def test_keys_in_order() -> None:
    assert rule_of((1, 10), (1, 5), (0, 2)).keys == ("c0", "c1", "c2")


def _exact_overall(rule: ScoringRule, scores: dict[str, int]) -> Fraction:
    if rule.aggregate == "sum":
        return Fraction(sum(scores.values()))
    total = sum(Fraction(s.weight) for s in rule.specs)
    if rule.shared_scale is not None:
        return sum(Fraction(s.weight) * scores[s.key] for s in rule.specs) / total
    return (
        sum(
            Fraction(s.weight)
            * (1 + Fraction(9) * (scores[s.key] - s.scale_min) / (s.scale_max - s.scale_min))
            for s in rule.specs
        )
        / total
    )


def _random_rule(rng: random.Random) -> ScoringRule:
    specs = []
    for i in range(rng.randint(1, 10)):
        low = rng.choice([0, 1])
        high = rng.choice([2, 3, 4, 5, 7, 10])
        weight = rng.choice([0.5, 1.0, 1.5, 2.0, 3.0])
        specs.append(spec(f"k{i}", low, high, weight))
    return ScoringRule(tuple(specs), rng.choice(["weighted_mean", "weighted_mean", "sum"]))


def test_rounded_overall_matches_exact_arithmetic() -> None:
    """Float noise in the mean (2.4999999999999996 for 5/2) must not change the rounding."""
    rng = random.Random(20240611)
    for _ in range(3000):
        rule = _random_rule(rng)
        scores = {s.key: rng.randint(s.scale_min, s.scale_max) for s in rule.specs}
        exact = _exact_overall(rule, scores)
        assert rule.overall(scores) == pytest.approx(float(exact))
        assert rule.rounded_overall(scores) == math.floor(exact + Fraction(1, 2)), (rule, scores)


# --------------------------------------------------------------------------- verdict and ranking


@pytest.mark.parametrize(
    ("a", "b", "verdict"), [(8, 5, "A"), (5, 8, "B"), (7, 7, "tie"), (1, 10, "B"), (0, 0, "tie")]
)
def test_verdict_from_overall(a: int, b: int, verdict: str) -> None:
    assert verdict_from_overall(a, b) == verdict


@pytest.mark.parametrize(
    ("overall", "groups"),
    [
        ([6, 9, 4], [[2], [1], [3]]),
        ([6, 9, 4, 6], [[2], [1, 4], [3]]),
        ([5, 5, 5], [[1, 2, 3]]),
        ([1, 10], [[2], [1]]),
        ([3, 7, 7, 3, 10, 1], [[5], [2, 3], [1, 4], [6]]),
    ],
)
def test_ranking_from_overall(overall: list[int], groups: list[list[int]]) -> None:
    assert ranking_from_overall(overall) == groups


# --------------------------------------------------------------------------- distributions


def test_expected() -> None:
    assert expected({6: 0.5, 8: 0.5}) == pytest.approx(7.0)
    assert expected({8: 0.6, 9: 0.4}) == pytest.approx(8.4)
    assert expected({3: 2.0, 5: 2.0}) == pytest.approx(4.0)  # normalised by the total
    assert expected({7: 1.0}) == 7.0
    assert math.isnan(expected({}))
    assert math.isnan(expected({4: 0.0}))


def test_rounded_overall_distribution_two_criteria_equal_weight() -> None:
    # weights 2 and 2: the plain mean. a in {6, 8}, b in {8 (0.6), 9 (0.4)}:
    # (6,8) = 7 -> 7 p=.3; (6,9) = 7.5 -> 8 p=.2; (8,8) = 8 p=.3; (8,9) = 8.5 -> 9 p=.2
    rule = rule_of((1, 10), (1, 10))
    dist = rounded_overall_distribution(rule, {"c0": {6: 0.5, 8: 0.5}, "c1": {8: 0.6, 9: 0.4}})
    assert dist.keys() == {7, 8, 9}
    assert dist[7] == pytest.approx(0.3)
    assert dist[8] == pytest.approx(0.5)
    assert dist[9] == pytest.approx(0.2)
    assert sum(dist.values()) == pytest.approx(1.0)


def test_rounded_overall_distribution_unequal_weights() -> None:
    # weights 2 and 1 (explicit): (2a + b) / 3. a in {3 (.25), 4 (.75)}, b in {1, 10} (.5 each):
    # (3,1) = 7/3 -> 2; (3,10) = 16/3 -> 5; (4,1) = 3; (4,10) = 6
    rule = ScoringRule((spec("c0", weight=2.0), spec("c1", weight=1.0)))
    dist = rounded_overall_distribution(rule, {"c0": {3: 0.25, 4: 0.75}, "c1": {1: 0.5, 10: 0.5}})
    assert dist == pytest.approx({2: 0.125, 5: 0.125, 3: 0.375, 6: 0.375})


def test_rounded_overall_distribution_sum() -> None:
    rule = ScoringRule((spec("a", 0, 2), spec("b", 0, 3)), "sum")
    dist = rounded_overall_distribution(rule, {"a": {0: 0.5, 2: 0.5}, "b": {1: 0.2, 3: 0.8}})
    assert dist == pytest.approx({1: 0.1, 3: 0.5, 5: 0.4})


def test_rounded_overall_distribution_mixed_scales() -> None:
    # 1-5 (weight 2) and 0-2 (weight 2): 3 -> 5.5 and 1 -> 5.5, 5 -> 10 and 2 -> 10
    rule = rule_of((1, 5), (0, 2))
    dist = rounded_overall_distribution(rule, {"c0": {3: 0.5, 5: 0.5}, "c1": {1: 1.0}})
    # (5.5 + 5.5) / 2 = 5.5 -> 6; (10 + 5.5) / 2 = 7.75 -> 8
    assert dist == pytest.approx({6: 0.5, 8: 0.5})


def test_point_mass_distribution_agrees_with_rounded_overall() -> None:
    """With all the mass on the written scores, the distribution names the written overall."""
    rng = random.Random(7)
    rules = [ScoringRule(load_catalog().specs_for("default"))] + [
        _random_rule(rng) for _ in range(20)
    ]
    for rule in rules:
        for _ in range(200):
            scores = {s.key: rng.randint(s.scale_min, s.scale_max) for s in rule.specs}
            dists = {key: {value: 1.0} for key, value in scores.items()}
            assert rounded_overall_distribution(rule, dists) == {
                rule.rounded_overall(scores): pytest.approx(1.0)
            }, (rule, scores)


def test_probability_of_verdict_hand_computed() -> None:
    a = {7: 0.2, 8: 0.5, 9: 0.3}
    b = {7: 0.5, 8: 0.5}
    # A > B: (8,7) .25 + (9,7) .15 + (9,8) .15 = .55
    # tie:   (7,7) .10 + (8,8) .25 = .35
    # B > A: (7,8) .10
    assert probability_of_verdict(a, b, "A") == pytest.approx(0.55)
    assert probability_of_verdict(a, b, "tie") == pytest.approx(0.35)
    assert probability_of_verdict(a, b, "B") == pytest.approx(0.10)
    total = sum(probability_of_verdict(a, b, v) for v in ("A", "B", "tie"))
    assert total == pytest.approx(1.0)


def test_probability_of_verdict_certain() -> None:
    assert probability_of_verdict({9: 1.0}, {4: 1.0}, "A") == 1.0
    assert probability_of_verdict({9: 1.0}, {4: 1.0}, "B") == 0.0
    assert probability_of_verdict({5: 1.0}, {5: 1.0}, "tie") == 1.0
