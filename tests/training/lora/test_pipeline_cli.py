"""`python -m training run`: arguments are checked before any stage runs."""

import pytest

from training.lora import pipeline


def _fail(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        pipeline.main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_unknown_stage_is_named(capsys):
    assert "unknown stage(s) ['trian']" in _fail(
        ["run", "smollm2-judge", "--stages", "trian"], capsys
    )


def test_adapters_must_be_in_the_config(capsys):
    err = _fail(["run", "smollm2-decision", "--stages", "train", "--adapters", "single"], capsys)
    assert "adapter(s) ['single'] not in the config" in err
    assert "['pairwise']" in err


def test_adapters_only_restrict_the_train_stage(capsys):
    err = _fail(["run", "smollm2-judge", "--stages", "train,merge", "--adapters", "single"], capsys)
    assert "--adapters goes with --stages train only" in err


def test_adapters_pick_what_the_train_stage_trains(monkeypatch):
    seen = {}

    def fake_run(config, stages, config_path=None):
        seen["adapters"], seen["stages"] = config.adapters, stages
        return {}

    monkeypatch.setattr(pipeline, "run_pipeline", fake_run)
    pipeline.main(["run", "smollm2-judge", "--stages", "train", "--adapters", "pairwise"])
    assert seen == {"adapters": ("pairwise",), "stages": ("train",)}


def test_a_judge_trained_on_the_decision_alone_is_evaluated_without_criteria():
    from training.lora.config import load_config, resolve_config_path
    from training.lora.pipeline import _eval_overrides

    config = load_config(resolve_config_path("qwen05-decision"))
    assert config.data.criteria is False
    overrides = _eval_overrides(config, 0.05)
    assert overrides.settings.criterion_scores is False
    assert overrides.settings.template == config.data.template
    assert overrides.settings.tie_margin == 0.05
