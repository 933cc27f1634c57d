"""A new signal is one unit: a function registered by name (app/deciding/signals.py), named
in a judge's decision record with its weight, its share and the share's words; from there it
is in the verdict, the page's note of each share and the model card's table of the rule,
with no other file touched. The toy signal here counts exclamation marks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.deciding import signals
from app.deciding.decision import load_decision, share_words
from app.records import JudgeItem, Protocol
from app.ui.views import head_note
from tests.support.head_configs import head_alone, random_reply_head, record_for, tiny_service
from training.decision.record_file import record_text, rule_table

TOY = {
    "name": "exclamations",
    "value": "A's exclamation marks minus B's",
    "share": "enthusiasm",
    "reads": ["text"],
    "cost": "none (read from the text)",
    "weight": -2.0,
    "fitted": {"by": "this test", "rows": "none"},
}
PAIR = JudgeItem(
    id="toy", question="What is the capital of France?", answers=("Paris!!!", "Paris.")
)


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    yield from tiny_service(tiny_gguf_model, "tiny-toy-signal")


@pytest.fixture
def exclamations(monkeypatch):
    """The toy signal, registered as a signal module registers one (`@signal`), for this
    test only."""
    monkeypatch.setattr(signals, "SIGNALS", dict(signals.SIGNALS))  # undone after the test
    count = signals.signal("exclamations")(
        lambda reads: [float(answer.count("!")) for answer in reads.item.answers]
    )
    return count


def test_a_toy_signal_reaches_the_verdict_the_pages_shares_and_the_card(
    tiny, exclamations, tmp_path
):
    service, backend = tiny
    head = random_reply_head(backend, seed=3)
    base = record_for(head)
    data = base.model_dump(mode="json", exclude_defaults=True)
    data["signals"].append(TOY)
    data["shares"] = {"enthusiasm": "exclamation marks"}
    path = tmp_path / "decision.yaml"
    path.write_text(record_text(data), encoding="utf-8")  # the record, as the fit writes it
    record = load_decision(path)
    config = head_alone(head, Protocol.PAIRWISE)
    with_toy = replace(config, parts=replace(config.parts, decision=record))

    judged = service.judge(PAIR, with_toy)
    without = service.judge(PAIR, replace(config, parts=replace(config.parts, decision=base)))
    parts = judged.verdict_parts
    # in the verdict: its value, its share (weight x value) and the score it moved
    assert parts["exclamations_difference"] == 3.0
    assert parts["enthusiasm"] == pytest.approx(-6.0)
    assert parts["score"] == pytest.approx(without.verdict_parts["score"] - 6.0, abs=1e-3)
    assert "exclamations_difference" not in without.verdict_parts  # read only where named
    # on the page: the share, named by the record's words
    assert "exclamation marks: 6.00 toward B" in head_note(parts, record.shares)
    # in the card's table of the rule
    assert "| `exclamations` | -2 | A's exclamation marks minus B's | text |" in rule_table(record)


def test_a_record_naming_no_registered_signal_is_refused_naming_the_file(tmp_path):
    from models.foundation.errors import ConfigError

    data = record_for(random_head()).model_dump(mode="json")
    data["signals"].append(TOY)  # not registered outside the test above
    path = tmp_path / "decision.yaml"
    path.write_text(yaml_text(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"decision\.yaml.*exclamations.*no signal"):
        load_decision(path)


def test_the_page_names_the_default_judges_shares_by_its_records_words():
    words = share_words("pj-qwen15-likelihood")
    assert words["fit"].startswith("fits the request")
    assert share_words("no-such-judge") == {}


def random_head():
    from app.deciding.state_head import StateHead

    return StateHead(base_file="by-hand.gguf", weights=(1.0, 0.0))


def yaml_text(data: dict) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)
