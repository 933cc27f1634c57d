"""Model cards: the measured agreement the app shows beside a judge's verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.cards import card_facts, read_card
from models.foundation.errors import ConfigError
from models.registry import load_registry
from training.lora.pipeline import coin_flip
from training.shipping.model_card import _front_matter


def test_the_default_judge_card_has_its_figures_beside_the_length_heuristic() -> None:
    entry = load_registry().get()
    facts = card_facts(entry)
    files = {row.file: row for row in facts.measured}
    assert {"pairwise_dev.jsonl", "natural.json", "adversarial_neighbor.json"} <= set(files)
    dev = files["pairwise_dev.jsonl"]
    assert dev.rows == 290 and dev.longer_answer_wins == pytest.approx(53.4)


def test_a_card_without_front_matter_has_no_figures(tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text("# a judge\n", encoding="utf-8")
    assert read_card(card).measured == ()


def test_a_bad_figure_names_the_file_and_field(tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text(
        "---\nmeasured:\n- file: dev.jsonl\n  rows: 10\n  judge: 140\n"
        "  longer_answer_wins: 50\n---\n# a judge\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"CARD\.md.*judge"):
        read_card(card)


def test_the_training_pipeline_writes_the_figures_it_measured(tmp_path: Path) -> None:
    metrics = {
        "pairwise_dev.jsonl": {
            "rows": 290,
            "calibrated verdict %": 40.0,
            "longer answer wins %": 53.4,
            "coin flip %": coin_flip({"A": 34.8, "B": 35.5, "tie": 29.7}),
        },
        "single_heldout.jsonl": {"rows": 160, "Spearman": 0.1},
    }
    card = tmp_path / "CARD.md"
    card.write_text("\n".join(_front_matter(metrics)) + "# judge\n", encoding="utf-8")
    [row] = read_card(card).measured
    assert (row.file, row.rows, row.judge, row.longer_answer_wins) == (
        "pairwise_dev.jsonl",
        290,
        40.0,
        53.4,
    )
    assert row.coin_flip == pytest.approx(35.1)  # a coin between A and B; ties it never gets
    assert not row.below_coin_flip


def test_a_judge_below_a_coin_flip_is_flagged() -> None:
    from models.cards import MeasuredRow

    neighbor = MeasuredRow(
        file="adversarial_neighbor.json", rows=134, judge=38.1, longer_answer_wins=11.9
    )
    assert not neighbor.no_better_than_length and not neighbor.below_coin_flip  # no coin on record
    flagged = neighbor.model_copy(update={"coin_flip": 50.0})
    assert flagged.below_coin_flip
    assert coin_flip(None) is None and coin_flip({"A": 56.0, "B": 44.0, "tie": 0.0}) == 50.0


def test_an_untrained_model_is_described_by_what_its_card_measured(tmp_path: Path) -> None:
    from models.cards import untrained_note
    from models.registry import ModelEntry

    (tmp_path / "CARD.md").write_text(
        "---\nmeasured:\n- file: natural.json\n  rows: 100\n  judge: 66.0\n"
        "  longer_answer_wins: 56.0\n---\n# a base asked zero-shot\n",
        encoding="utf-8",
    )
    base = {"name": "b", "backend": "llama-cpp", "file": "b.gguf", "trained_for_judging": False}
    note = untrained_note(ModelEntry(**base, card="CARD.md"), tmp_path)
    assert note == (
        "not trained for judging, asked zero-shot; agreement with people measured: "
        "natural.json 66.0 % (the longer answer: 56.0 %)."
    )
    assert untrained_note(ModelEntry(**base), tmp_path) == (
        "not trained for judging: its scores are close to chance."
    )


def test_every_registry_card_reads() -> None:
    for entry in load_registry().models:
        facts = card_facts(entry)
        assert entry.card is None or facts.measured, f"{entry.name}: its card measured nothing"
