"""Session state shared by the pages: widget keys, defaults, and the current `Settings`.

Two kinds of keys live in `st.session_state`:

- widget keys (`"model"`, `"temperature"`, `"scenario"`, ...), stable so browser tests can
  find the widgets. The sidebar's widgets are drawn on every run, so their values persist.
- stored values (`"cfg.<key>"`), copied from a page's widgets by `persisted(...)`. Streamlit
  forgets the value of a widget that a run does not draw, so a page's choices (scenario,
  criteria, rubric, the single-item form) are kept here and survive a change of page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from app.catalog.criteria_resolution import AUTO
from app.judging.settings import SettingsLayer
from app.ui.settings import SIDEBAR_JUDGING, Settings, default_model, model_defaults

STORE = "cfg."

# Sidebar widgets: key -> default (the model-dependent ones are filled in by `init_state`).
SIDEBAR_DEFAULTS: dict[str, Any] = {
    "protocol": Settings.protocol,
    "temperature": Settings.temperature,
    "top_p": Settings.top_p,
    "max_tokens": Settings.max_tokens,
    "repeat_penalty": Settings.repeat_penalty,
    "seed": Settings.seed,
    "n_threads": Settings.n_threads,
    "n_gpu_layers": Settings.n_gpu_layers,
    "workers": Settings.workers,
    "use_reference": Settings.use_reference,
    "reference_metrics": Settings.reference_metrics,
    "run_code": Settings.run_code,
    "self_reference": Settings.self_reference,
    "swap": Settings.swap,
    "mode": Settings.mode,
    "feedback": Settings.feedback,
    "criterion_scores": True,  # on: as the model says; off: the verdict or grade alone
    "cascade_model": Settings.cascade_model,
    "cascade_below": Settings.cascade_below,
}
# Values kept across pages: key -> default.
STORED_DEFAULTS: dict[str, Any] = {
    "scenario": AUTO,
    "criteria_mode": "scenario",
    "criteria": (),
    "rubric": None,
    "added_models": (),
}
MODEL_KEYS = (*SIDEBAR_JUDGING, "n_ctx")  # set from the model's registry entry


SIDEBAR_MIRROR = STORE + "sidebar."


def init_state() -> None:
    """Give every shared key its default once per session, and keep the sidebar's values.

    Streamlit drops a widget's value when a run is cut short before the widget is
    drawn again (a page switch during the session's first run did that), and the
    next run would show the defaults. Every run therefore mirrors the sidebar
    values into stored keys and re-claims them before any widget is drawn.
    """
    state = st.session_state
    if "model" not in state and SIDEBAR_MIRROR + "model" not in state:
        state["model"] = default_model()
        apply_model_defaults()
    for key, value in SIDEBAR_DEFAULTS.items():
        if key not in state and SIDEBAR_MIRROR + key not in state:
            state[key] = value
    for key in ("model", *SIDEBAR_DEFAULTS, *MODEL_KEYS):
        if key in state:
            state[key] = state[key]  # re-claimed, so this run's widgets start from it
            state[SIDEBAR_MIRROR + key] = state[key]
        elif SIDEBAR_MIRROR + key in state:
            state[key] = state[SIDEBAR_MIRROR + key]
    for key, value in STORED_DEFAULTS.items():
        state.setdefault(STORE + key, value)


def apply_model_defaults() -> None:
    """Template, pair combine, tie margin and context length from the model's registry entry."""
    defaults = model_defaults(st.session_state["model"])
    for key in SIDEBAR_JUDGING:
        st.session_state[key] = getattr(defaults.judging, key)
    st.session_state["n_ctx"] = defaults.n_ctx
    # the entry's second judge, if it names one (the sidebar can change or drop it)
    st.session_state["cascade_model"] = defaults.cascade_model
    st.session_state["cascade_below"] = defaults.cascade_below


def stored(key: str, default: Any = None) -> Any:
    return st.session_state.get(STORE + key, default)


def store(key: str, value: Any) -> None:
    st.session_state[STORE + key] = value


def persisted(key: str, convert: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Widget arguments that copy its value to `cfg.<key>` whenever it changes."""

    def keep() -> None:
        value = st.session_state[key]
        store(key, convert(value) if convert else value)

    return {"key": key, "on_change": keep}


def current_settings() -> Settings:
    return settings_from(st.session_state)


def settings_from(state: Mapping[str, Any]) -> Settings:
    """Settings from a session state (or any mapping holding the same keys)."""

    def kept(key: str, default: Any = None) -> Any:
        return state.get(STORE + key, default)

    return Settings(
        model=state["model"],
        protocol=state["protocol"],
        temperature=float(state["temperature"]),
        top_p=float(state["top_p"]),
        max_tokens=int(state["max_tokens"]),
        repeat_penalty=float(state["repeat_penalty"]),
        seed=int(state["seed"]),
        n_ctx=int(state["n_ctx"]),
        n_threads=int(state["n_threads"]),
        n_gpu_layers=int(state["n_gpu_layers"]),
        workers=int(state["workers"]),
        use_reference=bool(state["use_reference"]),
        run_code=bool(state.get("run_code", Settings.run_code)),
        self_reference=state.get("self_reference", Settings.self_reference),
        swap=bool(state["swap"]),
        judging=sidebar_judging(state),
        mode=state.get("mode", Settings.mode),
        feedback=bool(state.get("feedback", Settings.feedback)),
        cascade_model=state.get("cascade_model") or "",
        cascade_below=float(state.get("cascade_below", Settings.cascade_below)),
        reference_metrics=bool(state["reference_metrics"]),
        scenario=kept("scenario", AUTO),
        criteria_mode=kept("criteria_mode", "scenario"),
        criteria=tuple(kept("criteria", ())),
        rubric=kept("rubric"),
    )


def sidebar_judging(state: Mapping[str, Any]) -> SettingsLayer:
    """The sidebar's judging settings, as the layer over the model's registry entry; the
    criterion-scores toggle on leaves the model's own setting."""
    on = bool(state.get("criterion_scores", True))
    return SettingsLayer(
        **{key: state[key] for key in SIDEBAR_JUDGING if key in state},
        criterion_scores=None if on else False,
    )
