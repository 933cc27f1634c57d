"""AppTest helpers: the app on the tiny real model, with settings that keep judging fast."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.ui.settings import MAX_UPLOAD_ENV, MODEL_ENV, RUBRICS_ENV

REPO_ROOT = Path(__file__).resolve().parents[3]
MAIN = str(REPO_ROOT / "app" / "ui" / "main.py")
EXAMPLES = REPO_ROOT / "examples"
# The tiny tokenizer spells criteria in many tokens: 900 lets a judgment of a few criteria
# finish (see tests/app/cli/test_cli.py). Two criteria keep each call well under a second.
MAX_TOKENS = 900
FAST_CRITERIA = ("accuracy", "clarity")
TIMEOUT = 120


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch, tiny_gguf_model: Path, tmp_path: Path) -> Path:
    """Point the app at the tiny model and a temporary rubric folder."""
    monkeypatch.setenv(MODEL_ENV, str(tiny_gguf_model))
    monkeypatch.setenv(RUBRICS_ENV, str(tmp_path / "rubrics"))
    monkeypatch.delenv(MAX_UPLOAD_ENV, raising=False)
    return tiny_gguf_model


@pytest.fixture
def make_app(app_env: Path) -> Callable[..., AppTest]:
    """A started app; `fast=True` picks 1 thread, 900 tokens, two criteria and one engine
    for a batch (the batch tests time a stop by holding the shared judge's lock)."""

    def make(page: str | None = None, *, fast: bool = True) -> AppTest:
        at = AppTest.from_file(MAIN, default_timeout=TIMEOUT).run()
        assert not at.exception, at.exception
        if fast:
            at.sidebar.number_input(key="n_threads").set_value(1)
            at.sidebar.number_input(key="max_tokens").set_value(MAX_TOKENS)
            at.sidebar.number_input(key="workers").set_value(1)
            at.session_state["cfg.criteria_mode"] = "criteria"
            at.session_state["cfg.criteria"] = FAST_CRITERIA
            at.run()
        if page is not None:
            at.switch_page(page).run()
        assert not at.exception, at.exception
        return at

    return make
