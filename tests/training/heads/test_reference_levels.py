"""The criterion head's reference shift (training/heads/reference_levels.py): chosen by the
criteria's own cross-validated decision, in level points, and read on held-out pairs."""

from __future__ import annotations

import numpy as np
import pytest

from training.heads.reference_levels import accuracies, chosen, render, report


def _table(pairs: int, seed: int) -> dict[str, np.ndarray]:
    """Pairs whose criteria lean to the polished wrong answer; the reference's words tell
    the right one; its likelihood and the judge's check are noise."""
    rng = np.random.default_rng(seed)
    a_wins = (np.arange(pairs) % 2).astype(float)
    sign = 2 * a_wins - 1
    return {
        "levels": -0.4 * sign + 0.1 * rng.normal(size=pairs),  # wrong way round
        "words": 0.5 * sign + 0.05 * rng.normal(size=pairs),
        "lead": rng.normal(size=pairs),
        "check": rng.normal(size=pairs),
        "order": np.zeros(pairs),  # the reference restates no items of the request
        "head": -sign,
        "longer": -sign * 10.0,
        "a_wins": a_wins,
        "request": np.array([f"q{n // 2}" for n in range(pairs)]),
        "family": np.array(["capitals" if n % 3 else "sorting" for n in range(pairs)]),
    }


def test_the_words_turn_criteria_that_favour_the_wrong_answer():
    train = _table(60, 1)
    found = chosen(train, k=2.0)
    assert found["chosen"] in ("the reference's words", "both")
    assert found["candidates"]["the reference's words"]["cv_accuracy"] == pytest.approx(1.0)
    weights = found["weights"]
    assert weights["reference_words"] > 0.8 / 0.5  # enough to outweigh the criteria's lead
    scores = accuracies(train, weights)
    assert scores["the criteria with the reference"] == 100.0
    assert scores["the criteria without it"] == 0.0


def test_the_weights_are_level_points_of_the_scale_k_sets():
    train = _table(60, 2)
    small, large = chosen(train, k=1.0), chosen(train, k=4.0)
    # the fit's logits are k times the level points: a larger k, proportionally smaller
    ratio = small["weights"]["reference_words"] / large["weights"]["reference_words"]
    assert ratio == pytest.approx(4.0, rel=0.05)


def test_the_report_reads_the_held_out_pairs_by_family():
    result = report(_table(60, 3), _table(30, 4), k=2.0)
    assert result["test_pairs"] == 30
    assert set(result["test_by_family"]) == {"capitals", "sorting"}
    assert result["test"]["the criteria with the reference"] == 100.0
    assert "k = 2.0 logits per level point" in render(result)


def test_the_likelihoods_bound_is_the_fits_largest_and_held_out_leads_stay_within_it():
    train = _table(60, 5)
    train["lead"] = 0.3 * (2 * train["a_wins"] - 1)  # the likelihood tells the right answer
    train["words"] = np.zeros(60)  # the words nothing
    weights = chosen(train, k=2.0)["weights"]
    assert weights["reference_likelihood_bound"] == pytest.approx(0.15)
    far = {**train, "lead": 50.0 * (2 * train["a_wins"] - 1)}
    # a lead far beyond the fit's counts as the largest it saw: the same decisions
    assert accuracies(far, weights) == accuracies(train, weights)


def test_the_check_turns_criteria_where_only_it_tells_the_right_answer():
    train = _table(60, 6)
    train["check"] = 2.0 * (2 * train["a_wins"] - 1)  # the judge's check tells it
    train["words"] = np.zeros(60)
    found = chosen(train, k=2.0)
    assert found["chosen"] == "both and the judge's check"
    assert found["weights"]["reference_check"] > 0.8 / 2.0
    assert found["weights"]["reference_check_bound"] == pytest.approx(1.0)  # half the largest
    assert accuracies(train, found["weights"])["the criteria with the reference"] == 100.0


def test_the_order_turns_criteria_where_the_words_cannot_tell():
    """Sorting pairs: both answers state every item, only the order tells them apart."""
    train = _table(60, 7)
    sorting = train["family"] == "sorting"
    train["words"] = np.where(sorting, 0.0, train["words"])
    train["order"] = np.where(sorting, 0.2 * (2 * train["a_wins"] - 1), 0.0)
    found = chosen(train, k=2.0)
    assert found["chosen"] in ("the words and the order", "both, the check and the order")
    assert found["weights"]["reference_order"] > 0
    assert accuracies(train, found["weights"])["the criteria with the reference"] == 100.0


def test_no_weight_is_fitted_for_the_codes_behaviour_the_records_rule_decides_it():
    """Code pairs are the record's rule's (reference_behaviour: it decides them and holds
    the levels, criterion_shift.caps): the shift fits no weight for their behaviour, which
    sat at the fit's bound when it did (42.0475 level points = 100 logits / k)."""
    train = _table(80, 5)
    train["behaviour"] = 0.6 * (2 * train["a_wins"] - 1)  # separable: a weight would run off
    found = chosen(train, k=2.0)
    assert "reference_behaviour" not in found["weights"] and "stacked_weight" not in found
    assert "code run" not in render(report(train, _table(40, 6), k=2.0))


def test_the_fitted_shift_is_written_into_the_judges_record_and_out_of_its_head(tmp_path):
    """`--write`: the weights go to the decision record's criterion_shift (one place), the
    criterion head's file keeps its arrays with no shift weight of its own."""
    from dataclasses import replace

    from app.deciding.criterion_head import CriterionHead, shift_fields
    from app.deciding.decision import load_decision
    from models.registry import MODELS_DIR, load_registry
    from training.decision.record_file import record_path
    from training.heads.reference_levels import write_shift

    record = tmp_path / "decision.yaml"
    record.write_text(record_path().read_text(encoding="utf-8"), encoding="utf-8")
    shipped = CriterionHead.load(MODELS_DIR / str(load_registry().get().judging.criterion_head))
    fitted = replace(shipped, reference_words=1.5, reference_check=0.5, reference_check_bound=0.8)
    head = tmp_path / "criterion_head.npz"
    write_shift(fitted, head, str(record))
    signals = {s.name: s for s in load_decision(record).criterion_shift.signals}
    assert {name: s.weight for name, s in signals.items()} == {
        "reference_words": 1.5,
        "reference_check": 0.5,
    }
    assert signals["reference_check"].bounds == (-0.8, 0.8)
    assert load_decision(record).criterion_shift.caps == ("reference_behaviour",)  # kept
    assert shift_fields(CriterionHead.load(head)) == []
