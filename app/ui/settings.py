"""What the user chose in the app, as one frozen value, and how it reaches the core.

No Streamlit here: `Settings` is built from the session state by `app.ui.state` and turned
into the core's `JudgeConfig` and `BackendOptions` by the functions below, so the mapping
from widgets to the engine is testable on its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.catalog.criteria_resolution import AUTO, CriteriaChoice
from app.catalog.rubrics import Rubric
from app.judging.config import JudgeConfig
from app.judging.settings import SettingsLayer, judge_config, judge_settings
from app.records import Protocol
from models.backends.base import BackendOptions, sampling_of
from models.judge_settings import JudgeSettings
from models.registry import ModelEntry, load_registry
from models.run_settings import declared

MODEL_ENV = "POCKETJUDGE_MODEL"  # a registry name or a .gguf path: the app's default model
MAX_UPLOAD_ENV = "POCKETJUDGE_MAX_UPLOAD_MB"
DEFAULT_MAX_UPLOAD_MB = 50.0

AUTO_PROTOCOL = declared("protocol").default
PROTOCOL_LABELS = {
    AUTO_PROTOCOL: "Auto (by answer count)",
    Protocol.SINGLE.value: "Single answer grading",
    Protocol.PAIRWISE.value: "Pairwise comparison",
    Protocol.MULTI.value: "Multi-answer ranking",
    Protocol.ANCHORED.value: "Reference-anchored single grading",
}
COMBINE_LABELS = {
    "agree": "Agreement (a verdict both orders give, else tie)",
    "calibrated": "Position-calibrated (expected scores averaged over both orders)",
}

MODE_LABELS = {
    "score": "Score (decision from probabilities; fast)",
    "generate": "Full reply (the judge writes its critique too)",
}

CriteriaMode = Literal["scenario", "criteria", "rubric"]
CRITERIA_MODES: tuple[CriteriaMode, ...] = ("scenario", "criteria", "rubric")
CRITERIA_MODE_LABELS = {
    "scenario": "The scenario's criteria",
    "criteria": "Criteria I pick",
    "rubric": "A custom rubric",
}


# The judging settings the sidebar sets, by their JudgeSettings names (their session-state
# keys too); each is read from the model's registry entry when the model is chosen.
SIDEBAR_JUDGING = ("template", "pair_combine", "tie_margin", "uncertain_below")


def _starts(name: str) -> Any:
    """The value the app starts a run setting from (models/run_settings.py declares it)."""
    return declared(name).app_default


@dataclass(frozen=True)
class Settings:
    """Every choice that shapes a judgment. The run settings start where their declaration
    says the app starts (models/run_settings.py: the CLI's defaults, except reference
    metrics, on here because the result page shows them)."""

    model: str
    protocol: str = _starts("protocol")
    temperature: float = _starts("temperature")
    top_p: float = _starts("top_p")
    max_tokens: int = _starts("max_tokens")
    repeat_penalty: float = _starts("repeat_penalty")
    seed: int = _starts("seed")
    n_ctx: int = _starts("n_ctx")
    n_threads: int = _starts("n_threads")  # 0: let llama.cpp choose
    n_gpu_layers: int = _starts("n_gpu_layers")
    workers: int = _starts("workers")  # a batch's engines (0: one per usable core)
    use_reference: bool = _starts("use_reference")
    run_code: bool = _starts("run_code")
    self_reference: Literal["auto", "on", "off"] = _starts("self_reference")
    swap: bool = _starts("swap")
    # the sidebar's layer of judging settings over the model's registry entry (criterion
    # scores: off reads the verdict or grade alone, faster; on: as the model says)
    judging: SettingsLayer = field(default_factory=SettingsLayer)
    mode: Literal["score", "generate"] = _starts("mode")
    feedback: bool = _starts("feedback")  # batches: write a critique of every row (slower)
    reference_metrics: bool = _starts("reference_metrics")
    scenario: str = AUTO
    criteria_mode: CriteriaMode = "scenario"
    criteria: tuple[str, ...] = ()
    rubric: Rubric | None = field(default=None, compare=False)
    cascade_model: str = ""  # a second judge for unsure verdicts ("" none; app/judging/cascade.py)
    cascade_below: float = _starts("cascade_below")  # below it: to the second judge

    @property
    def protocol_value(self) -> Protocol | None:
        return None if self.protocol == AUTO_PROTOCOL else Protocol(self.protocol)

    def choice(self) -> CriteriaChoice:
        """The scenario always applies; picked criteria or a rubric replace its criteria."""
        if self.criteria_mode == "rubric" and self.rubric is not None:
            return CriteriaChoice(scenario=self.scenario, rubric=self.rubric)
        if self.criteria_mode == "criteria" and self.criteria:
            return CriteriaChoice(scenario=self.scenario, criteria=self.criteria)
        return CriteriaChoice(scenario=self.scenario)

    def judge_config(self) -> JudgeConfig:
        """The model's registry settings with the sidebar's choices over them, resolved by
        the same function the CLI and the evaluation use."""
        return judge_config(
            registry_entry(self.model),
            self.judging,
            context_tokens=self.n_ctx,
            protocol=self.protocol_value,
            choice=self.choice(),
            use_reference=self.use_reference,
            run_code=self.run_code and self.use_reference,
            self_reference=self.self_reference,
            swap=self.swap,
            sampling=sampling_of(self),
            mode=self.mode,
            feedback=self.feedback and self.mode == "score",
            reference_metrics=self.reference_metrics and self.use_reference,
        )

    def backend_options(self) -> BackendOptions:
        return BackendOptions(
            n_ctx=self.n_ctx,
            n_threads=self.n_threads or None,
            n_gpu_layers=self.n_gpu_layers,
        )


@dataclass(frozen=True)
class ModelDefaults:
    """What a model's registry entry says the app should start from: its judging settings
    (its `judging:` block) and its facts."""

    judging: JudgeSettings = field(default_factory=JudgeSettings)
    n_ctx: int = _starts("n_ctx")
    trained_for_judging: bool | None = None  # None: a file the registry does not know
    description: str = ""
    card: str | None = None
    cascade_model: str = ""  # the registry entry's second judge ("" none)
    cascade_below: float = _starts("cascade_below")


def default_model() -> str:
    """POCKETJUDGE_MODEL when set, else the registry's default."""
    return os.environ.get(MODEL_ENV, "").strip() or load_registry().default


