"""The settings a registry entry gives every JudgeConfig, how overrides win, and that every
judging setting is declared once (models/judge_settings.py) under one name."""

import ast
import dataclasses
from pathlib import Path

import pytest

from app.formats.prompts import DEFAULT_TEMPLATE
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.settings import SettingsLayer, judge_config, judge_settings, with_changes
from models.foundation.errors import ConfigError
from models.judge_settings import JUDGE_FILES, SETTING_NAMES, JudgeSettings
from models.registry import ModelEntry, load_registry

ROOT = Path(__file__).resolve().parents[3]
TRAINED = ModelEntry(
    name="trained",
    backend="llama-cpp",
    file="trained.gguf",
    judging={
        "template": "pocketjudge-compact",
        "pair_combine": "calibrated",
        "tie_margin": 0.25,
        "max_input_chars": 1200,
    },
)


def test_a_bare_model_file_gets_the_engine_defaults():
    assert judge_settings(None) == JudgeSettings(
        template=DEFAULT_TEMPLATE, pair_combine="agree", tie_margin=0.0, max_input_chars=None
    )


def test_a_registry_entry_brings_its_own_settings():
    settings = judge_settings(TRAINED)
    assert (settings.template, settings.pair_combine) == ("pocketjudge-compact", "calibrated")
    assert (settings.tie_margin, settings.max_input_chars) == (0.25, 1200)


def test_given_values_win_and_a_zero_tie_margin_is_a_value():
    settings = judge_settings(
        TRAINED,
        SettingsLayer(
            template="pocketjudge", pair_combine="agree", tie_margin=0.0, max_input_chars=900
        ),
    )
    assert settings == JudgeSettings(
        template="pocketjudge", pair_combine="agree", tie_margin=0.0, max_input_chars=900
    )


def test_layers_merge_in_order_and_none_is_not_set():
    low = SettingsLayer(template="a", tie_margin=0.3, criterion_scores=True)
    high = SettingsLayer(template="b", tie_margin=0.0, criterion_scores=None)
    assert low.merge(high) == SettingsLayer(template="b", tie_margin=0.0, criterion_scores=True)
    assert high.merge(low) == SettingsLayer(template="a", tie_margin=0.3, criterion_scores=True)


def test_a_layer_names_only_judging_settings_and_a_bad_value_names_its_field():
    with pytest.raises(TypeError, match="tie_band"):
        SettingsLayer(tie_band=0.1)
    with pytest.raises(ConfigError, match="tie_margin"):
        judge_settings(TRAINED, SettingsLayer(tie_margin=-1.0))


def test_the_context_is_the_loaded_models():
    entry = TRAINED.model_copy(update={"context": 2048})
    assert judge_config(None).parts.context_tokens == 4096
    assert judge_config(entry).parts.context_tokens == 2048
    assert judge_config(entry, context_tokens=1024).parts.context_tokens == 1024


def test_the_command_line_flags_are_one_layer_for_the_cli_and_the_evaluation():
    from app.cli import _parser as cli_parser
    from app.judging.arguments import judging_overrides
    from training.evaluation.evaluate import _parser as eval_parser

    flags = ["--combine", "agree", "--tie-margin", "0", "--no-criteria"]
    cli = cli_parser().parse_args(["judge", "in.jsonl", "--out", "o.jsonl", *flags])
    evaluation = eval_parser().parse_args(["in.jsonl", *flags])
    expected = SettingsLayer(pair_combine="agree", tie_margin=0.0, criterion_scores=False)
    assert judging_overrides(cli) == judging_overrides(evaluation) == expected
    unset = judging_overrides(eval_parser().parse_args(["in.jsonl"]))
    assert judge_settings(TRAINED, unset) == judge_settings(TRAINED)


