"""The default judge's decision record (models/judges/pj-qwen15-likelihood/decision.yaml) says
its whole pairwise rule: applied by the one combiner (app/deciding/decision.py) to the signal
values the engine saved, it gives every saved decision again (tests/golden/: the dev files
and the held-out reference-decided pairs, judged by the engine as it decides today)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from app.deciding.decision import (
    DecisionRecord,
    decide,
    load_decision,
    recorded_values,
)
from models.foundation.errors import ConfigError
from models.registry import MODELS_DIR, load_registry
from training.heads.decision_record import written

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "default_judge_decisions.jsonl.gz"
SCORE_WITHIN = 1e-2  # saved values are rounded to 4 decimals, and two weights are 100
P_WITHIN = 1e-3


def default_record() -> DecisionRecord:
    entry = load_registry().get()
    assert entry.judging is not None and entry.judging.state_head is not None
    return load_decision(MODELS_DIR / Path(entry.judging.state_head).with_name("decision.yaml"))


def golden_rows() -> list[dict]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as rows:
        return [json.loads(line) for line in rows]


def test_the_record_is_what_the_fitted_weights_give():
    path, text = written()
    assert path.read_text(encoding="utf-8") == text, "run python -m training.heads.decision_record"


def test_the_record_gives_every_saved_decision_again():
    record = default_record()
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


def test_a_signal_without_a_value_adds_nothing_and_a_tie_band_gives_ties():
    record = default_record()
    assert decide(record, {}).p_a == 0.5
    nudged = decide(record, {"relevance": 0.001})
    assert nudged.leaning == "A" and nudged.uncertain
    banded = record.model_copy(update={"tie_within": 0.01})
    assert decide(banded, {"relevance": 0.001}).leaning == "tie"
