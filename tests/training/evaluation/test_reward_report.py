"""What a loan's rewards measure (training/evaluation/reward_report.py): the confidence scale and
the tie band fitted on the held-out fold, agreement with ties counted as Auto-J counts them."""

from __future__ import annotations

import numpy as np
import pytest

from training.evaluation.reward_report import (
    agreement,
    expected_calibration_error,
    fit_band,
    fit_scale,
)


def test_a_tie_is_right_only_where_a_tie_is_said() -> None:
    target = np.array([1.0, 0.0, 0.5, 0.5])
    probability = np.array([0.9, 0.2, 0.52, 0.8])
    assert agreement(probability, target) == 50.0  # the ties said as decisions
    assert agreement(probability, target, band=0.05) == 75.0  # 0.52 is now a tie


def test_the_scale_maps_margins_to_the_share_right() -> None:
    rng = np.random.default_rng(0)
    margins = rng.normal(0, 3, 4000)
    target = (rng.random(4000) < 1 / (1 + np.exp(-0.5 * margins))).astype(float)
    assert fit_scale(margins, target) == pytest.approx(0.5, abs=0.05)
    calibrated = 1 / (1 + np.exp(-0.5 * margins))
    assert expected_calibration_error(calibrated, target) < 3.0
    assert expected_calibration_error(1 / (1 + np.exp(-3 * margins)), target) > 10.0


def test_the_band_grows_with_the_ties_where_margins_are_small() -> None:
    probability = np.array([0.9, 0.1, 0.505, 0.495, 0.515, 0.8])
    assert fit_band(probability, np.array([1.0, 0.0, 0.5, 0.5, 0.5, 1.0])) == 0.02
    assert fit_band(probability, np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0])) == 0.0
