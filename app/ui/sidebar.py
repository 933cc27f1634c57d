"""The sidebar: the task configuration every page shares (model, protocol, parameters).

Drawn by main.py on every run, so its widgets keep their values on every page. The
values reach the core through `state.current_settings()`.
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from app.catalog.criteria_resolution import AUTO
from app.code_run.jail import jail_status
from app.formats.prompts import template_names
from app.ui import state
from app.ui.declared_widgets import setting_widget
from app.ui.model_cache import loaded_key, model_key
from app.ui.settings import (
    COMBINE_LABELS,
    MODE_LABELS,
    PROTOCOL_LABELS,
    check_model_file,
    model_choices,
    model_defaults,
    model_label,
    registry_entry,
)
from models.cards import untrained_note

GGUF_ERROR = "gguf_error"


def render_sidebar(criteria_page: StreamlitPage) -> None:
    """Draw the configuration; `criteria_page` is linked from the criteria summary."""
    with st.sidebar:
        _model()
        _protocol()
        _parameters()
        _criteria_summary(criteria_page)


def _model() -> None:
    st.header("Judge model")
    choices = model_choices(tuple(state.stored("added_models", ())))
    if st.session_state["model"] not in choices:
        choices.append(st.session_state["model"])
    st.selectbox(
        "Judge model",
        choices,
        key="model",
        format_func=model_label,
        on_change=state.apply_model_defaults,
        help="Models from the registry (models/registry.yaml), and GGUF files you add below. "
        "The model loads once for all tabs; switching unloads the previous one as soon as no "
        "run uses it.",
    )
    defaults = model_defaults(st.session_state["model"])
    entry = registry_entry(st.session_state["model"])
    if defaults.trained_for_judging is False and entry is not None:
        st.warning(f"This model is {untrained_note(entry)}")
    elif defaults.trained_for_judging is None:
        st.caption(f"File: {st.session_state['model']}")
    if defaults.description:
        st.caption(defaults.description)
    loaded = loaded_key() == model_key(state.current_settings())
    st.caption("Loaded and ready." if loaded else "Loads when you first judge (a few seconds).")
    with st.expander("Second judge for unsure verdicts"):
        seconds = ["", *(c for c in choices if c != st.session_state["model"])]
        if st.session_state.get("cascade_model") not in seconds:
            seconds.append(st.session_state["cascade_model"])
        st.selectbox(
            "Second judge",
            seconds,
            key="cascade_model",
            format_func=lambda m: model_label(m) if m else "None",
            help="A verdict, grade or ranking whose confidence is below the threshold is "
            "judged again by this model, and its judgment is the result; each result says "
            "which judge decided it. Both models stay loaded.",
        )
        setting_widget("cascade_below", disabled=not st.session_state.get("cascade_model"))
    with st.expander("Add a GGUF file"):
        st.text_input("Path of a .gguf file", key="gguf_path", placeholder="/path/to/judge.gguf")
        st.button("Add model file", key="add_gguf", on_click=_add_gguf)
        if st.session_state.get(GGUF_ERROR):
            st.error(st.session_state[GGUF_ERROR])


def _add_gguf() -> None:
    try:
        path = check_model_file(st.session_state.get("gguf_path", ""))
    except ValueError as exc:
        st.session_state[GGUF_ERROR] = str(exc)
        return
    st.session_state[GGUF_ERROR] = None
    added = tuple(state.stored("added_models", ()))
    if path not in added:
        state.store("added_models", (*added, path))
    st.session_state["model"] = path
    state.apply_model_defaults()


def _protocol() -> None:
    st.header("Task")
    setting_widget("protocol", format_func=PROTOCOL_LABELS.get)
    setting_widget("mode", format_func=MODE_LABELS.get)
    setting_widget("feedback", disabled=st.session_state["mode"] != "score")
    st.toggle(
        "Criterion scores",
        key="criterion_scores",
        help="Each criterion's score beside the verdict (the per-criterion chart and radar). "
        "With the default judge they come from its criterion head, on the verdict's own read "
        "of each answer (no more time); on a pair with a reference it moves each answer's "
        "scores by what the reference shows of it (not style and format). A rubric's level "
        "texts, or one answer with a reference, are read apart (one more read each). Off: the "
        "verdict alone.",
    )
    _reference_toggles()
    _pair_settings()


def _reference_toggles() -> None:
    setting_widget("use_reference")
    setting_widget("reference_metrics", disabled=not st.session_state["use_reference"])
    setting_widget("run_code", disabled=not st.session_state["use_reference"])
    jail = jail_status()
    if st.session_state["use_reference"] and st.session_state["run_code"] and not jail.works:
        st.caption(f"No answer's code will run: {jail.sentence()}.")
    setting_widget("self_reference")


def _pair_settings() -> None:
    """How a pair's two orders make a verdict, when it is uncertain, and the template."""
    setting_widget("swap")
    st.radio(
        "Combine the two orders",
        tuple(COMBINE_LABELS),
        key="pair_combine",
        format_func=COMBINE_LABELS.get,
        disabled=not st.session_state["swap"],
        help="The default comes from the model's registry entry.",
    )
    if st.session_state["pair_combine"] == "calibrated":
        st.number_input(
            "Tie margin",
            min_value=0.0,
            max_value=10.0,
            step=0.0005,
            format="%.4f",
            key="tie_margin",
            help="Calibrated combine: an expected score gap this small is a tie. The default "
            "is the value tuned for the model (its registry entry).",
        )
    st.number_input(
        "Report verdicts as uncertain below this confidence",
        min_value=0.0,
        max_value=1.0,
        step=0.05,
        format="%.2f",
        key="uncertain_below",
        help="A pairwise verdict whose probability (averaged over both orders) is lower is "
        "shown and written as 'uncertain' beside the way it leans. The default comes from the "
        "model's registry entry.",
    )
    st.selectbox(
        "Prompt template",
        template_names(),
        key="template",
        help="The default comes from the model's registry entry (the format it was trained on).",
    )


def _parameters() -> None:
    with st.expander("Generation and load parameters"):
        for name in ("temperature", "top_p", "max_tokens", "repeat_penalty", "seed", "workers"):
            setting_widget(name)
        st.caption("Loading the model again applies these:")
        for name in ("n_ctx", "n_threads", "n_gpu_layers"):
            setting_widget(name)


def _criteria_summary(criteria_page: StreamlitPage) -> None:
    st.header("Criteria")
    scenario = state.stored("scenario", AUTO)
    mode = state.stored("criteria_mode", "scenario")
    text = f"Scenario: **{scenario}**"
    if mode == "criteria" and state.stored("criteria"):
        text += f" · {len(state.stored('criteria'))} criteria picked"
    elif mode == "rubric" and state.stored("rubric") is not None:
        text = f"Rubric: **{state.stored('rubric').name}**"
    elif mode != "scenario":
        text += " (nothing picked yet: the scenario's criteria apply)"
    st.markdown(text)
    st.page_link(criteria_page, label="Choose scenario and criteria")