def is_model_file(model: str) -> bool:
    return Path(model).suffix.lower() == ".gguf"


def registry_entry(model: str) -> ModelEntry | None:
    if is_model_file(model):
        return None
    registry = load_registry()
    return registry.get(model) if model in registry.names() else None


def model_defaults(model: str) -> ModelDefaults:
    entry = registry_entry(model)
    if entry is None:
        return ModelDefaults()
    return ModelDefaults(
        judging=judge_settings(entry),
        n_ctx=entry.context,
        trained_for_judging=entry.trained_for_judging,
        description=entry.description,
        card=entry.card,
        cascade_model=entry.cascade_to or "",
        cascade_below=entry.cascade_below,
    )


def measured_rows(model: str) -> tuple:
    """The measured agreement in the model's card (empty for a file or a card without any)."""
    from models.cards import card_facts

    entry = registry_entry(model)
    return card_facts(entry).measured if entry is not None else ()


def model_choices(added: tuple[str, ...] = ()) -> list[str]:
    """Registry names, then the POCKETJUDGE_MODEL file and the files the user added."""
    choices = list(load_registry().names())
    for model in (default_model(), *added):
        if model not in choices:
            choices.append(model)
    return choices


def model_label(model: str) -> str:
    return f"{Path(model).name} (file)" if is_model_file(model) else model


def check_model_file(text: str) -> str:
    """The absolute path of a GGUF file a user typed; ValueError saying what is wrong."""
    path = Path(text.strip().strip('"').strip("'")).expanduser()
    if not text.strip():
        raise ValueError("type the path of a .gguf file")
    if path.suffix.lower() != ".gguf":
        raise ValueError(f"{path}: not a .gguf file; convert the model to GGUF first")
    if not path.is_file():
        raise ValueError(f"{path}: file not found; check the path")
    return str(path.resolve())


def max_upload_bytes() -> int:
    """The upload size limit: POCKETJUDGE_MAX_UPLOAD_MB megabytes (default 50)."""
    raw = os.environ.get(MAX_UPLOAD_ENV, "").strip()
    try:
        megabytes = float(raw) if raw else DEFAULT_MAX_UPLOAD_MB
    except ValueError:
        megabytes = DEFAULT_MAX_UPLOAD_MB
    return max(1, int(megabytes * 1_000_000))


RUBRICS_ENV = "POCKETJUDGE_RUBRICS_DIR"


def user_rubrics_dir() -> Path:
    """Where the rubric editor saves by default: POCKETJUDGE_RUBRICS_DIR, else ~/.pocketjudge."""
    raw = os.environ.get(RUBRICS_ENV, "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".pocketjudge" / "rubrics"
