from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.catalog.rubrics import (
    RUBRICS_DIR,
    Rubric,
    RubricCriterion,
    builtin_rubrics,
    load_rubric,
    save_rubric,
)
from app.catalog.scenarios import CATEGORIES, SCENARIOS_DIR, Catalog, load_catalog
from models.foundation.errors import ConfigError, UnknownNameError

GROUP_SIZES = {
    "Summarization": 3,
    "Exam Questions": 3,
    "Rewriting": 5,
    "Code": 5,
    "Creative Writing": 9,
    "Functional Writing": 10,
    "General Communication": 12,
    "NLP Tasks": 11,
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


# --------------------------------------------------------------------------- shipped data


def test_scenarios_and_groups(catalog: Catalog) -> None:
    assert len(catalog.scenarios) == 58
    assert {g: len(ids) for g, ids in catalog.groups.items()} == GROUP_SIZES
    assert list(catalog.groups) == list(GROUP_SIZES)
    ordered = [s for ids in catalog.groups.values() for s in ids]
    assert list(catalog.scenarios) == ordered


def test_default_scenario(catalog: Catalog) -> None:
    default = catalog.get_scenario("default")
    assert len(default.criteria) == 10
    assert catalog.get_scenario("others") is default
    assert catalog.get_scenario("OTHERS") is default
    assert catalog.get_scenario("Post Summarization").id == "post_summarization"


def test_criteria_library(catalog: Catalog) -> None:
    assert len(catalog.criteria) >= 110
    by_category = catalog.criteria_by_category()
    assert list(by_category) == list(CATEGORIES)
    assert all(by_category.values())
    assert sum(len(v) for v in by_category.values()) == len(catalog.criteria)


def test_every_scenario_has_5_to_10_known_criteria(catalog: Catalog) -> None:
    for scenario in catalog.scenarios.values():
        assert 5 <= len(scenario.criteria) <= 10, scenario.id
        assert len(set(scenario.criteria)) == len(scenario.criteria), scenario.id
        assert set(scenario.criteria) <= set(catalog.criteria), scenario.id
        assert scenario.description, scenario.id


def test_every_criterion_is_used(catalog: Catalog) -> None:
    used = {c for s in catalog.scenarios.values() for c in s.criteria}
    assert set(catalog.criteria) - used == set()


def test_unknown_names(catalog: Catalog) -> None:
    with pytest.raises(UnknownNameError) as info:
        catalog.get_scenario("nope")
    assert "post_summarization" in info.value.valid
    with pytest.raises(UnknownNameError):
        catalog.get_criterion("nope")
    assert catalog.get_criterion("Accuracy").id == "accuracy"


def test_search(catalog: Catalog) -> None:
    assert "code_generation" in [s.id for s in catalog.search("code")]
    assert [s.id for s in catalog.search("OTHERS")] == ["default"]
    assert len(catalog.search("")) == 58
    assert "accuracy" in [c.id for c in catalog.search_criteria("facts")]


def test_catalog_is_cached_and_read_only(catalog: Catalog) -> None:
    assert load_catalog(SCENARIOS_DIR / ".." / "scenarios") is catalog
    with pytest.raises(TypeError):
        catalog.scenarios["x"] = catalog.scenarios["default"]  # type: ignore[index]


# --------------------------------------------------------------------------- specs and weights


def test_specs_for_scenario(catalog: Catalog) -> None:
    specs = catalog.specs_for("code_generation")
    assert [s.key for s in specs] == list(catalog.get_scenario("code_generation").criteria)
    assert [s.weight for s in specs[:3]] == [2.0, 2.0, 1.0]
    assert all((s.scale_min, s.scale_max, s.levels) == (1, 10, {}) for s in specs)


def test_specs_for_defaults_to_default_scenario(catalog: Catalog) -> None:
    assert catalog.specs_for() == catalog.specs_for("default")
    assert len(catalog.specs_for()) == 10


def test_custom_criteria_replace_the_scenario(catalog: Catalog) -> None:
    specs = catalog.specs_for("code_generation", ["clarity", "Accuracy", "brevity", "clarity"])
    assert [s.key for s in specs] == ["clarity", "accuracy", "brevity"]
    assert [s.weight for s in specs] == [2.0, 2.0, 1.0]
    with pytest.raises(UnknownNameError):
        catalog.specs_for(criteria_ids=["not_a_criterion"])


# --------------------------------------------------------------------------- rubrics


def test_every_rubric_loads() -> None:
    rubrics = builtin_rubrics()
    expected = {"vqa_animal_identification", "helpfulness_1to5", "code_review_1to10"}
    assert expected | {"email_quality"} <= set(rubrics)
    for name, path in rubrics.items():
        assert load_rubric(path).id == name


def test_vqa_rubric() -> None:
    rubric = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")
    assert rubric.aggregate == "sum"
    scales = [(c.scale_min, c.scale_max) for c in rubric.criteria]
    assert scales == [(0, 2), (0, 3), (0, 5), (0, 2), (0, 3)]
    assert sum(s.scale_max for s in rubric.specs()) == 15
    assert all(s.weight == 1.0 for s in rubric.specs())


def test_ranged_levels_are_normalised() -> None:
    rubric = load_rubric(RUBRICS_DIR / "code_review_1to10.yaml")
    first = rubric.criteria[0]
    assert list(first.levels) == ["1-2", "3-4", "5-6", "7-8", "9-10"]
    assert first.describe(4) == first.levels["3-4"]
    assert first.describe(11) is None
    assert [s.weight for s in rubric.specs()] == [2.0, 2.0, 1.0, 1.0, 1.0]


def test_rubric_round_trip(tmp_path: Path) -> None:
    for path in builtin_rubrics().values():
        rubric = load_rubric(path)
        saved = save_rubric(rubric, tmp_path / "out" / path.name)
        assert load_rubric(saved) == rubric


def test_rubric_built_in_code_round_trips(tmp_path: Path) -> None:
    criterion = RubricCriterion(
        id="tone",
        name="Tone",
        description="Fits the reader.",
        scale_min=1,
        scale_max=4,
        levels={4: "great", "1 - 2": "poor", "3": "fine"},
        weight=0.5,
    )
    assert list(criterion.levels) == ["1-2", "3", "4"]
    rubric = Rubric(id="mine", name="Mine", description="d", criteria=(criterion,))
    assert rubric.specs()[0].weight == 0.5
    assert load_rubric(save_rubric(rubric, tmp_path / "mine.yaml")) == rubric


# --------------------------------------------------------------------------- error reports

CRITERIA_OK = """\
criteria:
  - {id: c1, name: C1, category: basic, description: d}
  - {id: c2, name: C2, category: style, description: d}
  - {id: c3, name: C3, category: content, description: d}
  - {id: c4, name: C4, category: format, description: d}
  - {id: c5, name: C5, category: basic, description: d}
"""
FIVE = "[c1, c2, c3, c4, c5]"
SCENARIOS_OK = f"""\
groups: [G]
scenarios:
  - {{id: default, name: D, group: G, description: d, criteria: {FIVE}, aliases: [others]}}
  - {{id: s1, name: S1, group: G, description: d, criteria: {FIVE}}}
"""

CATALOG_ERRORS = [
    (
        "unknown criterion",
        "scenarios.yaml",
        SCENARIOS_OK.replace(
            "criteria: [c1, c2, c3, c4, c5]}\n", "criteria: [c1, c2, c3, c9, c5]}\n"
        ),
        "scenarios[1].criteria[3]",
        "unknown criterion 'c9'",
    ),
    (
        "bad category",
        "criteria.yaml",
        CRITERIA_OK.replace("category: format", "category: colour"),
        "criteria[3].category",
        "'colour'",
    ),
    (
        "missing field",
        "criteria.yaml",
        CRITERIA_OK.replace("name: C2, ", ""),
        "criteria[1].name",
        "required field is missing",
    ),
    (
        "extra field",
        "scenarios.yaml",
        SCENARIOS_OK.replace("id: s1,", "id: s1, colour: red,"),
        "scenarios[1].colour",
        "unknown field 'colour'; allowed: id, name, group",
    ),
    (
        "YAML syntax error",
        "scenarios.yaml",
        SCENARIOS_OK + "  - {id: broken\n",
        "line ",
        "invalid YAML",
    ),
    (
        "duplicate YAML key",
        "criteria.yaml",
        CRITERIA_OK.replace("name: C2,", "name: C2, name: again,"),
        "line 3, column ",
        "duplicate key 'name'",
    ),
    (
        "duplicate criterion id",
        "criteria.yaml",
        CRITERIA_OK.replace("id: c4", "id: c2"),
        "criteria[3].id",
        "duplicate criterion 'c2'",
    ),
    (
        "duplicate scenario id",
        "scenarios.yaml",
        SCENARIOS_OK.replace("id: s1", "id: default"),
        "scenarios[1].id",
        "duplicate scenario 'default'",
    ),
    (
        "too few criteria",
        "scenarios.yaml",
        SCENARIOS_OK.replace("criteria: [c1, c2, c3, c4, c5]}\n", "criteria: [c1, c2]}\n"),
        "scenarios[1].criteria",
        "needs at least 5",
    ),
    (
        "criterion repeated in a scenario",
        "scenarios.yaml",
        SCENARIOS_OK.replace(
            "criteria: [c1, c2, c3, c4, c5]}\n", "criteria: [c1, c2, c3, c4, c1]}\n"
        ),
        "scenarios[1].criteria[4]",
        "duplicate criterion 'c1'",
    ),
    (
        "unknown group",
        "scenarios.yaml",
        SCENARIOS_OK.replace("id: s1, name: S1, group: G", "id: s1, name: S1, group: H"),
        "scenarios[1].group",
        "unknown group 'H'",
    ),
    (
        "alias clashes with an id",
        "scenarios.yaml",
        SCENARIOS_OK.replace("aliases: [others]", "aliases: [s1]"),
        "scenarios[0].aliases[0]",
        "clashes with scenario id 's1'",
    ),
    (
        "bad id",
        "criteria.yaml",
        CRITERIA_OK.replace("id: c5", "id: Bad-Id"),
        "criteria[4].id",
        "not a valid id",
    ),
    (
        "no default scenario",
        "scenarios.yaml",
        SCENARIOS_OK.replace("id: default", "id: s0").replace("aliases: [others]", "aliases: []"),
        "scenarios",
        "'default' is required",
    ),
    ("empty file", "criteria.yaml", "", "", "file is empty"),
]


@pytest.mark.parametrize(
    ("file_name", "text", "field", "message"),
    [case[1:] for case in CATALOG_ERRORS],
    ids=[case[0] for case in CATALOG_ERRORS],
)
def test_catalog_errors_name_file_and_field(
    tmp_path: Path, file_name: str, text: str, field: str, message: str
) -> None:
    (tmp_path / "criteria.yaml").write_text(CRITERIA_OK)
    (tmp_path / "scenarios.yaml").write_text(SCENARIOS_OK)
    load_catalog(tmp_path)  # the fixtures themselves are valid
    bad_root = tmp_path / "bad"
    bad_root.mkdir()
    for name in ("criteria.yaml", "scenarios.yaml"):
        shutil.copy(tmp_path / name, bad_root / name)
    (bad_root / file_name).write_text(text)
    with pytest.raises(ConfigError) as info:
        load_catalog(bad_root)
    error = info.value
    assert error.path == str(bad_root / file_name)
    assert _field_matches(error.field, field)
    assert message in error.message
    assert str(bad_root / file_name) in str(error)


RUBRIC_OK = """\
id: r
name: R
description: d
criteria:
  - id: a
    name: A
    description: d
    scale: {min: 1, max: 5}
    levels: {1: bad, 2-3: meh, "4": good, 5: great}
  - id: b
    name: B
    description: d
    scale: {min: 0, max: 2}
    levels: {0: none, 1: some, 2: all}
"""

RUBRIC_ERRORS = [
    ("level gap", RUBRIC_OK.replace("2-3: meh", "2: meh"), "criteria[0].levels", "score(s) 3"),
    (
        "level overlap",
        RUBRIC_OK.replace("2-3: meh", "2-4: meh"),
        "criteria[0].levels.4",
        "overlaps level '2-4'",
    ),
    (
        "same level twice",
        RUBRIC_OK.replace('"4": good', "4: good, 4-4: again"),
        "criteria[0].levels.4-4",
        "given twice",
    ),
    (
        "level out of range",
        RUBRIC_OK.replace("2: all}", "2: all, 3: too much}"),
        "criteria[1].levels.3",
        "outside the scale 0-2",
    ),
    (
        "bad level key",
        RUBRIC_OK.replace("1: some", "one: some"),
        "criteria[1].levels.one",
        "a level key is a score",
    ),
    (
        "min not below max",
        RUBRIC_OK.replace("{min: 0, max: 2}", "{min: 2, max: 2}"),
        "criteria[1].scale",
        "must be below max",
    ),
    (
        "scale field missing",
        RUBRIC_OK.replace("{min: 0, max: 2}", "{max: 2}"),
        "criteria[1].scale.min",
        "required field is missing",
    ),
    (
        "scale not an integer",
        RUBRIC_OK.replace("{min: 0, max: 2}", "{min: zero, max: 2}"),
        "criteria[1].scale.min",
        "integer",
    ),
    (
        "duplicate criterion id",
        RUBRIC_OK.replace("  - id: b", "  - id: a"),
        "criteria[1].id",
        "duplicate criterion id 'a'",
    ),
    (
        "bad aggregate",
        RUBRIC_OK.replace("description: d\ncriteria:", "description: d\naggregate: max\ncriteria:"),
        "aggregate",
        "'max'",
    ),
    (
        "extra criterion field",
        RUBRIC_OK.replace("    name: B\n", "    name: B\n    colour: red\n"),
        "criteria[1].colour",
        "allowed: id, name, description, scale, levels, weight",
    ),
    (
        "negative weight",
        RUBRIC_OK.replace("    name: B\n", "    name: B\n    weight: -1\n"),
        "criteria[1].weight",
        "greater than 0",
    ),
    (
        "no criteria",
        RUBRIC_OK.split("criteria:", maxsplit=1)[0] + "criteria: []\n",
        "criteria",
        "at least 1",
    ),
    ("YAML syntax error", RUBRIC_OK.replace("levels: {0:", "levels: {0: ["), "line ", "invalid"),
    ("not a mapping", "- just\n- a list\n", "", "got a list"),
]


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [case[1:] for case in RUBRIC_ERRORS],
    ids=[case[0] for case in RUBRIC_ERRORS],
)
def test_rubric_errors_name_file_and_field(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    load_rubric(_write(tmp_path / "ok.yaml", RUBRIC_OK))
    path = _write(tmp_path / "bad.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_rubric(path)
    error = info.value
    assert error.path == str(path)
    assert _field_matches(error.field, field)
    assert message in error.message


def test_missing_rubric_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_rubric(tmp_path / "nope.yaml")


def _field_matches(actual: str, expected: str) -> bool:
    """YAML errors are located by line and column, the rest by field path."""
    return actual.startswith(expected) if expected.startswith("line ") else actual == expected


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
