"""Scenario search, the criteria picker, and the rubric editor's load / save round trip."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from streamlit.testing.v1 import AppTest

from app.catalog.criteria_resolution import AUTO, resolve
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.records import JudgeItem
from app.ui.state import settings_from

PAGE = "app_pages/criteria.py"
ITEM = JudgeItem(id="x", question="Q?", answers=("a",))


def open_page(make_app: Callable[..., AppTest]) -> AppTest:
    return make_app(PAGE, fast=False)


def test_all_scenarios_in_groups_with_auto_first(make_app: Callable[..., AppTest]) -> None:
    at = open_page(make_app)
    catalog = load_catalog()
    scenario = at.selectbox(key="scenario")
    assert len(scenario.options) == len(catalog.scenarios) + 1 == 59
    assert scenario.value == AUTO
    assert scenario.options[1] == "NLP Tasks · General"  # default comes right after auto
    assert any("scenario classifier" in c.value for c in at.caption)
    assert len(at.expander) >= len(catalog.groups)


def test_search_narrows_the_scenarios_and_keeps_the_choice(
    make_app: Callable[..., AppTest],
) -> None:
    at = open_page(make_app)
    at.text_input(key="scenario_search").input("code").run()
    options = at.selectbox(key="scenario").options
    assert options[0].startswith("auto")  # the current choice stays
    assert "Code · Code generation" in options
    assert len(options) < 20
    at.selectbox(key="scenario").set_value("code_generation").run()
    assert at.session_state["cfg.scenario"] == "code_generation"
    assert "Scenario: **code_generation**" in at.sidebar.markdown[0].value
    at.switch_page("app_pages/judge.py").run()
    at.switch_page(PAGE).run()
    assert at.selectbox(key="scenario").value == "code_generation"  # kept across pages
    assert at.text_input(key="scenario_search").value == "code"


def test_picked_criteria_replace_the_scenario_criteria(make_app: Callable[..., AppTest]) -> None:
    at = open_page(make_app)
    at.selectbox(key="scenario").set_value("code_generation").run()
    at.radio(key="criteria_mode").set_value("criteria").run()
    assert any("Pick at least one" in i.value for i in at.info)
    at.multiselect(key="criteria_basic").select("accuracy").run()
    at.multiselect(key="criteria_style").select("fluency").run()
    assert at.session_state["cfg.criteria"] == ("accuracy", "fluency")
    assert "replace the scenario's" in at.success[0].value
    settings = settings_from(at.session_state)
    resolved = resolve(settings.choice(), ITEM, load_catalog())
    assert resolved.rule.keys == ("accuracy", "fluency")
    assert resolved.scenario.id == "code_generation"
    at.multiselect(key="criteria_basic").unselect("accuracy").run()
    assert at.session_state["cfg.criteria"] == ("fluency",)


def test_rubric_load_use_save_and_load_again(
    make_app: Callable[..., AppTest], tmp_path: Path
) -> None:
    at = open_page(make_app)
    at.radio(key="criteria_mode").set_value("rubric").run()
    assert any("No rubric in use" in i.value for i in at.info)
    at.selectbox(key="rubric_file").set_value("helpfulness_1to5 (shipped)")
    at.button(key="load_rubric_file").click().run()
    shipped = load_rubric(RUBRICS_DIR / "helpfulness_1to5.yaml")
    assert at.session_state["cfg.rubric"] == shipped
    assert at.text_input(key="rubric_id").value == shipped.id
    assert len(at.data_editor) == 2

    target = tmp_path / "saved" / "helpful.yaml"
    at.text_input(key="rubric_save_path").input(str(target))
    at.button(key="save_rubric").click().run()
    assert target.is_file() and load_rubric(target) == shipped
    at.button(key="save_rubric").click().run()
    assert "exists" in at.error[0].value  # no silent overwrite

    at.button(key="new_rubric").click().run()
    assert at.text_input(key="rubric_id").value == "my_rubric"
    at.button(key="use_rubric").click().run()
    assert at.session_state["cfg.rubric"].id == "my_rubric"

    at.text_input(key="rubric_path").input(str(target))
    at.button(key="load_rubric").click().run()
    assert at.session_state["cfg.rubric"] == shipped
    assert settings_from(at.session_state).choice().rubric == shipped
    assert "Rubric: **" in at.sidebar.markdown[0].value


def test_rubric_upload_and_bad_files(make_app: Callable[..., AppTest], tmp_path: Path) -> None:
    at = open_page(make_app)
    at.radio(key="criteria_mode").set_value("rubric").run()
    text = (RUBRICS_DIR / "email_quality.yaml").read_bytes()
    at.file_uploader(key="rubric_upload").upload("email.yaml", text, "application/yaml").run()
    assert at.session_state["cfg.rubric"].id == "email_quality"
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: Bad Id\nname: x\n", encoding="utf-8")
    at.text_input(key="rubric_path").input(str(bad))
    at.button(key="load_rubric").click().run()
    assert "Could not load the rubric" in at.error[0].value
    assert at.session_state["cfg.rubric"].id == "email_quality"  # the old one stays in use
