"""Choose the scenario, the criteria (the scenario's, picked ones, or a custom rubric)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.catalog.criteria_resolution import AUTO
from app.catalog.scenarios import CATEGORIES, Catalog, load_catalog
from app.ui import state
from app.ui.options import scenario_label, scenario_options
from app.ui.rubric_editor import render_rubric_editor
from app.ui.settings import CRITERIA_MODE_LABELS, CRITERIA_MODES

MANY_CRITERIA = 10


def render_scenario(catalog: Catalog) -> None:
    st.header("Scenario")
    st.caption(
        "The scenario says what kind of request an item is and which criteria fit it. "
        "**auto** uses each row's own `scenario` field; a row without one gets the scenario "
        "classifier's pick (a MiniLM-based classifier: right 42 % of the time on Auto-J's "
        "test requests, the right one among its top 3 67 % of the time), or **default** "
        "(general criteria) when it is unsure. The result shows its top 3; choose a scenario "
        "here to override it."
    )
    search = st.text_input(
        "Search scenarios",
        value=state.stored("scenario_search", ""),
        placeholder="e.g. code, email, summar",
        **state.persisted("scenario_search"),
    )
    current = state.stored("scenario", AUTO)
    options = scenario_options(catalog, search, current)
    st.selectbox(
        "Scenario",
        options,
        index=options.index(current),
        format_func=lambda s: scenario_label(catalog, s),
        **state.persisted("scenario"),
    )
    chosen = state.stored("scenario", AUTO)
    if chosen != AUTO:
        scenario = catalog.scenarios[chosen]
        st.markdown(f"**{scenario.name}** ({scenario.group}): {scenario.description}")
        st.dataframe(_criteria_table(catalog, scenario.criteria), hide_index=True)
    matches = {s.id for s in catalog.search(search)} if search.strip() else set(catalog.scenarios)
    st.caption(f"{len(matches)} of {len(catalog.scenarios)} scenarios match.")
    for group, members in catalog.groups.items():
        shown = [catalog.scenarios[s] for s in members if s in matches]
        if not shown:
            continue
        with st.expander(f"{group} ({len(shown)})", expanded=bool(search.strip())):
            for scenario in shown:
                st.markdown(f"- **{scenario.name}** (`{scenario.id}`): {scenario.description}")


def _criteria_table(catalog: Catalog, ids: tuple[str, ...] | list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "criterion": catalog.criteria[c].name,
                "id": c,
                "description": catalog.criteria[c].description,
            }
            for c in ids
        ],
        columns=["criterion", "id", "description"],
    )


def _keep_picks(catalog: Catalog) -> None:
    """Merge the four category pickers into one ordered list of criteria."""
    picked = [
        c
        for category in CATEGORIES
        for c in st.session_state.get(f"criteria_{category}", [])
        if c in catalog.criteria
    ]
    previous = [c for c in state.stored("criteria", ()) if c in picked]
    state.store("criteria", tuple(previous + [c for c in picked if c not in previous]))


def render_criteria_picker(catalog: Catalog) -> None:
    chosen = list(state.stored("criteria", ()))
    by_category = catalog.criteria_by_category()
    tabs = st.tabs([f"{c.title()} ({len(by_category[c])})" for c in CATEGORIES])
    for tab, category in zip(tabs, CATEGORIES):
        members = by_category[category]
        with tab:
            st.multiselect(
                f"{category.title()} criteria",
                [c.id for c in members],
                default=[c for c in chosen if c in {m.id for m in members}],
                format_func=lambda c: catalog.criteria[c].name,
                key=f"criteria_{category}",
                on_change=_keep_picks,
                args=(catalog,),
            )
            st.dataframe(_criteria_table(catalog, [c.id for c in members]), hide_index=True)
    chosen = list(state.stored("criteria", ()))
    if chosen:
        names = ", ".join(catalog.criteria[c].name for c in chosen)
        st.success(f"Judging with {len(chosen)} criteria (they replace the scenario's): {names}")
        st.caption("The first two count double in the overall score.")
        if len(chosen) > MANY_CRITERIA:
            st.warning(
                f"{len(chosen)} criteria make long prompts and outputs; raise max new tokens "
                "in the sidebar if judgments come back unparsed."
            )
    else:
        st.info("Pick at least one criterion; until then the scenario's criteria apply.")


def page() -> None:
    catalog = load_catalog()
    st.title("Scenario and criteria")
    render_scenario(catalog)
    st.header("Criteria")
    mode = state.stored("criteria_mode", "scenario")
    st.radio(
        "Judge with",
        CRITERIA_MODES,
        index=CRITERIA_MODES.index(mode),
        format_func=CRITERIA_MODE_LABELS.get,
        horizontal=True,
        **state.persisted("criteria_mode"),
    )
    mode = state.stored("criteria_mode", "scenario")
    if mode == "scenario":
        st.caption("Each item is judged on its scenario's criteria (shown above).")
    elif mode == "criteria":
        render_criteria_picker(catalog)
    else:
        render_rubric_editor()


page()
