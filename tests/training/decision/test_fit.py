"""The one fitting procedure (training/decision/fit.py): an ordinal logit with ties as a third
class, signals chosen by request-grouped cross-validation against their cost, rules with a
fitted confidence, and a record the engine's combiner applies as fitted."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from scipy.special import expit

from app.deciding.decision import DecisionRecord, decide
from training.decision.fit import fit, fit_weights, record_data
from training.decision.fit_config import FitConfig, load_config
from training.decision.record_file import record_path, record_text, rule_table, tables_written

SIGNAL = {"value": "A's lead", "share": "fit", "reads": ["text"], "cost": "none"}


@pytest.fixture(autouse=True)
def drawn_signals(monkeypatch):
    """The drawn rows' signals, registered for these tests (a record names only signals
    app/deciding/signals.py knows; their values here are the rows', never read of a pair)."""
    from app.deciding import signals

    for name in ("good", "noise", "order"):
        monkeypatch.setitem(signals.SIGNALS, name, lambda reads: None)


def drawn_rows(n: int = 1200, tie_threshold: float = 0.8, seed: int = 0) -> list[dict]:
    """Pairs whose labels come from a known ordinal logit on `good` (weight 1.5), with a
    `noise` signal that tells nothing and an `order` value that decides a few pairs."""
    rng = np.random.default_rng(seed)
    rows = []
    for n_row in range(n):
        good, noise = rng.normal(scale=2.0), rng.normal()
        score = 1.5 * good
        p_a, p_b = expit(score - tie_threshold), expit(-score - tie_threshold)
        draw = rng.random()
        label = "A" if draw < p_a else "B" if draw < p_a + p_b else "tie"
        values = {"good": good, "noise": noise}
        if n_row % 20 == 0:  # the rule's pairs: right 9 times in 10
            values["order"] = 1.0
            label = "A" if n_row % 200 else "B"
        rows.append({"values": values, "label": label, "request": f"r{n_row // 2}", "set": "drawn"})
    return rows


def config(price: float = 0.0) -> FitConfig:
    return FitConfig.model_validate(
        {
            "judge": "toy",
            "folds": 5,
            "strengths": [0.1, 1.0, 10.0],
            "min_gain": 0.001,
            "price_per_second": price,
            "signals": [
                {"name": "good", **SIGNAL},
                {"name": "noise", **SIGNAL, "seconds": 1.0},
            ],
            "rules": [{"name": "order", **SIGNAL, "share": "order", "at_least": 0.5, "when": "x"}],
        }
    )


def test_the_ordinal_logit_recovers_a_known_weight_and_tie_threshold():
    rows = drawn_rows(4000)
    values = np.array([[r["values"]["good"]] for r in rows if "order" not in r["values"]])
    labels = np.array(
        [{"A": 0, "B": 1, "tie": 2}[r["label"]] for r in rows if "order" not in r["values"]]
    )
    found = fit_weights(values, labels, ("good",), c=100.0)
    assert found.weights[0] == pytest.approx(1.5, rel=0.1)
    assert found.tie_threshold == pytest.approx(0.8, rel=0.15)
    without_ties = fit_weights(values[labels < 2], labels[labels < 2], ("good",), c=100.0)
    assert without_ties.tie_threshold == 0.0


def test_a_signal_that_does_not_earn_its_cost_is_left_out_and_rules_get_a_fitted_confidence():
    found = fit(drawn_rows(), config(price=0.01))
    assert found.choice.names == ("good",)
    assert [n for n, _ in found.choice.dropped] == ["noise"]
    (rule,) = found.rules
    assert (rule.name, rule.decided, rule.right) == ("order", 60, 54)
    assert rule.confidence == pytest.approx(55 / 62)
    assert len(found.pairs.labels) == 1140  # the rule's pairs leave the weights' fit


def test_the_written_record_is_what_the_combiner_applies():
    cfg = config(price=0.01)
    found = fit(drawn_rows(), cfg)
    text = record_text(record_data(cfg, found, doubt_below=0.55))
    record = DecisionRecord.model_validate(yaml.safe_load(text))
    assert record.weights() == {"good": pytest.approx(found.weights.weights[0], abs=1e-6)}
    assert record.tie_threshold == pytest.approx(found.weights.tie_threshold, abs=1e-4)
    # the weights' pairs get the fit's probabilities; a rule's pairs its confidence
    probabilities = found.weights.probabilities(np.array([[0.3]]))[0]
    decision = decide(record, {"good": 0.3, "noise": 5.0})
    assert (decision.p_a, decision.p_tie) == pytest.approx(
        (probabilities[0], probabilities[2]), abs=1e-3
    )
    ruled = decide(record, {"good": 3.0, "order": -1.0})
    assert ruled.rule == "order" and ruled.leaning == "B"
    assert ruled.confidence == pytest.approx(record.rules[0].confidence)
    assert sum(ruled.shares.values()) == pytest.approx(ruled.score)  # the rule's share fills it
    table = rule_table(record)
    assert "`good`" in table and "`order`" in table and f"{record.rules[0].confidence:.1%}" in table


