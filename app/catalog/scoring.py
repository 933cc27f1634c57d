"""How criterion scores become an overall score, a verdict and a confidence.

Overall score (EasyJudge's rule): the weighted mean of the criterion scores,
the first two criteria weighing 2 and the rest 1, unless a rubric sets its own
weights. When criteria use different scales, each score is first mapped onto
1-10. A rubric may instead ask for the sum of its points (aggregate `sum`).

The model writes the overall rounded to an integer (halves round up); the
verdict and the ranking follow from those integers, so they always agree with
the scores.

Confidence: each criterion score has a probability distribution read from the
model's logits. Treating them as independent, we compute the probability that
the decision (grade, winner, top answer) comes out as it did.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from app.catalog.criteria_types import CriterionSpec

Aggregate = Literal["weighted_mean", "sum"]
TEN_SCALE = (1, 10)


def round_half_up(value: float) -> int:
    # Float noise (5.499999999 for an exact 5.5) must not decide the rounding.
    return math.floor(round(value, 6) + 0.5)


@dataclass(frozen=True)
class ScoringRule:
    """The criteria of one judgment and how they add up."""

    specs: tuple[CriterionSpec, ...]
    aggregate: Aggregate = "weighted_mean"

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(spec.key for spec in self.specs)

    @property
    def shared_scale(self) -> tuple[int, int] | None:
        scales = {(spec.scale_min, spec.scale_max) for spec in self.specs}
        return scales.pop() if len(scales) == 1 else None

    @property
    def overall_range(self) -> tuple[int, int]:
        if self.aggregate == "sum":
            return (
                sum(spec.scale_min for spec in self.specs),
                sum(spec.scale_max for spec in self.specs),
            )
        return self.shared_scale or TEN_SCALE

    def overall(self, scores: Mapping[str, float]) -> float:
        """The exact (unrounded) overall score of one answer."""
        if self.aggregate == "sum":
            return float(sum(scores[spec.key] for spec in self.specs))
        total_weight = sum(spec.weight for spec in self.specs)
        if self.shared_scale is not None:
            weighted = sum(spec.weight * scores[spec.key] for spec in self.specs)
            return weighted / total_weight
        weighted = sum(spec.weight * _to_ten(scores[spec.key], spec) for spec in self.specs)
        return weighted / total_weight

    def rounded_overall(self, scores: Mapping[str, float]) -> int:
        return round_half_up(self.overall(scores))

    def describe(self) -> str:
        """The rule in words, for the prompt."""
        if self.aggregate == "sum":
            return "the sum of that answer's criterion scores"
        weights = [spec.weight for spec in self.specs]
        if weights[:2] == [2.0, 2.0][: len(weights)] and all(w == 1.0 for w in weights[2:]):
            weighting = "the first two criteria count twice"
        else:
            weighting = "weights: " + ", ".join(
                f"{spec.key} x{spec.weight:g}" for spec in self.specs
            )
        scale = "" if self.shared_scale else ", each score first mapped onto 1-10"
        return (
            "the weighted mean of that answer's criterion scores, rounded to the nearest "
            f"whole number ({weighting}{scale})"
        )


def _to_ten(score: float, spec: CriterionSpec) -> float:
    span = spec.scale_max - spec.scale_min
    return 1.0 + 9.0 * (score - spec.scale_min) / span


def verdict_from_overall(overall_a: int, overall_b: int) -> str:
    if overall_a > overall_b:
        return "A"
    if overall_b > overall_a:
        return "B"
    return "tie"


def ranking_from_overall(overall: Sequence[int]) -> list[list[int]]:
    """Groups of 1-based answer numbers, best first; a group holds equal overalls."""
    groups: dict[int, list[int]] = {}
    for number, value in enumerate(overall, start=1):
        groups.setdefault(value, []).append(number)
    return [groups[value] for value in sorted(groups, reverse=True)]


# -- distributions ---------------------------------------------------------------

Distribution = Mapping[int, float]


def expected(distribution: Distribution) -> float:
    total = sum(distribution.values())
    return sum(value * p for value, p in distribution.items()) / total if total else float("nan")


def rounded_overall_distribution(
    rule: ScoringRule, distributions: Mapping[str, Distribution]
) -> dict[int, float]:
    """Distribution of the rounded overall score, criteria taken as independent."""
    support: dict[float, float] = {0.0: 1.0}
    total_weight = sum(spec.weight for spec in rule.specs)
    for spec in rule.specs:
        step: dict[float, float] = {}
        for value, p in distributions[spec.key].items():
            if rule.aggregate == "sum":
                contribution = float(value)
            elif rule.shared_scale is not None:
                contribution = spec.weight * value / total_weight
            else:
                contribution = spec.weight * _to_ten(value, spec) / total_weight
            for partial, q in support.items():
                key = round(partial + contribution, 9)
                step[key] = step.get(key, 0.0) + p * q
        support = step
    result: dict[int, float] = {}
    for value, p in support.items():
        rounded = round_half_up(value)
        result[rounded] = result.get(rounded, 0.0) + p
    return result


def reachable_overalls(rule: ScoringRule, fixed: Mapping[str, int]) -> frozenset[int]:
    """Every rounded overall the answer can still reach when the criteria in `fixed` keep
    their values and every other criterion may take any value on its scale.

    Decision-first replies state the verdict (or grade, or ranking) before the criterion
    scores; the scores written after it are kept to values that can still agree with it.
    The overall grows with each score; when one step of a score moves it by at most 1,
    every whole number between the lowest and the highest overall is reachable, so only
    those two are computed (rules with coarser steps take the full convolution).
    """
    low = {spec.key: fixed.get(spec.key, spec.scale_min) for spec in rule.specs}
    high = {spec.key: fixed.get(spec.key, spec.scale_max) for spec in rule.specs}
    if _largest_step(rule, fixed) <= 1.0:
        return frozenset(range(rule.rounded_overall(low), rule.rounded_overall(high) + 1))
    scales = {
        spec.key: {fixed[spec.key]: 1.0}
        if spec.key in fixed
        else dict.fromkeys(range(spec.scale_min, spec.scale_max + 1), 1.0)
        for spec in rule.specs
    }
    return frozenset(rounded_overall_distribution(rule, scales))


def _largest_step(rule: ScoringRule, fixed: Mapping[str, int]) -> float:
    """How much one unit of any free criterion can move the overall."""
    total_weight = sum(spec.weight for spec in rule.specs)
    steps = [0.0]
    for spec in rule.specs:
        if spec.key in fixed:
            continue
        if rule.aggregate == "sum":
            steps.append(1.0)
        elif rule.shared_scale is not None:
            steps.append(spec.weight / total_weight)
        else:
            steps.append(spec.weight * 9.0 / (spec.scale_max - spec.scale_min) / total_weight)
    return max(steps)


def verdict_reachable(a: frozenset[int], b: frozenset[int], verdict: str) -> bool:
    """Can overalls drawn from `a` and `b` still give `verdict`?"""
    if not a or not b:
        return False
    if verdict == "A":
        return max(a) > min(b)
    if verdict == "B":
        return max(b) > min(a)
    return bool(a & b)


def ranking_reachable(reachable: Sequence[frozenset[int]], ranking: Sequence[int]) -> bool:
    """Can the answers' overalls (1-based numbers in `ranking`, best first) still fall in
    that order (each at least the next)? Greedy from the last place: each answer takes
    its smallest reachable value not below the one after it."""
    floor = -math.inf
    for number in reversed(ranking):
        options = [value for value in reachable[number - 1] if value >= floor]
        if not options:
            return False
        floor = min(options)
    return True


def probability_of_verdict(a: Mapping[int, float], b: Mapping[int, float], verdict: str) -> float:
    """P(verdict) when the two rounded overalls are drawn independently."""
    values_a = np.array(list(a.keys()), dtype=float)
    probs_a = np.array(list(a.values()), dtype=float)
    values_b = np.array(list(b.keys()), dtype=float)
    probs_b = np.array(list(b.values()), dtype=float)
    diff = values_a[:, None] - values_b[None, :]
    joint = probs_a[:, None] * probs_b[None, :]
    mask = {"A": diff > 0, "B": diff < 0, "tie": diff == 0}[verdict]
    return float(joint[mask].sum())