def test_the_default_judge_gives_criteria_by_its_head_and_the_flag_reads_them_apart():
    from app.cli import _parser as cli_parser
    from app.judging.arguments import judging_overrides

    default = load_registry().get()
    assert judge_config(default).judge.criteria_read == "head"
    assert judge_config(default).parts.criterion_levels is not None
    args = cli_parser().parse_args(["judge", "in.jsonl", "--out", "o.jsonl", "--criteria-apart"])
    assert judge_config(default, judging_overrides(args)).judge.criteria_read == "apart"


def test_the_input_is_capped_only_where_the_entry_does():
    assert judge_config(None).judge.max_input_chars is None  # what fits
    config = judge_config(TRAINED)
    assert config.judge.max_input_chars == 1200
    assert (config.judge.template, config.judge.pair_combine, config.judge.tie_margin) == (
        "pocketjudge-compact",
        "calibrated",
        0.25,
    )


def test_the_default_judge_is_calibrated_with_its_trained_template():
    registry = load_registry()
    settings = judge_settings(registry.get())
    assert settings.template == registry.get().judging.template
    assert settings.pair_combine == registry.get().judging.pair_combine == "calibrated"


def test_a_judge_trained_on_the_decision_alone_is_read_without_criteria():
    decision_only = TRAINED.model_copy(
        update={"judging": JudgeSettings(template="pocketjudge-decision", criterion_scores=False)}
    )
    assert judge_config(decision_only).judge.criterion_scores is False
    assert judge_config(TRAINED).judge.criterion_scores is True
    # --no-criteria on any other judge
    off = judge_settings(TRAINED, SettingsLayer(criterion_scores=False))
    assert off.criterion_scores is False
    # and the registry entry a training run writes says so
    from training.shipping.registry_entry import registry_entry

    entry = registry_entry(
        "x", base="qwen2.5-coder-0.5b", adapter="judges/x", criterion_scores=False
    )
    assert ModelEntry.model_validate(entry).judging.criterion_scores is False
    written = registry_entry("y", base="qwen2.5-coder-0.5b", adapter="judges/y")
    assert "criterion_scores" not in written["judging"]


def test_keyword_changes_go_to_the_judge_or_the_run_by_their_names():
    config = with_changes(JudgeConfig(), {"tie_margin": 0.2, "swap": False})
    assert (config.judge.tie_margin, config.swap) == (0.2, False)
    files = {"state_head": "likelihood_head.json", "decision_record": "likelihood_decision.yaml"}
    head = with_changes(JudgeConfig(), files)
    assert head.parts.head is not None and head.parts.decision is not None  # files are loaded
    assert with_changes(head, {"state_head": False}).parts.head is None


def test_a_record_weighing_the_reward_model_needs_one_named_to_read_it(tmp_path):
    """`reward_model` names the registry reward model read for the record's `reward` signal; a
    record that weighs it with none named is refused, naming the setting."""
    import yaml

    from models.registry import MODELS_DIR

    judge = "judges/pj-qwen15-likelihood"
    data = yaml.safe_load((MODELS_DIR / judge / "decision.yaml").read_text(encoding="utf-8"))
    reward = {"name": "reward", "value": "v", "share": "reward", "reads": ["reward"], "cost": "c"}
    data["signals"].append(reward | {"weight": 0.5, "fitted": {"by": "x", "rows": "y"}})
    record = tmp_path / "decision.yaml"
    record.write_text(yaml.safe_dump(data), encoding="utf-8")
    files = {"state_head": f"{judge}/state_head.json", "decision_record": str(record)}
    with pytest.raises(ConfigError) as refused:
        with_changes(JudgeConfig(), files)
    assert refused.value.field == "reward_model" and "none is named" in str(refused.value)
    config = with_changes(JudgeConfig(), files | {"reward_model": "pj-qwen15-reward"})
    assert config.parts.reward is not None and config.parts.reward.name == "pj-qwen15-reward"
    plain = with_changes(config, {"decision_record": f"{judge}/decision.yaml"})
    assert plain.parts.decision is not None and not plain.parts.decision.uses("reward")


