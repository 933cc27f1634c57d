"""A state head measured on the evaluation files' committed reads (training/decision/measure.py
`--head`): under the shipped head they give the engine's saved values and verdicts, so a head
fitted again is measured there without judging the files again."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from app.deciding.decision import decide, load_decision
from models.registry import load_registry
from training.decision.in_sample import judge_head
from training.decision.measure import SAVED, saved_rows, under_head
from training.decision.reads import recorded_values
from training.decision.record_file import record_path


@pytest.fixture(scope="module")
def shipped():
    record = load_decision(record_path())
    head_file, _ = judge_head(record.judge)
    return record, head_file, load_registry().get(record.judge).path()


def test_the_evaluation_reads_under_the_shipped_head_give_the_saved_values_and_verdicts(shipped):
    record, head_file, gguf = shipped
    rows = saved_rows(SAVED)
    again = under_head(rows, head_file, gguf)
    # every saved pair was read: the dev files, the held-out pairs with and without references
    assert len(again) == len(rows) == 290 + 100 + 134 + 84 + 84
    saved = [recorded_values(row["parts"]) for row in rows]
    read = [recorded_values(row["parts"]) for row in again]
    states = np.array([[s["states"], r["states"]] for s, r in zip(saved, read)])
    # half precision, and the engine reads a pair's answers in one batch: close, not equal
    assert np.corrcoef(states.T)[0, 1] > 0.999
    assert np.max(np.abs(states[:, 0] - states[:, 1])) < 0.1
    scores = [decide(record, values).score for values in saved]
    again_scores = [decide(record, values).score for values in read]
    turned = [n for n, (s, a) in enumerate(zip(scores, again_scores)) if (s > 0) != (a > 0)]
    assert all(abs(scores[n]) < 0.05 for n in turned)  # only a pair at even odds may turn


def test_another_head_is_what_the_states_are_read_under(shipped, tmp_path):
    _, head_file, gguf = shipped
    data = json.loads(head_file.read_text(encoding="utf-8"))
    data["weights"] = [-w for w in data["weights"]]
    turned_round = tmp_path / "state_head.json"
    turned_round.write_text(json.dumps(data), encoding="utf-8")
    rows = saved_rows(SAVED)[:40]
    shipped_values = [recorded_values(r["parts"]) for r in under_head(rows, head_file, gguf)]
    other_values = [recorded_values(r["parts"]) for r in under_head(rows, turned_round, gguf)]
    assert len(shipped_values) == len(other_values) == len(rows)
    assert all(
        s["states"] == pytest.approx(-o["states"], abs=1e-9) and s["pmi_mean"] == o["pmi_mean"]
        for s, o in zip(shipped_values, other_values)
    )


def test_the_held_out_grades_are_a_records_grade_rule_on_their_committed_reads(shipped, tmp_path):
    """The held-out rated single answers are read whole; the shipped grade rule and vector
    on those reads correlate with the ratings as the engine's `make eval` measured them (its
    model card: 0.379; read again, so close, not equal), and the grade vector is what they
    are read under."""
    from training.decision.measure import held_out_grades

    record, head_file, gguf = shipped
    said = held_out_grades({"shipped": record}, {"shipped": head_file}, gguf)
    assert said.startswith("held-out grades (160 rows)"), said
    assert float(re.search(r"shipped (-?[\d.]+)", said)[1]) == pytest.approx(0.379, abs=0.02)
    data = json.loads(head_file.read_text(encoding="utf-8"))
    data["grade_weights"] = [-w for w in data["grade_weights"]]
    turned_round = tmp_path / "state_head.json"
    turned_round.write_text(json.dumps(data), encoding="utf-8")
    said = held_out_grades({"turned": record}, {"turned": turned_round}, gguf)
    assert float(re.search(r"turned (-?[\d.]+)", said)[1]) < 0


def test_the_record_is_measured_without_each_new_signal_and_without_them_all():
    """The table beside the record: without each own-answer signal, without them all, and
    without the reward model's."""
    from training.decision.measure import without_new_signals

    record = load_decision(record_path())
    reward = {"name": "reward", "value": "v", "share": "reward", "reads": ["reward"]}
    reward |= {"cost": "c", "weight": 0.5, "fitted": {"by": "x", "rows": "y"}}
    signals = [*record.model_dump(mode="json", exclude_defaults=True)["signals"], reward]
    record = type(record).model_validate(
        record.model_dump(mode="json", exclude_defaults=True) | {"signals": signals}
    )
    own = [s.name for s in record.signals if s.own_answer]
    found = without_new_signals(record)
    unrewarded = found.pop("without the reward model")
    assert "reward" not in unrewarded.weights()
    assert len(unrewarded.signals) == len(record.signals) - 1
    if not own:
        assert found == {}
        return
    alone = found.pop("without its own answer")
    assert not any(s.own_answer for s in alone.signals)
    assert len(alone.signals) == len(record.signals) - len(own)
    for label, less in found.items():
        name = label.removeprefix("without ")
        assert name in own and name not in less.weights()
        assert len(less.signals) == len(record.signals) - 1


def test_the_reward_reads_join_the_saved_rows_and_bound_what_a_rewarded_record_counts():
    """A pair's reward lead joins its saved row (the held-out pairs judged without their
    references take the held-out pairs' reads); a record that weighs the reward model counts
    only the rows read, so a file read in part says partial."""
    from training.decision.measure import HELD_OUT, HELD_OUT_BARE, measured, with_rewards

    rows = [
        {"file": HELD_OUT, "line": 1, "parts": {"states_difference": 1.0}},
        {"file": HELD_OUT_BARE, "line": 1, "parts": {"states_difference": 1.0}},
        {"file": HELD_OUT, "line": 2, "parts": {"states_difference": 1.0}},
    ]
    joined = with_rewards(rows, {(HELD_OUT, 1): -3.0})
    assert [r["parts"].get("reward_difference") for r in joined] == [-3.0, -3.0, None]
    record = load_decision(record_path())
    reward = {"name": "reward", "value": "v", "share": "reward", "reads": ["reward"]}
    reward |= {"cost": "c", "weight": 0.5, "fitted": {"by": "x", "rows": "y"}}
    data = record.model_dump(mode="json", exclude_defaults=True)
    rewarded = type(record).model_validate(data | {"signals": [*data["signals"], reward]})
    table = measured({"record": rewarded}, joined)
    by_file = {line["file"]: line for line in table}
    assert by_file[HELD_OUT]["rows"] == 1 and not by_file[HELD_OUT]["whole"]
    assert measured({"record": record}, joined)[0]["rows"] == 2


def test_a_later_saved_file_replaces_an_earlier_ones_row_of_the_same_pair(tmp_path):
    import gzip

    first, second = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    for path, rows in (
        (first, [{"file": "f", "line": 1, "parts": {}}, {"file": "f", "line": 2, "parts": {}}]),
        (second, [{"file": "f", "line": 2, "parts": {"score": 1.0}}]),
    ):
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.writelines(json.dumps(row) + "\n" for row in rows)
    rows = saved_rows([first, second, tmp_path / "missing.jsonl.gz"])
    assert [(r["line"], r["parts"]) for r in rows] == [(1, {}), (2, {"score": 1.0})]
