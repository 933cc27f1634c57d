"""Settings: what the widgets hold becomes the core's JudgeConfig and BackendOptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.catalog.criteria_resolution import AUTO, resolve
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.formats.prompts import DEFAULT_TEMPLATE
from app.judging.settings import SettingsLayer
from app.records import JudgeItem, Protocol
from app.ui.settings import (
    MAX_UPLOAD_ENV,
    MODEL_ENV,
    Settings,
    check_model_file,
    default_model,
    max_upload_bytes,
    model_choices,
    model_defaults,
)
from models.registry import load_registry

ITEM = JudgeItem(id="x", question="Q?", answers=("a", "b"), scenario="code_generation")


def test_every_setting_reaches_the_config_and_the_load_options() -> None:
    settings = Settings(
        model="m.gguf",
        protocol="pairwise",
        temperature=0.7,
        top_p=0.9,
        max_tokens=512,
        repeat_penalty=1.2,
        seed=7,
        n_ctx=2048,
        n_threads=3,
        n_gpu_layers=12,
        use_reference=False,
        swap=False,
        judging=SettingsLayer(
            pair_combine="calibrated", tie_margin=0.25, template="pocketjudge-compact"
        ),
    )
    config = settings.judge_config()
    assert config.protocol is Protocol.PAIRWISE
    assert (config.use_reference, config.swap) == (False, False)
    assert (config.judge.pair_combine, config.judge.tie_margin) == ("calibrated", 0.25)
    assert config.judge.template == "pocketjudge-compact"
    sampling = config.sampling
    assert (sampling.temperature, sampling.top_p, sampling.max_tokens) == (0.7, 0.9, 512)
    assert (sampling.repeat_penalty, sampling.seed) == (1.2, 7)
    assert config.reference_metrics is False  # no reference, no metrics
    assert config.judge.max_input_chars is None  # no cap: the item is fitted to the context
    assert config.parts.context_tokens == 2048
    assert (config.mode, config.feedback) == ("score", False)
    options = settings.backend_options()
    assert (options.n_ctx, options.n_threads, options.n_gpu_layers) == (2048, 3, 12)


def test_defaults_match_the_cli() -> None:
    settings = Settings(model="x")
    config = settings.judge_config()
    assert config.protocol is None  # auto: by answer count
    assert config.choice.scenario == AUTO
    assert config.swap and config.use_reference
    assert config.sampling.max_tokens == 768 and config.sampling.repeat_penalty == 1.1
    assert settings.backend_options().n_threads is None  # 0 threads: llama.cpp chooses


def test_picked_criteria_replace_the_scenario_criteria() -> None:
    catalog = load_catalog()
    scenario_only = Settings(model="x", scenario="code_generation", criteria=("accuracy",))
    picked = Settings(
        model="x",
        scenario="code_generation",
        criteria_mode="criteria",
        criteria=("accuracy", "clarity"),
    )
    scenario_keys = resolve(scenario_only.choice(), ITEM, catalog).rule.keys
    assert scenario_keys == catalog.scenarios["code_generation"].criteria
    assert resolve(picked.choice(), ITEM, catalog).rule.keys == ("accuracy", "clarity")
    empty_pick = Settings(model="x", scenario="code_generation", criteria_mode="criteria")
    assert resolve(empty_pick.choice(), ITEM, catalog).rule.keys == scenario_keys


def test_a_rubric_replaces_both() -> None:
    rubric = load_rubric(RUBRICS_DIR / "helpfulness_1to5.yaml")
    settings = Settings(model="x", criteria_mode="rubric", rubric=rubric, criteria=("accuracy",))
    resolved = resolve(settings.choice(), ITEM, load_catalog())
    assert resolved.label == f"rubric:{rubric.id}"
    assert Settings(model="x", criteria_mode="rubric").choice().rubric is None


def test_model_env_overrides_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)
    assert default_model() == load_registry().default
    path = str(tmp_path / "judge.gguf")
    monkeypatch.setenv(MODEL_ENV, path)
    assert default_model() == path
    assert model_choices()[-1] == path
    assert set(load_registry().names()) <= set(model_choices())


def test_model_defaults_come_from_the_registry_entry() -> None:
    entry = load_registry().get()
    defaults = model_defaults(entry.name)
    assert defaults.judging.template == entry.judging.template
    assert defaults.judging.pair_combine == entry.judging.pair_combine
    assert defaults.judging.tie_margin == entry.judging.tie_margin
    assert defaults.n_ctx == entry.context
    assert defaults.trained_for_judging == entry.trained_for_judging
    unknown = model_defaults("/some/file.gguf")
    assert unknown.judging.template == DEFAULT_TEMPLATE and unknown.trained_for_judging is None


def test_check_model_file(tmp_path: Path) -> None:
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"GGUF")
    assert check_model_file(f"  {model}  ") == str(model.resolve())
    with pytest.raises(ValueError, match=r"not a \.gguf file"):
        check_model_file(str(tmp_path / "judge.bin"))
    with pytest.raises(ValueError, match="file not found"):
        check_model_file(str(tmp_path / "missing.gguf"))
    with pytest.raises(ValueError, match="type the path"):
        check_model_file("  ")


def test_upload_limit_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_UPLOAD_ENV, raising=False)
    assert max_upload_bytes() == 50_000_000
    monkeypatch.setenv(MAX_UPLOAD_ENV, "0.002")
    assert max_upload_bytes() == 2000
    monkeypatch.setenv(MAX_UPLOAD_ENV, "lots")
    assert max_upload_bytes() == 50_000_000


def test_code_runs_in_the_jail_by_default_with_the_reference_unless_turned_off() -> None:
    from app.catalog.criteria_resolution import CriteriaChoice
    from app.cli import _parser
    from app.cli.judge_command import run_fields

    assert Settings(model="x").judge_config().run_code is True  # on: the jail holds it
    assert Settings(model="x", run_code=False).judge_config().run_code is False
    unused = Settings(model="x", run_code=True, use_reference=False).judge_config()
    assert unused.run_code is False  # no reference, nothing to run beside
    args = _parser().parse_args(["judge", "rows.jsonl", "--out", "o.jsonl", "--no-run-code"])
    assert run_fields(args, CriteriaChoice())["run_code"] is False
    plain = _parser().parse_args(["judge", "rows.jsonl", "--out", "o.jsonl"])
    assert run_fields(plain, CriteriaChoice())["run_code"] is True