def test_backend_names_come_from_the_backend_registry(monkeypatch):
    from models import backends

    with pytest.raises(ValueError, match=r"unknown backend 'vllm-direct'; known: .*llama-cpp"):
        ModelEntry(name="x", backend="vllm-direct")
    monkeypatch.setitem(backends._FACTORIES, "vllm-direct", "some.module:create")
    assert ModelEntry(name="x", backend="vllm-direct").backend == "vllm-direct"
    from app.cli import _parser

    judge = _parser()._subparsers._group_actions[0].choices["judge"]
    assert "vllm-direct" in next(a for a in judge._actions if a.dest == "backend").choices


def test_every_registry_entrys_judge_files_load_with_their_model():
    """The registry checks that a judge's files are there; what is in them (a state head, a
    calibration, a scenario classifier, a criterion head, a decision record with its rubric
    grade) is read and validated here, for every entry."""
    loaded = {
        "state_head": "head",
        "decision_record": "decision",
        "calibration": "calibrator",
        "scenario_classifier": "classifier",
        "criterion_head": "criterion_levels",
    }
    assert set(loaded) == set(JUDGE_FILES)
    for entry in load_registry().models:
        parts = judge_config(entry).parts
        for name, part in loaded.items():
            named = getattr(entry.judging, name) is not None
            assert (getattr(parts, part) is not None) is named, (entry.name, name)
        record = parts.decision
        assert parts.rubric_combination == (record.rubric_grade if record else None), entry.name


# ------------------------------------------------------------------ declared once


def _declared_fields(path: Path) -> dict[str, set[str]]:
    """Class name -> the names its body declares as annotated fields, in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name: {
            item.target.id
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
        }
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }


def test_every_judging_setting_is_declared_once():
    """No class but JudgeSettings declares a field named as a judging setting (the registry
    entry embeds it, the run's JudgeConfig holds it, the app's Settings and the flags hold a
    layer of it), and the old names are gone."""
    owners: dict[str, list[str]] = {}
    for package in ("app", "models", "training"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for cls, names in _declared_fields(path).items():
                for name in names & {*SETTING_NAMES, "tie_band", "critiques", "criteria"}:
                    owners.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{cls}")
    judging = "models/judge_settings.py:JudgeSettings"
    # not settings but what used them: a judgment and a run record the template they were
    # judged with; a training config names what the judge it trains reads and is shipped
    # with (training/shipping/registry_entry.py writes these into its registry block)
    records = {"app/records.py:Judgment", "app/runs/store.py:RunInfo", "app/runs/store.py:RunStart"}
    trained = {"training/lora/config.py:DataConfig", "training/lora/config.py:ShipConfig"}
    for name in SETTING_NAMES:
        assert sorted(set(owners.pop(name)) - records - trained) == [judging], name
    # "criteria" stays a tuple of criterion ids where it is declared (the run's choice)
    # and "critiques" is gone: the settings say `criterion_scores` and `writes_critiques`
    assert "tie_band" not in owners and "critiques" not in owners
    assert "app/ui/settings.py:Settings" in owners["criteria"]  # the ids picked, a tuple
    assert not {name for name in JudgeConfig.__dataclass_fields__} & set(SETTING_NAMES)
    assert not {f.name for f in dataclasses.fields(JudgeParts)} & set(SETTING_NAMES)


def test_the_cli_flags_and_the_sidebar_set_judging_settings_by_their_names():
    """Each judging flag's destination and each sidebar key it keeps is a JudgeSettings
    field: the flags and widgets are checked against the one declaration."""
    import argparse

    from app.judging.arguments import add_judging_arguments
    from app.ui.settings import SIDEBAR_JUDGING

    parser = argparse.ArgumentParser()
    add_judging_arguments(parser)
    run_options = {"help", "mode", "n_ctx"}  # what the run asks and how the model loads
    dests = {action.dest for action in parser._actions} - run_options
    assert dests <= set(SETTING_NAMES), dests - set(SETTING_NAMES)
    assert set(SIDEBAR_JUDGING) <= set(SETTING_NAMES)
