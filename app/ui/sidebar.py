"""The sidebar: the task configuration every page shares (model, protocol, parameters).

Drawn by main.py on every run, so its widgets keep their values on every page. The
values reach the core through `state.current_settings()`.
"""

from __future__ import annotations

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from app.criteria_resolution import AUTO
from app.formats.prompts import template_names
from app.ui import state
from app.ui.model_cache import loaded_key, model_key
from app.ui.settings import (
    COMBINE_LABELS,
    MODE_LABELS,
    PROTOCOL_CHOICES,
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
        st.slider(
            "Send verdicts with a confidence below",
            min_value=0.0,
            max_value=1.0,
            step=0.05,
            key="cascade_below",
            disabled=not st.session_state.get("cascade_model"),
        )
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
    st.radio(
        "Protocol",
        PROTOCOL_CHOICES,
        key="protocol",
        format_func=PROTOCOL_LABELS.get,
        help="Auto: one answer is graded, two are compared, three or more are ranked. "
        "See the About page for what each protocol does.",
    )
    st.radio(
        "Judging mode",
        tuple(MODE_LABELS),
        key="mode",
        format_func=MODE_LABELS.get,
        help="Score: the verdict (or grade) and the criterion scores are read from the judge's "
        "probabilities in one pass, no text is written; ask for a critique with Explain. "
        "Full reply: the judge writes everything, critique included (slower).",
    )
    st.toggle(
        "Write a critique for every batch row",
        key="feedback",
        disabled=st.session_state["mode"] != "score",
        help="Score mode judges a batch without critiques; this writes one per row after its "
        "verdict (one more generation per row). Single items have an Explain button instead.",
    )
    st.toggle(
        "Criterion scores",
        key="criterion_scores",
        help="Each criterion's score beside the verdict (the per-criterion chart and radar). "
        "With the default judge they are read apart from its verdict (with a reference, the "
        "verdict adds their lead), one more read of the item; off is faster for big batches.",
    )
    _reference_toggles()
    _pair_settings()


def _reference_toggles() -> None:
    st.toggle(
        "Use the reference answer",
        key="use_reference",
        help="When an item has a reference answer, the judge sees it. Anchored grading needs it.",
    )
    st.toggle(
        "Reference metrics (ROUGE, BLEU, BERTScore)",
        key="reference_metrics",
        disabled=not st.session_state["use_reference"],
        help="Text similarity of each answer to the reference, next to the judge's scores. "
        "The first use loads a small BERTScore model (a few seconds).",
    )


def _pair_settings() -> None:
    """How a pair's two orders make a verdict, when it is uncertain, and the template."""
    st.toggle(
        "Swap debiasing (pairwise: judge both orders)",
        key="swap",
        help="Judges A-B and B-A so a judge that favours a position cannot decide the verdict.",
    )
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
        st.slider(
            "Temperature",
            0.0,
            2.0,
            step=0.05,
            key="temperature",
            help="0 is greedy: the same input gives the same judgment.",
        )
        st.slider("Top-p", 0.05, 1.0, step=0.05, key="top_p")
        st.number_input(
            "Max new tokens",
            min_value=32,
            max_value=8192,
            step=32,
            key="max_tokens",
            help="Raise it when judgments come back unparsed for running out.",
        )
        st.number_input(
            "Repeat penalty", min_value=1.0, max_value=2.0, step=0.05, key="repeat_penalty"
        )
        st.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed")
        st.caption("Loading the model again applies these:")
        st.number_input(
            "Context length (tokens)", min_value=512, max_value=131072, step=512, key="n_ctx"
        )
        st.number_input(
            "CPU threads",
            min_value=0,
            max_value=256,
            step=1,
            key="n_threads",
            help="0: llama.cpp chooses.",
        )
        st.number_input(
            "GPU layers",
            min_value=0,
            max_value=999,
            step=1,
            key="n_gpu_layers",
            help="Layers offloaded to the GPU (99: all); needs a CUDA build (GPU=1 make setup).",
        )


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
