"""The one combiner (app/deciding/decision.py) gives the default judge's decisions as they were
before it existed: today's rule as a record (tests/golden/default_judge_record_before.yaml,
the weights the separate fits had left), applied to the signal values the engine saved, gives
every saved decision again (tests/golden/: the dev files and the held-out reference-decided
pairs, judged by the engine before the combiner)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from app.deciding.decision import (
    DecisionRecord,
    decide,
    load_decision,
)
from models.foundation.errors import ConfigError
from models.registry import MODELS_DIR, load_registry
from training.decision.reads import recorded_values

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "default_judge_decisions.jsonl.gz"
BEFORE = GOLDEN.with_name("default_judge_record_before.yaml")
SCORE_WITHIN = 1e-2  # saved values are rounded to 4 decimals, and two weights are 100
P_WITHIN = 1e-3
EVEN_ODDS = 0.01  # a score this near 0 is a coin's toss: P(A) within 0.0025 of 0.5


def default_record() -> DecisionRecord:
    entry = load_registry().get()
    assert entry.judging is not None and entry.judging.state_head is not None
    return load_decision(MODELS_DIR / Path(entry.judging.state_head).with_name("decision.yaml"))


def record_before() -> DecisionRecord:
    return load_decision(BEFORE)


def golden_rows() -> list[dict]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as rows:
        return [json.loads(line) for line in rows]


def test_the_rule_before_gives_every_saved_decision_again():
    record = record_before()
    rows = golden_rows()
    files = {row["file"] for row in rows}
    assert {"pairwise_dev.jsonl", "natural.json", "adversarial_neighbor.json"} <= files
    assert "reference-page" in files
    for row in rows:
        parts, where = row["parts"], (row["file"], row["line"])
        decision = decide(record, recorded_values(parts))
        assert decision.score == pytest.approx(parts["score"], abs=SCORE_WITHIN), where
        assert decision.p_a == pytest.approx(row["p_a"], abs=P_WITHIN), where
        for name, share in decision.shares.items():
            assert share == pytest.approx(parts[name], abs=SCORE_WITHIN), (where, name)
        if abs(decision.p_a - 0.5) > P_WITHIN:
            assert decision.leaning == row["leaning"], where
        if abs(decision.confidence - record.doubt_below) > P_WITHIN:
            assert decision.uncertain is row["uncertain"], where


def test_the_default_record_turns_no_saved_leaning_and_its_rules_say_their_fitted_confidence():
    """The rules that replaced the two weights at the fit's bound (reference_order and
    reference_behaviour, 100) decide the pairs those weights decided, at the confidence they
    earned on training pairs, not 100 %. The saved `states` are the head's before it was fitted
    again from the committed reads (training/decision/head_fit.py; its states corr > 0.9997):
    only a pair at even odds may turn."""
    record, before = default_record(), record_before()
    assert {rule.name for rule in record.rules} == {"reference_order", "reference_behaviour"}
    assert not any(abs(signal.weight) >= 100 for signal in record.signals)
    ruled = 0
    for row in golden_rows():
        values, where = recorded_values(row["parts"]), (row["file"], row["line"])
        now, then = decide(record, values), decide(before, values)
        assert now.leaning == then.leaning or abs(then.score) < EVEN_ODDS, where
        if now.rule is not None:
            ruled += 1
            assert then.confidence > 0.999 and now.confidence < 0.96, where
            fitted = next(r.confidence for r in record.rules if r.name == now.rule)
            assert now.confidence == pytest.approx(fitted)
    assert ruled == 23  # the held-out pairs with a reference order (8) or function (15)


def test_a_record_with_a_bad_field_is_refused_naming_the_file_and_field(tmp_path: Path):
    record = default_record().model_dump(mode="json")
    record["signals"][1]["weight"] = "heavy"
    path = tmp_path / "decision.yaml"
    path.write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_decision(path)
    assert str(path) in str(refused.value) and "weight" in str(refused.value)
    record["signals"][1]["weight"] = 1.0
    record["signals"].append(record["signals"][0])
    path.write_text(json.dumps(record), encoding="utf-8")
    load_decision.cache_clear()
    with pytest.raises(ConfigError, match="repeated"):
        load_decision(path)


def test_a_signal_without_a_value_adds_nothing_and_a_tie_threshold_gives_ties():
    record = record_before()
    assert decide(record, {}).leaning == "tie" and decide(record, {}).p_a == 0.5
    nudged = decide(record, {"relevance": 0.001})
    assert nudged.leaning == "A" and nudged.uncertain and nudged.p_tie == 0.0
    tied = decide(record.model_copy(update={"tie_threshold": 1.0}), {"relevance": 0.001})
    assert tied.leaning == "tie" and tied.p_tie == pytest.approx(0.462, abs=1e-3)
    assert tied.p_a + tied.p_b + tied.p_tie == pytest.approx(1.0)


@pytest.mark.parametrize("band", [0.0006, 0.05, 0.2, 0.45])
def test_a_tie_band_gives_the_threshold_at_which_a_tie_wins_exactly_inside_it(band: float):
    """A user's tie band (|P(A) - 1/2| <= band, as the reply judges read it) becomes the tie
    threshold at whose edge P(tie) = P(A): ties inside the band, A beyond it."""
    import math

    from app.deciding.decision import tie_threshold_for

    record = record_before().model_copy(update={"tie_threshold": tie_threshold_for(band)})
    edge = math.log((0.5 + band) / (0.5 - band))
    at_edge = decide(record, {"relevance": edge / record.weights()["relevance"]})
    assert at_edge.p_tie == pytest.approx(at_edge.p_a, abs=1e-9)
    for score, leaning in ((0.99 * edge, "tie"), (1.01 * edge, "A")):
        assert (
            decide(record, {"relevance": score / record.weights()["relevance"]}).leaning == leaning
        )


def test_the_default_records_grade_rule_is_the_grade_its_head_gave():
    """The grade head's intercept and likelihood weights moved from state_head.json into the
    record's grade rule (tests/golden/default_grade_before.json: what the head held); the
    rule gives the same grade from the same values, clipped to 1-10."""
    import numpy as np

    from app.deciding.decision import grade_of

    before = json.loads(GOLDEN.with_name("default_grade_before.json").read_text("utf-8"))
    rule = default_record().grade
    assert rule is not None and rule.scale == (1, 10)
    rng = np.random.default_rng(0)
    for _ in range(50):
        values = {name: float(rng.normal(scale=20)) for name in before["grade_likelihood"]}
        values["grade_states"] = float(rng.normal(scale=3))
        old = before["grade_intercept"] + values["grade_states"]
        old += sum(w * values[name] for name, w in before["grade_likelihood"].items())
        assert grade_of(rule, values) == pytest.approx(min(max(old, 1), 10), abs=1e-9)


def test_every_judge_that_decides_by_a_head_names_the_record_of_its_rule():
    """One shape for every head judge: its state_head.json holds the head's vectors alone
    (a weight beside them is refused, naming the field) and its decision record every
    weight, each record valid."""
    entries = [e for e in load_registry().models if e.judging and e.judging.state_head]
    assert len(entries) >= 4
    for entry in entries:
        assert entry.judging.decision_record, entry.name
        assert load_decision(MODELS_DIR / entry.judging.decision_record).signals


def test_the_criterion_heads_reference_weights_come_from_the_record_alone(tmp_path: Path):
    """The criterion head's reference weights and bounds are the record's criterion_shift and
    the rules it names hold the levels at their thresholds: criterion_head.npz holds the
    levels' arrays alone, and a head file that holds a reference weight is refused."""
    import numpy as np

    from app.deciding.criterion_head import CriterionHead
    from app.judging.head_decider import moved_by

    entry = load_registry().get()
    record = default_record()
    shift = record.criterion_shift
    assert shift is not None and all(signal.weight for signal in shift.signals)
    assert {"reference_words", "reference_behaviour"} <= moved_by(record)
    held = {rule.name: rule.at_least for rule in record.rules if rule.name in shift.caps}
    assert held == {"reference_order": 0.1, "reference_behaviour": 0.1}
    with np.load(MODELS_DIR / str(entry.judging.criterion_head)) as data:
        held = [k for k in data.files if k.startswith("reference_") and float(data[k])]
    assert not held  # the file holds the levels' arrays alone
    holding = tmp_path / "criterion_head.npz"
    with np.load(MODELS_DIR / str(entry.judging.criterion_head)) as data:
        np.savez(holding, **({k: data[k] for k in data.files} | {"reference_words": 1.0}))
    with pytest.raises(ConfigError, match=r"criterion_head\.npz: reference_words"):
        CriterionHead.load(holding)


def test_the_rule_that_holds_the_criterion_levels_is_the_records_own_named_rule(tmp_path: Path):
    """criterion_shift.caps names a rule of the record (its threshold and fitted confidence
    there); one the record lacks, or one weighed as a signal too, is refused naming the
    field."""
    record = default_record()
    assert record.criterion_shift is not None
    assert record.criterion_shift.caps == ("reference_order", "reference_behaviour")
    assert not any(s.weight >= 100 / 2.3783 - 1e-3 for s in record.criterion_shift.signals)
    data = record.model_dump(mode="json")
    data["rules"] = [r for r in data["rules"] if r["name"] != "reference_behaviour"]
    path = tmp_path / "decision.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"criterion_shift\.caps.*reference_behaviour"):
        load_decision(path)
