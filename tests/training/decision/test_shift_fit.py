"""The criterion head's reference shift by the one procedure (training/decision/shift_fit.py):
chosen by request-grouped CV with the pairwise fit's penalised logit around the criterion
head's own lead, in level points, the pairs a rule decides left to the rule."""

from __future__ import annotations

import numpy as np
import pytest

from app.deciding.decision import DecisionRecord
from training.decision.record_file import record_path
from training.decision.shift_fit import (
    accuracies,
    cap_rules,
    chosen,
    render,
    report,
    shift_section,
    shift_table,
)


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
        "behaviour": np.zeros(pairs),
        "ruled": np.zeros(pairs),  # no rule decides
        "head": -sign,
        "longer": -sign * 10.0,
        "a_wins": a_wins,
        "request": np.array([f"q{n // 2}" for n in range(pairs)]),
        "family": np.array(["capitals" if n % 3 else "sorting" for n in range(pairs)]),
    }


def _record() -> DecisionRecord:
    from app.deciding.decision import load_decision

    return load_decision(record_path())


def test_the_words_turn_criteria_that_favour_the_wrong_answer():
    train = _table(60, 1)
    found = chosen(train, k=2.0)
    assert found["chosen"] == "the reference's words"  # the cheapest that does it
    assert found["candidates"]["the reference's words"]["cv_accuracy"] == pytest.approx(1.0)
    weights = found["weights"]
    assert weights["reference_words"] > 0.8 / 0.5  # enough to outweigh the criteria's lead
    scores = accuracies(train, weights)
    assert scores["the criteria with the reference"] == 100.0
    assert scores["the criteria without it"] == 0.0


def test_separable_pairs_give_a_penalised_weight_far_from_any_bound():
    """The words tell every pair: an unpenalised fit would run to its bound (100 logits);
    the penalised logit stops where the CV log loss is lowest."""
    train = _table(60, 2)
    train["words"] = 2 * train["a_wins"] - 1
    weight = chosen(train, k=2.0)["weights"]["reference_words"]
    assert 0.8 < weight < 0.5 * 100 / 2.0


def test_the_report_reads_the_held_out_pairs_by_family():
    result = report(_table(60, 3), _table(30, 4), k=2.0)
    assert result["test_pairs"] == 30 and result["ruled_pairs"] == (0, 0)
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


def test_the_pairs_a_rule_decides_are_the_rules_not_the_fits():
    """Sorting pairs: both answers state every item, only the order tells them apart; the
    record's rule `reference_order` decides them (and holds the levels), so no weight is
    fitted on them and the criteria's decision there is the rule's."""
    train = _table(60, 7)
    sorting = train["family"] == "sorting"
    train["words"] = np.where(sorting, 0.0, train["words"])
    train["order"] = np.where(sorting, 0.5 * (2 * train["a_wins"] - 1), 0.0)
    rules = cap_rules(_record())
    assert [name for name, _ in rules] == ["reference_order", "reference_behaviour"]
    from training.decision.shift_fit import ruled

    train["ruled"] = ruled(train, rules)
    assert (train["ruled"] != 0).sum() == sorting.sum()
    found = chosen(train, k=2.0)
    assert "reference_order" not in found["weights"]
    assert accuracies(train, found["weights"])["the criteria with the reference"] == 100.0


def test_the_shift_section_names_the_caps_and_where_it_was_fitted():
    result = report(_table(60, 1), _table(30, 4), k=2.0)
    section = shift_section(result, _record())
    assert section["caps"] == ["reference_order", "reference_behaviour"]
    (words,) = section["signals"]
    assert words["name"] == "reference_words" and words["weight"] > 0
    assert "training.decision.fit --sections criterion_shift" in words["fitted"]["by"]
    assert "log loss" in words["fitted"]["cv"]


def test_the_committed_cache_gives_the_records_shift_again():
    """The one cache's reference-decided pairs (their values and the criterion head's leads,
    training/decision/levels.py) fit the default's criterion_shift as its record holds it."""
    from training.decision.fit_config import load_config

    record = _record()
    train = shift_table("train", record)
    assert len(train["a_wins"]) == 161
    result = report(train, shift_table("test", record), load_config().logits_per_level)
    assert shift_section(result, record) == record.criterion_shift.model_dump(
        mode="json", exclude_defaults=True
    )
    assert result["test"]["the criteria with the reference"] == 100.0
