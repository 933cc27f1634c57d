"""A judge's confidence calibration (app/deciding/calibration.py) and its fitting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule
from app.deciding.calibration import ConfidenceCalibration, load_calibration
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.records import Judgment, Protocol, Status
from models.foundation.errors import ConfigError
from tests.app.judging.test_service import item, pair_json
from tests.support.fake_backend import FakeBackend
from training.evaluation.meta_metrics import calibration_error
from training.heads.confidence_calibration import isotonic_points

MAP = ConfidenceCalibration(at=(0.5, 0.7, 0.9), right=(0.3, 0.5, 0.8))
ENTROPY_MAP = ConfidenceCalibration(indicator="entropy", at=(0.2, 1.0, 3.0), right=(0.8, 0.6, 0.4))


def test_the_map_interpolates_and_is_flat_outside() -> None:
    assert MAP(0.6) == 0.4
    assert MAP(0.2) == 0.3 and MAP(1.0) == 0.8


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"at": [0.5, 0.7], "right": [0.6, 0.4]}, "must not decrease"),
        ({"at": [0.7, 0.5], "right": [0.4, 0.6]}, "increasing order"),
        ({"at": [0.5], "right": [0.4, 0.6]}, "same number"),
        ({"at": [0.5], "right": [1.4]}, "between 0 and 1"),
        ({"at": [1.5], "right": [0.4]}, "between 0 and 1"),
        ({"indicator": "entropy", "at": [0.5, 1.0], "right": [0.4, 0.6]}, "must not increase"),
        ({"indicator": "entropy", "at": [-0.1], "right": [0.4]}, "never below 0"),
        ({"indicator": "perplexity", "at": [0.5], "right": [0.4]}, "indicator"),
        ({"confidence": [0.5], "right": [0.4]}, "at: required"),  # the old field name
    ],
)
def test_a_bad_file_names_itself(tmp_path: Path, fields: dict, says: str) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(fields))
    with pytest.raises(ConfigError) as error:
        load_calibration(path)
    assert str(path) in str(error.value) and says in str(error.value)


def test_the_shipped_calibration_loads_and_rises() -> None:
    shipped = load_calibration(
        Path(__file__).resolve().parents[3] / "models/judges/pj-qwen15-head/calibration.json"
    )
    assert shipped(0.55) <= shipped(0.75) <= shipped(0.95)
    assert shipped.fitted_on["pairs"] > 900


def test_an_entropy_map_falls_and_reads_the_judgments_entropy() -> None:
    assert ENTROPY_MAP(0.6) == 0.7 and ENTROPY_MAP(5.0) == 0.4 and ENTROPY_MAP(0.0) == 0.8
    judgment = Judgment(
        id="x", protocol=Protocol.PAIRWISE, status=Status.OK, winner="A", confidence=0.9
    )
    assert ENTROPY_MAP.of(judgment) is None  # no entropy read: nothing to map
    assert ENTROPY_MAP.of(judgment.model_copy(update={"entropy": 1.0})) == 0.6
    assert MAP.of(judgment) == MAP(0.9)


def test_a_verdict_a_reference_moved_keeps_its_records_confidence() -> None:
    """The map is fitted on pairs without a reference; where one moved a head's verdict
    (a rule, or the reference's signals) the record's own fitted confidence stands."""
    judgment = Judgment(
        id="x", protocol=Protocol.PAIRWISE, status=Status.OK, winner="A", confidence=0.93
    )
    assert MAP.of(judgment.model_copy(update={"verdict_parts": {"states": 0.4}})) == MAP(0.93)
    moved = judgment.model_copy(update={"verdict_parts": {"reference": 2.6, "score": 3.0}})
    assert MAP.of(moved) is None
    own = judgment.model_copy(update={"verdict_parts": {"own_answer": 2.6, "score": 3.0}})
    assert MAP.of(own) is None  # the judge's own answer in a reference's place: the same


def test_the_default_judges_map_is_fitted_again_from_its_committed_reads() -> None:
    """The default's map (training.heads.confidence_calibration record): its record's
    confidence on its 811 natural Auto-J training pairs, states out of fold, mapped to the
    share right; refitted from the committed reads it is the shipped file, and it brings the
    error on those pairs down out of fold."""
    import argparse

    from training.heads.confidence_calibration import fit_record

    shipped = load_calibration(
        Path(__file__).resolve().parents[3] / "models/judges/pj-qwen15-likelihood/calibration.json"
    )
    again = fit_record(argparse.Namespace(judge=None, sets=["autoj"]))
    assert again.at == shipped.at and again.right == shipped.right
    assert again.fitted_on["pairs"] == 811
    assert again.fitted_on["out_of_fold_ece"] < again.fitted_on["ece_before"] / 3
    assert shipped(0.55) <= shipped(0.75) <= shipped(0.95) < 0.75  # right about half the time


def test_every_judgment_gets_its_calibrated_confidence() -> None:
    rule = ScoringRule(load_catalog().specs_for("default"))
    # both orders say the first answer is better: A, then B once mapped back
    backend = FakeBackend([pair_json(rule, 8, 4), pair_json(rule, 4, 8)])
    config = JudgeConfig(mode="generate", detect_scenario=False, parts=JudgeParts(calibrator=MAP))
    judgment = JudgeService(backend, "fake").judge(item("Paris.", "Lyon."), config)
    assert judgment.confidence is not None
    assert judgment.calibrated_confidence == MAP(judgment.confidence)


def test_isotonic_points_are_monotone_and_reduce_the_error() -> None:
    rng = np.random.default_rng(0)
    confidence = rng.uniform(0.5, 1.0, 2000)
    right = (rng.uniform(size=2000) < confidence - 0.2).astype(float)  # over-confident
    xs, ys = isotonic_points(confidence, right)
    assert xs == sorted(xs) and ys == sorted(ys)
    before = calibration_error(confidence, right)
    after = calibration_error(np.interp(confidence, xs, ys), right)
    assert before > 15 and after < 5