def test_a_tie_is_the_verdict_where_it_is_likelier_than_either_answer():
    record = DecisionRecord.model_validate(
        {
            "judge": "toy",
            "signals": [
                {"name": "good", "weight": 1.0, **SIGNAL, "fitted": {"by": "x", "rows": "y"}}
            ],
            "tie_threshold": 1.0,
            "doubt_below": 0.5,
        }
    )
    assert decide(record, {"good": 0.1}).leaning == "tie"
    assert decide(record, {"good": 2.0}).leaning == "A"
    assert decide(record, {"good": -2.0}).leaning == "B"


def test_the_default_judges_candidates_load_and_name_their_costs():
    loaded = load_config()
    assert loaded.judge == "pj-qwen15-likelihood"
    names = [s.name for s in loaded.signals]
    assert "states" in names and "reference_words" in names
    assert {r.name for r in loaded.rules} == {"reference_order", "reference_behaviour"}


def test_the_cards_and_the_docs_tables_of_the_rule_are_written_from_the_record():
    written = tables_written(record_path())
    assert len(written) == 2  # the default judge's card and docs/reference.md
    for target, text in written.items():
        assert target.read_text(encoding="utf-8") == text, "python -m training.decision.record_file"


def test_the_pairs_a_candidates_own_weights_were_fitted_on_leave_the_fit():
    """A signal's value is in-sample on the pairs its own weights were fitted on (the state
    head's states on its fitting set): those pairs leave the weights' fit, whatever they say."""
    rows = drawn_rows()
    seen = [r | {"seen_by": ["good"], "label": "A"} for r in drawn_rows(300, seed=1)]
    alone, joined = fit(rows, config()), fit(rows + seen, config())
    assert joined.seen == 285  # 15 of the 300 a rule decides
    assert len(joined.pairs.labels) == len(alone.pairs.labels)
    assert joined.weights.weights == pytest.approx(alone.weights.weights)
    others = [r | {"seen_by": ["elsewhere"]} for r in drawn_rows(300, seed=1)]
    assert fit(rows + others, config()).seen == 0  # a signal that is not a candidate


def test_a_fit_config_names_only_known_fits():
    data = config().model_dump(mode="json") | {"fitted_on": {"good": "nowhere"}}
    with pytest.raises(ValueError, match=r"fitted_on\.good: unknown fit 'nowhere'"):
        FitConfig.model_validate(data)
    assert load_config().fitted_on == {"states": "state_head"}


def test_held_weights_stay_as_the_record_has_them_and_the_rest_is_fitted_around_them():
    """A held signal (fitted by its own fit, named in the record) is an offset: the free
    signal's weight is the one the labels were drawn with, and the record keeps the held one
    with where it was fitted."""
    rng = np.random.default_rng(3)
    rows = []
    for n in range(4000):
        good, noise = rng.normal(scale=2.0), rng.normal()
        label = "A" if rng.random() < expit(1.5 * good + 1.0 * noise) else "B"
        values = {"good": good, "noise": noise}
        rows.append({"values": values, "label": label, "request": f"r{n}", "set": "drawn"})
    cfg = config().model_copy(update={"held": ("good",), "strengths": (1000.0,)})
    found = fit(rows, cfg, {"good": 1.5})
    assert found.choice.names == ("noise",)
    assert found.weights.weights[0] == pytest.approx(1.0, rel=0.1)
    kept = DecisionRecord.model_validate(
        {
            "judge": "toy",
            "signals": [
                {"name": "good", "weight": 1.5, **SIGNAL, "fitted": {"by": "its own", "rows": "x"}}
            ],
            "doubt_below": 0.5,
        }
    )
    data = record_data(cfg, found, 0.55, kept)
    record = DecisionRecord.model_validate(data)
    assert record.weights()["good"] == 1.5 and record.signals[0].fitted.by == "its own"
    assert record.weights()["noise"] == pytest.approx(found.weights.weights[0], abs=1e-6)
    with pytest.raises(ValueError, match="the judge's record has no weight of good"):
        fit(rows, cfg, {})
    with pytest.raises(ValueError, match="held: 'other' is not one of the signals"):
        FitConfig.model_validate(config().model_dump(mode="json") | {"held": ["other"]})


