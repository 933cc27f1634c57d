"""The committed Streamlit settings (app/ui/.streamlit/config.toml) and the app's own limits agree.

The file is what every `streamlit run` from the repository root starts with; what the running
app makes of it is checked in tests/app/ui/test_browser_config.py.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from streamlit import config as streamlit_config

from app.ui.settings import DEFAULT_MAX_UPLOAD_MB, MAX_UPLOAD_ENV, max_upload_bytes

CONFIG = Path(__file__).resolve().parents[3] / "app" / "ui" / ".streamlit" / "config.toml"
STREAMLIT_MB = 1024 * 1024  # Streamlit's megabyte (the app's is 10**6 bytes)


def settings() -> dict[str, Any]:
    """The file as `section.option` keys, as Streamlit names them."""
    with CONFIG.open("rb") as file:
        sections = tomllib.load(file)
    return {
        f"{s}.{name}": value for s, options in sections.items() for name, value in options.items()
    }


def test_the_upload_limit_is_the_apps_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_UPLOAD_ENV, raising=False)
    limit = settings()["server.maxUploadSize"]
    assert type(limit) is int  # Streamlit wants whole megabytes
    assert limit == DEFAULT_MAX_UPLOAD_MB
    # Streamlit's cap is no tighter than the app's limit, so a file over the limit gets the
    # app's message (which says how to split it), not Streamlit's.
    assert limit * STREAMLIT_MB >= max_upload_bytes()


def test_the_safe_defaults() -> None:
    assert settings() == {
        "server.maxUploadSize": int(DEFAULT_MAX_UPLOAD_MB),
        "server.address": "127.0.0.1",  # this machine only
        "server.headless": True,  # no browser opened, no e-mail prompt
        "server.enableXsrfProtection": True,
        "browser.gatherUsageStats": False,  # nothing sent to Streamlit
        "client.toolbarMode": "minimal",  # no Deploy button, no developer menu
    }


def test_every_option_is_one_the_installed_streamlit_knows() -> None:
    """Streamlit only warns about an unknown option (a typo, or one renamed in an upgrade)."""
    known = streamlit_config.get_config_options()
    assert set(settings()) <= set(known)
