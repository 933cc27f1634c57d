"""A leaderboard of the models that wrote the answers (rows that name them in `answer_models`).

Per model: the mean grade its answers got, with a t confidence interval kept
inside the grade scale (see `mean_interval`); wins, ties and losses in pairwise
and multi-answer judgments; and a Bradley-Terry strength fitted on all those
comparisons.

Bradley-Terry says model i beats model j with probability p_i / (p_i + p_j).
The strengths are fitted by maximum likelihood with Hunter's MM (Zermelo)
iteration, a tie counting as half a win each way, and reported as p_i
normalised so that their geometric mean is 1: a strength of 2 means odds of
2 : 1 against an average model, and p_i / p_j are the odds of i against j.
A small prior, one virtual tie against every other model, keeps a model that
never lost (or never won) finite and connects models that never met.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from statistics import fmean, stdev

import numpy as np
from scipy import stats

from app.catalog.criteria_types import LIBRARY_SCALE
from app.catalog.rubrics import Rubric
from app.catalog.scoring import ScoringRule
from app.records import JudgeItem, Judgment, Protocol, Status

Comparison = tuple[str, str, float]  # (first, second, score of the first: 1 win, 0.5 tie, 0 loss)
Scale = tuple[float, float]  # the lowest and the highest grade possible
RUBRIC_SCENARIO = "rubric:"  # a judgment made with a rubric records "rubric:<id>" as its scenario
WINNER_SCORE = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass(frozen=True)
class ModelStanding:
    name: str
    answers: int  # answers the model wrote, in rows of any status
    graded: int  # of those, answers with a score (ok rows): the n of the mean
    mean_grade: float | None
    ci_low: float | None  # confidence interval of the mean, inside the scale (None: graded < 2)
    ci_high: float | None
    wins: int
    ties: int
    losses: int
    win_rate: float | None  # (wins + ties / 2) / comparisons; None without comparisons
    bt_strength: float | None  # Bradley-Terry strength, geometric mean 1; None without comparisons

    @property
    def comparisons(self) -> int:
        return self.wins + self.ties + self.losses


def leaderboard(
    items: Sequence[JudgeItem | None],
    judgments: Sequence[Judgment],
    *,
    scale: Scale | None = None,
    confidence: float = 0.95,
    prior_ties: float = 1.0,
) -> list[ModelStanding]:
    """Standings of every model named in `items[i].answer_models`, best first.

    `scale` is the lowest and highest grade possible, which bound the confidence
    intervals; without it, `grade_scale(judgments)`: 1-10 unless a rubric
    graded the answers (pass `grade_scale(judgments, rubric)` then), else no
    bounds.

    `items[i]` is the input item of `judgments[i]` (None for an unreadable
    row); extra items are ignored (a batch still running). A model named None
    is skipped, and so is a comparison of a model with itself. In a multi
    ranking every pair of answers is one comparison, won by the one ranked
    higher, or a tie when their overall scores are equal. Sorted by strength,
    then mean grade (models without either come last), then name.

    Raises ValueError when a judgment's id is not its item's (misaligned lists).
    """
    answers: dict[str, int] = {}
    grades: dict[str, list[float]] = {}
    comparisons: list[Comparison] = []
    for index, judgment in enumerate(judgments):
        item = items[index] if index < len(items) else None
        if item is None or item.answer_models is None:
            continue
        if item.id != judgment.id:
            raise ValueError(
                f"row {index + 1}: judgment {judgment.id!r} is not for item {item.id!r}; "
                "pass the items and judgments of the same rows in the same order"
            )
        models = item.answer_models
        for model in models:
            if model is not None:
                answers[model] = answers.get(model, 0) + 1
                grades.setdefault(model, [])
        if judgment.status is not Status.OK or len(judgment.answers) != len(models):
            continue
        for model, scores in zip(models, judgment.answers):
            if model is not None:
                grades[model].append(scores.overall)
        comparisons += _comparisons(judgment, models)

    if scale is None:
        scale = grade_scale(judgments)
    tallies = _tallies(comparisons)
    strengths = bradley_terry(comparisons, prior_ties=prior_ties)
    standings = []
    for name, count in answers.items():
        low, high = mean_interval(grades[name], confidence, scale=scale)
        wins, ties, losses = tallies.get(name, (0, 0, 0))
        played = wins + ties + losses
        standings.append(
            ModelStanding(
                name=name,
                answers=count,
                graded=len(grades[name]),
                mean_grade=fmean(grades[name]) if grades[name] else None,
                ci_low=low,
                ci_high=high,
                wins=wins,
                ties=ties,
                losses=losses,
                win_rate=(wins + ties / 2) / played if played else None,
                bt_strength=strengths.get(name),
            )
        )
    return sorted(standings, key=_rank_key)


def _rank_key(standing: ModelStanding) -> tuple[bool, float, bool, float, str]:
    strength, grade = standing.bt_strength, standing.mean_grade
    return (strength is None, -(strength or 0.0), grade is None, -(grade or 0.0), standing.name)


def _comparisons(judgment: Judgment, models: Sequence[str | None]) -> list[Comparison]:
    """The model-vs-model comparisons in one ok judgment."""
    pairs: list[tuple[int, int, float]] = []
    if judgment.protocol is Protocol.PAIRWISE and judgment.winner in WINNER_SCORE:
        pairs.append(
            (0, 1, WINNER_SCORE[judgment.winner])
        )  # an uncertain verdict counts for nothing
    elif judgment.protocol is Protocol.MULTI and judgment.ranking is not None:
        for better, worse in combinations([n - 1 for n in judgment.ranking], 2):
            equal = judgment.answers[better].overall == judgment.answers[worse].overall
            pairs.append((better, worse, 0.5 if equal else 1.0))
    result = []
    for first, second, score in pairs:
        a, b = models[first], models[second]
        if a is not None and b is not None and a != b:
            result.append((a, b, score))
    return result


def _tallies(comparisons: Sequence[Comparison]) -> dict[str, tuple[int, int, int]]:
    """(wins, ties, losses) per model."""
    counts: dict[str, list[int]] = {}
    for first, second, score in comparisons:
        a = counts.setdefault(first, [0, 0, 0])
        b = counts.setdefault(second, [0, 0, 0])
        if score == 0.5:
            a[1] += 1
            b[1] += 1
        elif score > 0.5:
            a[0] += 1
            b[2] += 1
        else:
            a[2] += 1
            b[0] += 1
    return {name: (w, t, lost) for name, (w, t, lost) in counts.items()}


def grade_scale(judgments: Sequence[Judgment], rubric: Rubric | None = None) -> Scale | None:
    """The lowest and highest overall grade the judgments can hold; None when not known.

    Judgments made with library criteria (a scenario's, or ones picked) grade on
    1-10; one made with a native template, on the scale it records (`overall_scale`,
    e.g. Prometheus 1-5). One made with a rubric (scenario "rubric:<id>") grades on
    the rubric's overall range, which only `rubric` can tell (a sum rubric adds its
    criteria's scales): when such a judgment has no matching `rubric`, the scale is
    not known.
    """
    low: float | None = None
    high: float | None = None
    for judgment in judgments:
        if judgment.status is not Status.OK or not judgment.answers:
            continue
        scenario = judgment.scenario or ""
        if judgment.overall_scale is not None:  # a native format's own scale
            bounds = judgment.overall_scale
        elif not scenario.startswith(RUBRIC_SCENARIO):
            bounds = LIBRARY_SCALE
        elif rubric is not None and scenario == f"{RUBRIC_SCENARIO}{rubric.id}":
            bounds = ScoringRule(rubric.specs(), rubric.aggregate).overall_range
        else:
            return None
        low = bounds[0] if low is None else min(low, bounds[0])
        high = bounds[1] if high is None else max(high, bounds[1])
    return None if low is None or high is None else (low, high)


def mean_interval(
    values: Sequence[float], confidence: float = 0.95, *, scale: Scale | None = None
) -> tuple[float | None, float | None]:
    """Student-t confidence interval of the mean of `values`, cut to `scale` (lowest,
    highest grade possible); (None, None) when n < 2.

    Why the t interval cut to the scale: grades are bounded, so the true mean lies
    in the scale, and cutting an interval to a set known to hold the parameter
    never loses coverage (P(mean in CI and in scale) = P(mean in CI)), while where
    the t interval fits in the scale (most models with more than a handful of
    grades) nothing changes. With few grades the t interval is wide, and honestly
    so (t = 12.7 for n = 2): two grades of 1 and 10 say little about the mean, and
    their interval is the whole scale, 1-10, where the uncut one ran from -51.7 to
    62.7. A percentile bootstrap would stay in the scale too, but it only
    resamples the grades seen: for n = 2 its 95% interval is the span of the two
    grades (5 and 6 give 5-6), far below its nominal coverage; it needs tens of
    grades to be trusted, and there the t interval is seldom cut anyway.

    Raises ValueError for a value outside `scale` (grades and scale do not match).
    """
    n = len(values)
    if scale is not None:
        low, high = scale
        if not low < high:
            raise ValueError(f"scale {scale}: the lowest grade must be below the highest")
        outside = [v for v in values if not low <= v <= high]
        if outside:
            raise ValueError(f"grade {outside[0]} is outside the scale {low:g}-{high:g}")
    if n < 2:
        return None, None
    mean = fmean(values)
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * stdev(values) / math.sqrt(n))
    if scale is None:
        return mean - half, mean + half
    return float(max(scale[0], mean - half)), float(min(scale[1], mean + half))


def bradley_terry(
    comparisons: Sequence[Comparison],
    *,
    prior_ties: float = 1.0,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> dict[str, float]:
    """Bradley-Terry strengths (geometric mean 1) from (first, second, score of first).

    A score is 1 for a win of the first, 0 for a loss, 0.5 for a tie (half a
    win each way); any value in 0..1 counts that way. `prior_ties` virtual ties
    are added between every two models. With `prior_ties=0` this is the plain
    maximum-likelihood fit, which only exists when every model has won and lost
    something (else ValueError). Self-comparisons are ignored.

    Hunter's MM update: p_i <- W_i / sum_j n_ij / (p_i + p_j), where W_i are the
    wins of i and n_ij the comparisons of i and j; at the fixed point
    W_i = sum_j n_ij p_i / (p_i + p_j), the likelihood's stationary condition.
    """
    names = sorted({name for a, b, _ in comparisons for name in (a, b) if a != b})
    if len(names) < 2:
        return dict.fromkeys(names, 1.0)
    index = {name: i for i, name in enumerate(names)}
    count = len(names)
    wins = np.zeros(count)
    games = np.zeros((count, count))
    for first, second, score in comparisons:
        if first == second:
            continue
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"score {score!r} for {first} vs {second}: expected 0..1")
        i, j = index[first], index[second]
        wins[i] += score
        wins[j] += 1.0 - score
        games[i, j] += 1
        games[j, i] += 1
    if prior_ties < 0:
        raise ValueError(f"prior_ties is {prior_ties}; expected 0 or more")
    games += prior_ties * (1 - np.eye(count))
    wins += prior_ties * 0.5 * (count - 1)
    played = games.sum(axis=1)
    if np.any(wins <= 0) or np.any(wins >= played):
        raise ValueError(
            "a model won or lost every comparison, so its strength is infinite; use prior_ties > 0"
        )
    strength = np.ones(count)
    for _ in range(max_iter):
        updated = wins / (games / (strength[:, None] + strength[None, :])).sum(axis=1)
        updated /= math.exp(float(np.mean(np.log(updated))))
        converged = np.max(np.abs(updated / strength - 1.0)) < tol
        strength = updated
        if converged:
            break
    return {name: float(strength[index[name]]) for name in names}
