"""The sidebar's widgets are made from the run settings' declaration (models/run_settings.py):
bounds, step and starting value, through the real app (streamlit.testing)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from models.run_settings import RUN_SETTING_NAMES, declared

FINDERS = {"slider": "slider", "number": "number_input", "toggle": "toggle", "radio": "radio"}


def test_every_sidebar_widget_starts_and_ends_where_its_setting_is_declared(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app(fast=False)
    drawn = 0
    for name in RUN_SETTING_NAMES:
        setting = declared(name)
        if setting.widget == "none":
            continue
        widget = getattr(at.sidebar, FINDERS[setting.widget])(key=name)
        assert widget.label == setting.label and widget.help == setting.help, name
        assert widget.value == setting.app_default, name
        if setting.widget in ("slider", "number"):
            bounds = (widget.min, widget.max, widget.step)
            assert bounds == pytest.approx((setting.minimum, setting.maximum, setting.step)), name
        drawn += 1
    assert drawn == sum(declared(n).widget != "none" for n in RUN_SETTING_NAMES) >= 10
