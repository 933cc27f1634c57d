"""The decision fit's head stage (training/decision/head_fit.py) and its whole pairwise part,
run from the committed caches: the one command gives the default judge's record and head
again, and its L2 strength is chosen inside its grid."""

from __future__ import annotations

import numpy as np
import pytest

from app.deciding.decision import load_decision
from training.decision.fit_config import load_config
from training.decision.record_file import record_path


@pytest.fixture(scope="module")
def shipped():
    from training.decision.in_sample import judge_head

    record = load_decision(record_path())
    return record, judge_head(record.judge)[1]


def test_the_committed_reads_fit_the_default_head_and_its_weights_again(shipped):
    from training.decision.head_fit import fitted_head

    record, head = shipped
    found = fitted_head(record.judge)
    assert len(found.head.weights) == len(head.weights) == 3072
    assert np.allclose(found.head.weights, head.weights, rtol=1e-4, atol=1e-9)
    assert found.head.fitted_on == head.fitted_on
    weights = record.weights()
    assert set(found.weights) == {"states", *load_config().held}
    for name, weight in found.weights.items():
        assert weight == pytest.approx(weights[name], rel=1e-4), name
        assert next(s for s in record.signals if s.name == name).fitted == found.fitted


def test_the_grade_stage_fits_the_default_grade_again_from_the_committed_reads(shipped):
    """The grade stage: every rated single answer of the fitting split, from the committed
    llama.cpp reads, gives the shipped grade (fitted on a GPU's torch reads of the same
    answers) again, closely: the same signals, the grade vector in the same direction, the
    intercept within 0.05. Not adopted (training/EXPERIMENTS.md, session 51)."""
    from app.deciding.decision import GradeRule
    from training.decision.head_fit import GRADE_BY, fitted_grade

    record, head = shipped
    data, refitted = fitted_grade(record.judge, head)
    rule = GradeRule.model_validate(data)
    old, new = np.asarray(head.grade_weights), np.asarray(refitted.grade_weights)
    assert np.corrcoef(old, new)[0, 1] > 0.9999
    assert np.linalg.norm(new) / np.linalg.norm(old) == pytest.approx(1.0, abs=0.05)
    assert refitted.weights == head.weights and refitted.fitted_on == head.fitted_on
    assert rule.intercept == pytest.approx(record.grade.intercept, abs=0.05)
    assert rule.weights().keys() == record.grade.weights().keys()
    assert rule.fitted.by == GRADE_BY and rule.fitted.rows.startswith("799 rated single answers")


def test_the_committed_cache_gives_the_records_pairwise_weights_and_rules_again(shipped):
    """The pairwise part, fitted around the head's weights from the cache of reads: the
    signals, weights, rules and tie threshold the default's record holds, its strength
    inside the grid; the judge's own answer's signals fitted apart from the pairs read with
    it, and the reward model's on the requests it never trained on, as the record holds them."""
    from training.decision.fit import apart_signals, fit
    from training.decision.reads import OUT, OWN_READS, labelled_rows, with_labels, with_own_reads
    from training.decision.reward_reads import held_out_rows

    record, _ = shipped
    config = load_config()
    rows = labelled_rows(OUT, config.fitted_on, config.judge)
    held = {n: w for n, w in record.weights().items() if n in config.held}
    found = fit(rows, config.main_part(), held)
    weights = record.weights()
    own = {s.name: s.weight for s in record.signals if s.own_answer}
    own_rows = with_labels(with_own_reads([], OWN_READS), config.fitted_on, config.judge)
    _, chosen = apart_signals(config.own_answer_part(), own_rows, held, record)
    assert {s["name"]: s["weight"] for s in chosen} == pytest.approx(own, rel=1e-4)
    # the reward model, fitted apart on the requests its loan held out: as the record has it
    rewarded = with_labels(held_out_rows(), config.fitted_on, config.judge)
    _, chosen = apart_signals(config.reward_part(), rewarded, held, record)
    assert {s["name"]: s["weight"] for s in chosen} == {
        s.name: s.weight for s in record.signals if "reward" in s.reads
    }
    assert set(found.choice.names) == set(weights) - set(held) - set(own)
    for name, weight in zip(found.weights.names, found.weights.weights):
        assert weight == pytest.approx(weights[name], rel=1e-4), name
    assert found.weights.tie_threshold == pytest.approx(record.tie_threshold, abs=1e-4)
    assert {r.name: round(r.confidence, 4) for r in found.rules} == {
        r.name: r.confidence for r in record.rules
    }
    assert min(config.strengths) < found.choice.strength < max(config.strengths)


def test_the_strength_is_the_strongest_penalty_within_a_standard_error_of_the_lowest_loss():
    """Separable pairs (with a margin, as the reference-decided ones): the loss falls on as
    the penalty weakens, and the lowest is at the grid's end; the rule stops inside it, where
    more C buys less than `min_gain`. Pairs with noise: the rule stays near the lowest loss."""
    from training.decision.fit_config import FitConfig
    from training.decision.logit import Pairs, best_strength, folds_of, out_of_fold

    rng = np.random.default_rng(0)
    value = rng.normal(size=(400, 1))
    value += np.sign(value)  # no pair within 1 of even
    separable = np.where(value[:, 0] > 0, 0, 1)
    noisy = np.where(rng.random(400) < 1 / (1 + np.exp(-value[:, 0])), 0, 1)
    grid = (0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)
    signal = {"name": "x", "value": "A's lead", "share": "fit", "reads": ["text"], "cost": "none"}
    config = FitConfig.model_validate(
        {
            "judge": "toy",
            "folds": 5,
            "strengths": grid,
            "min_gain": 0.001,
            "price_per_second": 0.0,
            "signals": [signal],
        }
    )
    groups = np.array([f"r{n // 2}" for n in range(400)])
    for labels, inside in ((separable, True), (noisy, False)):
        pairs = Pairs(
            ("x",), value, np.ones_like(value, bool), labels, groups, groups, np.zeros(400)
        )
        fold = folds_of(groups, 5)
        c, loss, _ = best_strength(pairs, ["x"], config, fold)
        losses = {
            g: float(np.mean(-np.log(_chosen(out_of_fold(pairs, ["x"], g, fold), labels))))
            for g in grid
        }
        assert loss == pytest.approx(losses[c])
        if inside:
            assert min(losses.values()) == losses[grid[-1]] and c < grid[-1]
        assert loss - min(losses.values()) < 0.02


def _chosen(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return np.clip(probabilities[np.arange(len(labels)), labels], 1e-12, 1.0)
