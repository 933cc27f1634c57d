"""Leaderboard and Bradley-Terry, against closed forms and hand counts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import optimize, stats

from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from app.reports.leaderboard import bradley_terry, grade_scale, leaderboard, mean_interval

# --------------------------------------------------------------------------- Bradley-Terry


def test_two_models_without_prior_have_the_odds_as_strength_ratio() -> None:
    """A beats B 3 times in 4: the MLE is p_A / p_B = 3, and the geometric mean is 1."""
    games = [("A", "B", 1.0)] * 3 + [("A", "B", 0.0)]
    strength = bradley_terry(games, prior_ties=0)
    assert strength["A"] / strength["B"] == pytest.approx(3.0)
    assert strength == pytest.approx({"A": math.sqrt(3), "B": 1 / math.sqrt(3)})


def test_two_models_with_the_prior_tie() -> None:
    """One virtual tie: A has 3.5 wins of 5, B 1.5, so p_A / p_B = 7/3."""
    games = [("A", "B", 1.0)] * 3 + [("B", "A", 1.0)]  # the same games, B named first once
    strength = bradley_terry(games)
    assert strength == pytest.approx({"A": math.sqrt(7 / 3), "B": math.sqrt(3 / 7)})


def test_ties_count_half_a_win_each_way() -> None:
    games = [("A", "B", 0.5), ("A", "B", 0.5), ("B", "A", 0.0)]  # A: 1 + 1 = 2 wins, B: 1
    strength = bradley_terry(games, prior_ties=0)
    assert strength["A"] / strength["B"] == pytest.approx(2.0)


def test_undefeated_model_stays_finite_with_the_prior() -> None:
    games = [("A", "B", 1.0)] * 5
    strength = bradley_terry(games)  # 5.5 wins against 0.5: ratio 11
    assert strength["A"] / strength["B"] == pytest.approx(11.0)
    with pytest.raises(ValueError, match="prior_ties > 0"):
        bradley_terry(games, prior_ties=0)


def test_three_models_transitive() -> None:
    """A > B > C twice each, and A > C twice. By the A<->C symmetry p_A p_C = p_B^2,
    so with geometric mean 1: p_B = 1 and p_C = 1 / p_A."""
    games = [("A", "B", 1.0), ("B", "C", 1.0), ("C", "A", 0.0)] * 2
    strength = bradley_terry(games)
    assert strength["A"] > strength["B"] > strength["C"]
    assert strength["B"] == pytest.approx(1.0)
    assert strength["A"] * strength["C"] == pytest.approx(1.0)
    assert math.prod(strength.values()) == pytest.approx(1.0)

    # the fixed point with the prior: W_i = sum_j n_ij p_i / (p_i + p_j)
    # every pair met twice plus one virtual tie: n_ij = 3; wins A 4 + 1, B 2 + 1, C 0 + 1
    wins = {"A": 5.0, "B": 3.0, "C": 1.0}
    for i in strength:
        expected = sum(3 * strength[i] / (strength[i] + strength[j]) for j in strength if j != i)
        assert expected == pytest.approx(wins[i], abs=1e-8)


def test_matches_a_direct_likelihood_maximisation() -> None:
    games = [
        ("A", "B", 1.0),
        ("A", "B", 0.0),
        ("A", "C", 1.0),
        ("B", "C", 0.5),
        ("C", "D", 1.0),
        ("D", "B", 1.0),
        ("A", "D", 1.0),
        ("D", "A", 0.5),
    ]
    names = ["A", "B", "C", "D"]
    prior = [(a, b, 0.5) for i, a in enumerate(names) for b in names[i + 1 :]]

    def minus_log_likelihood(theta: np.ndarray) -> float:
        p = dict(zip(names, theta))
        return -sum(
            s * (p[a] - np.logaddexp(p[a], p[b])) + (1 - s) * (p[b] - np.logaddexp(p[a], p[b]))
            for a, b, s in games + prior
        )

    theta = optimize.minimize(minus_log_likelihood, np.zeros(4), method="BFGS", tol=1e-12).x
    theta -= theta.mean()
    strength = bradley_terry(games)
    assert [math.log(strength[n]) for n in names] == pytest.approx(list(theta), abs=1e-5)


def test_degenerate_inputs() -> None:
    assert bradley_terry([]) == {}
    assert bradley_terry([("A", "A", 1.0)]) == {}  # a self-comparison says nothing
    with pytest.raises(ValueError, match=r"expected 0\.\.1"):
        bradley_terry([("A", "B", 2.0)])


# --------------------------------------------------------------------------- mean interval


def test_mean_interval_by_hand() -> None:
    # mean 7.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, s^2 = 5/3, t(0.975, 3) = 3.1824
    low, high = mean_interval([6, 8, 7, 9])
    half = stats.t.ppf(0.975, 3) * math.sqrt(5 / 3) / 2
    assert stats.t.ppf(0.975, 3) == pytest.approx(3.18245, abs=1e-5)
    assert (low, high) == pytest.approx((7.5 - half, 7.5 + half))
    assert half == pytest.approx(2.0543, abs=1e-4)
    assert mean_interval([5.0]) == (None, None)
    assert mean_interval([]) == (None, None)
    assert mean_interval([4.0, 4.0, 4.0]) == (4.0, 4.0)


def test_two_grades_far_apart_give_the_whole_scale_not_an_interval_beyond_it() -> None:
    """The probe's case: n = 2, t(0.975, 1) = 12.7, so the t interval of 1 and 10 is
    5.5 +- 57.2; cut to the 1-10 scale it is the whole scale."""
    low, high = mean_interval([1, 10])
    assert (low, high) == pytest.approx((-51.678, 62.678), abs=1e-3)
    assert mean_interval([1, 10], scale=(1, 10)) == (1.0, 10.0)
    assert mean_interval([1.5, 8.0], scale=(1, 10)) == (1.0, 10.0)


def test_an_interval_inside_the_scale_is_unchanged_and_one_past_an_edge_is_cut_there() -> None:
    assert mean_interval([6, 8, 7, 9], scale=(1, 10)) == mean_interval([6, 8, 7, 9])
    grades = [9, 10, 10, 10, 9, 10]  # mean 9.67, t interval about 9.12 to 10.21
    low, high = mean_interval(grades)
    assert low > 9 and high > 10
    assert mean_interval(grades, scale=(1, 10)) == (low, 10.0)
    # a sum rubric's wider scale: the same grades are not cut
    assert mean_interval(grades, scale=(0, 15)) == (low, high)


def test_the_interval_with_a_scale_still_needs_two_grades_and_grades_inside_it() -> None:
    assert mean_interval([5.0], scale=(1, 10)) == (None, None)
    assert mean_interval([], scale=(1, 10)) == (None, None)
    with pytest.raises(ValueError, match="outside the scale 1-5"):
        mean_interval([3, 7], scale=(1, 5))
    with pytest.raises(ValueError, match="below the highest"):
        mean_interval([3, 4], scale=(5, 5))


# --------------------------------------------------------------------------- leaderboard


def item(row: int, *models: str | None, named: bool = True) -> JudgeItem:
    return JudgeItem(
        id=f"r{row}",
        question="Q?",
        answers=tuple(f"answer {n}" for n in range(1, len(models) + 1)),
        answer_models=models if named else None,
    )


def judgment(row: int, protocol: Protocol, *overall: float, **fields: Any) -> Judgment:
    answers = tuple(AnswerScores(criteria={"accuracy": v}, overall=v) for v in overall)
    status = Status.OK if answers else Status.UNPARSED
    return Judgment(id=f"r{row}", protocol=protocol, status=status, answers=answers, **fields)


PAIR, MULTI, SINGLE = Protocol.PAIRWISE, Protocol.MULTI, Protocol.SINGLE
ROWS = [
    (item(1, "alpha", "beta"), judgment(1, PAIR, 8, 6, winner="A")),
    (item(2, "beta", "alpha"), judgment(2, PAIR, 7, 7, winner="tie")),
    (item(3, "alpha", "gamma"), judgment(3, PAIR, 9, 4, winner="A")),
    # ranking 3, 1, 2: alpha beats gamma and beta; gamma and beta have equal overall: a tie
    (item(4, "gamma", "beta", "alpha"), judgment(4, MULTI, 5, 5, 8, ranking=(3, 1, 2))),
    (item(5, "alpha"), judgment(5, SINGLE, 6)),
    (item(6, "alpha", None), judgment(6, PAIR, 7, 3, winner="A")),  # no opponent
    (item(7, "beta", "gamma"), judgment(7, PAIR, error="no JSON")),  # unparsed
    (None, Judgment(id="line-8", protocol=None, status=Status.ERROR)),  # unreadable
    (item(9, "x", "y", named=False), judgment(9, PAIR, 9, 1, winner="A")),  # models not named
    (item(10, "beta", "beta"), judgment(10, PAIR, 6, 5, winner="A")),  # against itself
    (item(11, "delta"), judgment(11, SINGLE, 10)),  # grades only
]
ITEMS = [row[0] for row in ROWS]
JUDGMENTS = [row[1] for row in ROWS]


def test_leaderboard_counts_grades_and_comparisons() -> None:
    board = leaderboard(ITEMS, JUDGMENTS)
    assert [s.name for s in board] == ["alpha", "beta", "gamma", "delta"]
    alpha, beta, gamma, delta = board

    assert (alpha.answers, alpha.graded) == (6, 6)
    assert alpha.mean_grade == pytest.approx((8 + 7 + 9 + 8 + 6 + 7) / 6)
    assert (alpha.wins, alpha.ties, alpha.losses) == (4, 1, 0)
    assert alpha.win_rate == pytest.approx(4.5 / 5)

    assert (beta.answers, beta.graded) == (6, 5)  # row 7 unparsed; row 10 counts twice
    assert beta.mean_grade == pytest.approx((6 + 7 + 5 + 6 + 5) / 5)
    assert (beta.wins, beta.ties, beta.losses) == (0, 2, 2)
    assert beta.win_rate == pytest.approx(1 / 4)

    assert (gamma.answers, gamma.graded) == (3, 2)
    assert gamma.mean_grade == 4.5
    half = stats.t.ppf(0.975, 1) * math.sqrt(0.5) / math.sqrt(2)  # s of (4, 5) is sqrt(1/2)
    assert 4.5 - half < 1 and 4.5 + half > 10  # n = 2: the t interval spans more than 1-10
    assert (gamma.ci_low, gamma.ci_high) == (1.0, 10.0)  # cut to the library's 1-10 scale
    assert (gamma.wins, gamma.ties, gamma.losses) == (0, 1, 2)
    assert gamma.win_rate == pytest.approx(0.5 / 3)
    assert gamma.comparisons == 3

    low, high = mean_interval([8, 7, 9, 8, 6, 7])
    assert (alpha.ci_low, alpha.ci_high) == (low, high)

    # delta has the best grade but no comparison: no strength, so it comes last
    assert (delta.answers, delta.graded, delta.mean_grade) == (1, 1, 10.0)
    assert (delta.ci_low, delta.ci_high, delta.win_rate, delta.bt_strength) == (None,) * 4

    expected = bradley_terry(
        [
            ("alpha", "beta", 1.0),
            ("beta", "alpha", 0.5),
            ("alpha", "gamma", 1.0),
            ("alpha", "gamma", 1.0),
            ("alpha", "beta", 1.0),
            ("gamma", "beta", 0.5),
        ]
    )
    assert {s.name: s.bt_strength for s in board[:3]} == pytest.approx(expected)
    assert alpha.bt_strength > beta.bt_strength > gamma.bt_strength


def test_models_without_comparisons_sort_by_mean_grade() -> None:
    items = [item(1, "low"), item(2, "high"), item(3, None)]
    judgments = [judgment(1, SINGLE, 3), judgment(2, SINGLE, 9), judgment(3, SINGLE, 5)]
    board = leaderboard(items, judgments)
    assert [(s.name, s.mean_grade, s.bt_strength) for s in board] == [
        ("high", 9.0, None),
        ("low", 3.0, None),
    ]


def test_empty_and_partial_inputs() -> None:
    assert leaderboard([], []) == []
    assert leaderboard(ITEMS, []) == []  # a batch that has not judged anything yet
    assert [s.name for s in leaderboard(ITEMS, JUDGMENTS[:1])] == ["alpha", "beta"]


def test_misaligned_items_and_judgments_are_refused() -> None:
    with pytest.raises(ValueError, match="same order"):
        leaderboard(ITEMS[1:], JUDGMENTS)


def rubric_judgment(row: int, rubric_id: str, *overall: float) -> Judgment:
    """A judgment graded with a rubric (no verdict: grades only)."""
    answers = tuple(AnswerScores(criteria={}, overall=v) for v in overall)
    return Judgment(
        id=f"r{row}",
        protocol=PAIR if len(overall) == 2 else SINGLE,
        status=Status.OK,
        answers=answers,
        scenario=f"rubric:{rubric_id}",
    )


def test_the_grade_scale_is_the_librarys_or_the_rubrics_overall_range() -> None:
    points = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")  # a sum: 0-15
    library = [judgment(1, SINGLE, 7, scenario="default"), judgment(2, SINGLE, 3)]
    graded = [rubric_judgment(1, points.id, 12), rubric_judgment(2, points.id, 3)]
    assert grade_scale(library) == (1, 10)
    assert grade_scale(graded, points) == (0, 15)
    assert grade_scale(library + graded, points) == (0, 15)
    assert grade_scale(graded) is None  # a rubric's judgments without the rubric
    helpful = load_rubric(RUBRICS_DIR / "helpfulness_1to5.yaml")
    assert grade_scale(graded, helpful) is None  # another rubric than the one they used
    assert grade_scale([rubric_judgment(1, helpful.id, 4)], helpful) == (1, 5)
    assert grade_scale([]) is None
    assert grade_scale([judgment(1, PAIR, error="no JSON")]) is None  # nothing graded


def test_leaderboard_intervals_stay_inside_the_scale() -> None:
    """Two far-apart grades per model: the intervals are cut to 1-10 by default, to the
    scale passed, and not cut when a rubric's scale is unknown."""
    items = [item(1, "far", "near"), item(2, "far", "near")]
    judgments = [judgment(1, PAIR, 1, 6, winner="B"), judgment(2, PAIR, 10, 7, winner="A")]
    far, near = sorted(leaderboard(items, judgments), key=lambda s: s.name)
    assert (far.name, far.graded, far.mean_grade) == ("far", 2, 5.5)
    assert (far.ci_low, far.ci_high) == (1.0, 10.0)
    assert (near.ci_low, near.ci_high) == (1.0, 10.0)  # 6.5 +- 6.35, past both ends

    points = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")  # a sum: 0-15
    graded = [rubric_judgment(1, points.id, 1, 6), rubric_judgment(2, points.id, 14, 7)]
    board = leaderboard(items, graded, scale=grade_scale(graded, points))
    far, near = sorted(board, key=lambda s: s.name)
    assert (far.ci_low, far.ci_high) == (0.0, 15.0)  # 7.5 +- 82.6, cut to 0-15
    assert (near.ci_low, near.ci_high) == mean_interval([6, 7])  # 6.5 +- 6.35 fits in 0-15
    assert near.ci_low > 0 and near.ci_high > 10  # not cut to 1-10: the rubric's scale counts
    far, _ = sorted(leaderboard(items, graded), key=lambda s: s.name)  # the rubric not known
    assert (far.ci_low, far.ci_high) == mean_interval([1, 14])
