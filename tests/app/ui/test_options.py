"""Scenario options for the searchable picker, and the single-item form's answer slots."""

from __future__ import annotations

from app.catalog.criteria_resolution import AUTO
from app.catalog.scenarios import load_catalog
from app.ui.options import (
    AUTO_LABEL,
    answer_label,
    answer_range,
    scenario_label,
    scenario_options,
)


def test_scenario_options_and_search() -> None:
    catalog = load_catalog()
    everything = scenario_options(catalog, "", AUTO)
    assert everything[:2] == [AUTO, "default"] and len(everything) == 59
    code = scenario_options(catalog, "  Code ", AUTO)
    assert code[0] == AUTO  # the current choice is kept even when it does not match
    assert "code_generation" in code and "default" not in code
    assert scenario_options(catalog, "row's own", "default")[:2] == ["default", AUTO]
    assert scenario_options(catalog, "zzz-no-match", "code_generation") == ["code_generation"]


def test_scenario_labels() -> None:
    catalog = load_catalog()
    assert scenario_label(catalog, AUTO) == AUTO_LABEL
    assert scenario_label(catalog, "default") == "NLP Tasks · General"


def test_answer_slots_per_protocol() -> None:
    assert answer_range("pairwise") == (2, 2)
    assert answer_range("multi") == (2, 6)
    assert answer_range("single") == answer_range("auto") == (1, 6)
    assert [answer_label("pairwise", n) for n in (1, 2)] == ["Answer A", "Answer B"]
    assert answer_label("multi", 3) == "Answer 3"