def test_the_own_answers_candidates_are_fitted_apart_around_the_held_signals():
    from training.decision.fit_config import load_config

    config = load_config()
    apart = config.own_answer_part()
    names = {s.name for s in apart.signals}
    assert set(config.held) <= names and not apart.rules
    assert {s.name for s in apart.signals if s.name not in config.held} == {
        s.name for s in config.signals if s.own_answer
    }
    assert not any(s.reference for s in apart.signals)


def test_a_parts_last_candidate_is_kept_only_where_it_earns_its_cost_over_the_held_signals():
    """A part fitted apart around held signals (the reward model's) may choose none: its one
    candidate is weighed against the held signals alone, and left out where it does not earn
    its price; a candidate that tells is kept."""
    from training.decision.fit import choose_signals, pairs_of

    rows = drawn_rows()
    cfg = config(0.02)  # noise costs 1 s a pair: it must gain 0.021 nats a pair
    choice = choose_signals(pairs_of(rows, ["noise"], {"good": 1.5}), cfg)
    assert choice.names == () and [name for name, _ in choice.dropped] == ["noise"]
    # a candidate that tells (the held weight is half the labels' own) is kept
    telling = [r | {"values": r["values"] | {"noise": r["values"]["good"]}} for r in rows]
    choice = choose_signals(pairs_of(telling, ["noise"], {"good": 0.75}), cfg)
    assert choice.names == ("noise",)


def test_a_candidate_dearer_than_the_configs_bound_is_not_tried():
    """`max_seconds` is a cost bound (issue 64: the judge's own answer may cost a pair at most
    as much again as the verdict alone): `noise` (1 s) is fitted under a bound of 2 s, not
    under 0.5 s, whatever it would earn."""
    rows = drawn_rows()
    assert config().model_copy(update={"max_seconds": 2.0}).free() == ["good", "noise"]
    bounded = config().model_copy(update={"max_seconds": 0.5})
    assert bounded.free() == ["good"]
    assert fit(rows, bounded).choice.names == ("good",)
    shipped = load_config()
    assert not any(name.endswith("_sure") for name in shipped.free())  # a written answer
    assert "self_reference_likelihood_computed" in shipped.free()


def test_the_own_answers_chosen_signals_join_the_record_with_their_own_fit():
    """Fitted apart around the held weights (`apart_signals`), the own answer's chosen
    signal joins the record with where it was fitted; a held one is not written twice."""
    from training.decision.fit import apart_signals

    rng = np.random.default_rng(5)
    rows = []
    for n in range(3000):
        good, noise = rng.normal(scale=2.0), rng.normal()
        label = "A" if rng.random() < expit(1.5 * good + 1.0 * noise) else "B"
        rows.append(
            {"values": {"good": good, "noise": noise}, "label": label, "request": f"r{n}"}
            | {"set": "drawn"}
        )
    data = config().model_dump(mode="json", exclude_defaults=True)
    data["signals"][1] |= {"own_answer": True}  # noise: the own answer's, fitted apart
    cfg = FitConfig.model_validate(data | {"held": ["good"], "strengths": [1000.0]})
    kept = DecisionRecord.model_validate(
        {
            "judge": "toy",
            "signals": [
                {"name": "good", "weight": 1.5, **SIGNAL, "fitted": {"by": "its own", "rows": "x"}}
            ],
            "doubt_below": 0.5,
        }
    )
    apart, chosen = apart_signals(cfg.own_answer_part(), rows, {"good": 1.5}, kept)
    assert apart.choice.names == ("noise",)
    assert [s["name"] for s in chosen] == ["noise"]
    assert chosen[0]["weight"] == pytest.approx(1.0, rel=0.1)
    assert "3000 training pairs" in chosen[0]["fitted"]["rows"]
    record = DecisionRecord.model_validate(
        {"judge": "toy", "signals": [*kept.model_dump(mode="json")["signals"], *chosen]}
        | {"doubt_below": 0.5}
    )
    assert record.weights() == {"good": 1.5, "noise": chosen[0]["weight"]}
