"""A sidebar widget for a declared run setting: its label, bounds, step and help text come
from the declaration (models/run_settings.py), its key is the setting's name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from models.run_settings import declared


def setting_widget(
    name: str, *, disabled: bool = False, format_func: Callable[[Any], Any] | None = None
) -> Any:
    """Draw the widget the setting `name` declares; its value lands in session state."""
    setting = declared(name)
    shared = {"key": name, "help": setting.help, "disabled": disabled}
    if setting.widget == "toggle":
        return st.toggle(setting.label, **shared)
    if setting.widget == "radio":
        return st.radio(setting.label, setting.choices, format_func=format_func or str, **shared)
    bounds = {"min_value": setting.minimum, "max_value": setting.maximum, "step": setting.step}
    if setting.widget == "slider":
        return st.slider(setting.label, **bounds, **shared)
    if setting.widget == "number":
        return st.number_input(setting.label, **bounds, **shared)
    raise ValueError(f"run setting {name!r} declares no sidebar widget ({setting.widget})")
