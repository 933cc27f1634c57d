"""Option lists and labels the pages show: scenarios, answer slots. Pure: no Streamlit."""

from __future__ import annotations

from app.catalog.criteria_resolution import AUTO
from app.catalog.scenarios import DEFAULT_SCENARIO, Catalog
from app.records import MAX_ANSWERS, Protocol

AUTO_LABEL = "auto: each row's own scenario, else default"


def scenario_options(catalog: Catalog, search: str, current: str) -> list[str]:
    """auto, default, then every scenario in group order; a search keeps the matches only.

    The current choice always stays in the list so a search never drops it.
    """
    ordered = [AUTO, DEFAULT_SCENARIO] + [s for s in catalog.scenarios if s != DEFAULT_SCENARIO]
    needle = search.strip().lower()
    if needle:
        matches = {s.id for s in catalog.search(needle)}
        if needle in AUTO_LABEL:
            matches.add(AUTO)
        ordered = [s for s in ordered if s in matches]
    return ordered if current in ordered else [current, *ordered]


def scenario_label(catalog: Catalog, scenario_id: str) -> str:
    if scenario_id == AUTO:
        return AUTO_LABEL
    scenario = catalog.scenarios[scenario_id]
    return f"{scenario.group} · {scenario.name}"


def answer_range(protocol: str) -> tuple[int, int]:
    """How many answers the single-item form offers for a protocol (or "auto")."""
    if protocol == Protocol.PAIRWISE.value:
        return 2, 2
    if protocol == Protocol.MULTI.value:
        return 2, MAX_ANSWERS
    return 1, MAX_ANSWERS


def answer_label(protocol: str, number: int) -> str:
    """ "Answer A" / "Answer B" for a pair, "Answer 1".. otherwise."""
    if protocol == Protocol.PAIRWISE.value:
        return f"Answer {'AB'[number - 1]}"
    return f"Answer {number}"
