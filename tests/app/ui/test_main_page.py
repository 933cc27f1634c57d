"""The app shell: every page loads, and the sidebar's configuration reaches the core."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.records import Protocol
from app.ui.state import settings_from
from models.registry import load_registry

PAGES = {
    "app_pages/judge.py": "Judge one item",
    "app_pages/batch.py": "Batch",
    "app_pages/runs.py": "Runs",
    "app_pages/criteria.py": "Scenario and criteria",
    "app_pages/about.py": "About PocketJudge",
}


def test_every_page_loads(make_app: Callable[..., AppTest]) -> None:
    at = make_app(fast=False)
    assert at.title[0].value == "Judge one item"
    for page, title in PAGES.items():
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert at.title[0].value == title
        assert at.sidebar.selectbox(key="model")  # the shared configuration is on every page


def test_about_lists_the_input_layouts(make_app: Callable[..., AppTest]) -> None:
    at = make_app("app_pages/about.py", fast=False)
    layouts = at.dataframe[1].value
    assert "JudgeLM" in list(layouts["layout"]) and len(layouts) == 9
    assert "Prometheus (absolute grading with a rubric)" in list(layouts["layout"])
    assert any("Confidence" in m.value for m in at.markdown)


def test_model_choices_and_env_default(make_app: Callable[..., AppTest], app_env: Path) -> None:
    at = make_app(fast=False)
    model = at.sidebar.selectbox(key="model")
    assert model.value == str(app_env)  # POCKETJUDGE_MODEL
    assert set(load_registry().names()) <= set(model.options)


def test_configuration_widgets_reach_the_config(make_app: Callable[..., AppTest]) -> None:
    at = make_app(fast=False)
    sidebar = at.sidebar
    sidebar.radio(key="protocol").set_value("pairwise")
    sidebar.slider(key="temperature").set_value(0.5)
    sidebar.slider(key="top_p").set_value(0.8)
    sidebar.number_input(key="max_tokens").set_value(640)
    sidebar.number_input(key="n_ctx").set_value(2048)
    sidebar.number_input(key="n_threads").set_value(2)
    sidebar.number_input(key="n_gpu_layers").set_value(5)
    sidebar.toggle(key="use_reference").set_value(False)
    sidebar.toggle(key="swap").set_value(True)
    sidebar.radio(key="pair_combine").set_value("calibrated")
    sidebar.selectbox(key="template").set_value("pocketjudge-compact")
    sidebar.radio(key="mode").set_value("generate")
    sidebar.number_input(key="uncertain_below").set_value(0.7)
    at.run()
    at.sidebar.number_input(key="tie_margin").set_value(0.5)  # shown for calibrated only
    at.run()
    assert not at.exception
    settings = settings_from(at.session_state)
    config, options = settings.judge_config(), settings.backend_options()
    assert config.protocol is Protocol.PAIRWISE
    assert (config.sampling.temperature, config.sampling.top_p) == (0.5, 0.8)
    assert config.sampling.max_tokens == 640
    assert (options.n_ctx, options.n_threads, options.n_gpu_layers) == (2048, 2, 5)
    assert not config.use_reference and not config.reference_metrics
    assert (config.judge.pair_combine, config.judge.tie_margin) == ("calibrated", 0.5)
    assert config.judge.template == "pocketjudge-compact"
    assert (config.mode, config.judge.uncertain_below) == ("generate", 0.7)
    assert at.sidebar.toggle(key="feedback").disabled  # batch critiques are a score-mode option
    assert at.sidebar.toggle(key="reference_metrics").disabled  # no reference, no metrics


def test_the_tie_margin_shows_the_models_real_value(make_app: Callable[..., AppTest]) -> None:
    """The default judge's tuned margin is 0.0006: shown as such, and a click moves it a
    little (the widget once showed 0.00 and stepped by 0.05)."""
    at = make_app(fast=False)
    at.sidebar.radio(key="pair_combine").set_value("calibrated").run()
    margin = at.sidebar.number_input(key="tie_margin")
    assert margin.format == "%.4f" and margin.step <= 0.001


def test_model_change_applies_the_registry_defaults(make_app: Callable[..., AppTest]) -> None:
    at = make_app(fast=False)
    at.sidebar.selectbox(key="template").set_value("pocketjudge-compact")
    at.sidebar.number_input(key="n_ctx").set_value(1024)
    at.run()
    entry = load_registry().get()
    at.sidebar.selectbox(key="model").set_value(entry.name).run()
    assert at.session_state["template"] == entry.judging.template
    assert at.session_state["n_ctx"] == entry.context
    assert at.session_state["pair_combine"] == entry.judging.pair_combine
    if not entry.trained_for_judging:
        assert "not trained for judging" in at.sidebar.warning[0].value


def test_adding_a_gguf_file(
    make_app: Callable[..., AppTest], app_env: Path, tmp_path: Path
) -> None:
    at = make_app(fast=False)
    at.sidebar.text_input(key="gguf_path").input(str(tmp_path / "nothing.gguf"))
    at.sidebar.button(key="add_gguf").click().run()
    assert "file not found" in at.sidebar.error[0].value
    copy = tmp_path / "my-judge.gguf"
    shutil.copy(app_env, copy)
    at.sidebar.text_input(key="gguf_path").input(str(copy))
    at.sidebar.button(key="add_gguf").click().run()
    assert not at.sidebar.error
    assert at.session_state["model"] == str(copy.resolve())
    assert "my-judge.gguf (file)" in at.sidebar.selectbox(key="model").options  # labels


def test_a_model_that_fails_to_load_says_what_to_do(
    make_app: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    monkeypatch.setenv("POCKETJUDGE_MODEL", str(broken))
    at = make_app()
    at.text_area(key="question").input("Why?")
    at.text_area(key="answer_1").input("Because.")
    at.button(key="judge").click().run()
    assert not at.exception
    assert "complete GGUF model" in at.error[0].value
