"""The settings a registry entry gives every JudgeConfig, and how overrides win."""

from app.model_settings import ModelJudgeSettings, SettingsLayer, model_judge_settings
from app.prompts import DEFAULT_TEMPLATE
from app.service import JudgeConfig
from models.registry import ModelEntry, load_registry

TRAINED = ModelEntry(
    name="trained",
    backend="llama-cpp",
    file="trained.gguf",
    template="pocketjudge-compact",
    pair_combine="calibrated",
    tie_margin=0.25,
    max_input_chars=1200,
)


def test_a_bare_model_file_gets_the_engine_defaults():
    assert model_judge_settings(None) == ModelJudgeSettings(
        template=DEFAULT_TEMPLATE, pair_combine="agree", tie_margin=0.0, max_input_chars=None
    )


def test_a_registry_entry_brings_its_own_settings():
    settings = model_judge_settings(TRAINED)
    assert settings == ModelJudgeSettings("pocketjudge-compact", "calibrated", 0.25, 1200)


def test_given_values_win_and_a_zero_tie_margin_is_a_value():
    settings = model_judge_settings(
        TRAINED,
        SettingsLayer(
            template="pocketjudge", pair_combine="agree", tie_margin=0.0, max_input_chars=900
        ),
    )
    assert settings == ModelJudgeSettings("pocketjudge", "agree", 0.0, 900)


def test_layers_merge_in_order_and_none_is_not_set():
    low = SettingsLayer(template="a", tie_margin=0.3, criteria=True)
    high = SettingsLayer(template="b", tie_margin=0.0, criteria=None)
    assert low.merge(high) == SettingsLayer(template="b", tie_margin=0.0, criteria=True)
    assert high.merge(low) == SettingsLayer(template="a", tie_margin=0.3, criteria=True)


def test_the_context_layer_comes_last():
    entry = TRAINED.model_copy(update={"context": 2048})
    assert model_judge_settings(None).context_tokens == 4096
    assert model_judge_settings(entry).context_tokens == 2048
    assert model_judge_settings(entry, context_tokens=1024).context_tokens == 1024
    config = JudgeConfig(**model_judge_settings(entry, context_tokens=1024).config_fields())
    assert config.context_tokens == 1024


def test_the_command_line_flags_are_one_layer_for_the_cli_and_the_evaluation():
    from app.cli import _parser as cli_parser
    from app.judging_arguments import judging_overrides
    from training.evaluate import _parser as eval_parser

    flags = ["--combine", "agree", "--tie-margin", "0", "--no-criteria"]
    cli = cli_parser().parse_args(["judge", "in.jsonl", "--out", "o.jsonl", *flags])
    evaluation = eval_parser().parse_args(["in.jsonl", *flags])
    expected = SettingsLayer(pair_combine="agree", tie_margin=0.0, criteria=False)
    assert judging_overrides(cli) == judging_overrides(evaluation) == expected
    unset = judging_overrides(eval_parser().parse_args(["in.jsonl"]))
    assert model_judge_settings(TRAINED, unset) == model_judge_settings(TRAINED)


def test_config_fields_cap_the_input_only_where_the_entry_does():
    assert model_judge_settings(None).config_fields()["max_input_chars"] is None  # what fits
    assert model_judge_settings(TRAINED).config_fields()["max_input_chars"] == 1200
    config = JudgeConfig(**model_judge_settings(TRAINED).config_fields())
    assert (config.template, config.pair_combine, config.tie_margin) == (
        "pocketjudge-compact",
        "calibrated",
        0.25,
    )


def test_the_default_judge_is_calibrated_with_its_trained_template():
    registry = load_registry()
    settings = model_judge_settings(registry.get())
    assert settings.template == registry.get().template
    assert settings.pair_combine == registry.get().pair_combine


def test_a_judge_trained_on_the_decision_alone_is_read_without_criteria():
    decision_only = TRAINED.model_copy(
        update={"template": "pocketjudge-decision-compact", "criteria": False}
    )
    assert JudgeConfig(**model_judge_settings(decision_only).config_fields()).criteria is False
    assert JudgeConfig(**model_judge_settings(TRAINED).config_fields()).criteria is True
    # --no-criteria on any other judge
    assert model_judge_settings(TRAINED, SettingsLayer(criteria=False)).criteria is False
    # and the registry entry a training run writes says so
    from training.registry_entry import registry_entry

    entry = registry_entry("x", base="qwen2.5-coder-0.5b", adapter="judges/x", criteria=False)
    assert ModelEntry.model_validate(entry).criteria is False
    assert "criteria" not in registry_entry("y", base="qwen2.5-coder-0.5b", adapter="judges/y")


def test_backend_names_come_from_the_backend_registry(monkeypatch):
    import pytest

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
    calibration, a scenario classifier) is read and validated here, for every entry."""
    from app.model_settings import SettingsLayer
    from models.registry import JUDGE_FILES, load_registry

    for entry in load_registry().models:
        layer = SettingsLayer.of_entry(entry)
        for name in JUDGE_FILES:
            assert (getattr(layer, name) is not None) is (getattr(entry, name) is not None), (
                entry.name,
                name,
            )
