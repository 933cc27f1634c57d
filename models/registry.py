"""The registry of judge models (models/registry.yaml), validated on load."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.datafiles import read_mapping, validate
from app.errors import ConfigError, UnknownNameError
from models.verdict_settings import PairCombine, RelevanceJoin

MODELS_DIR = Path(__file__).resolve().parent
REGISTRY_FILE = MODELS_DIR / "registry.yaml"
STORE_DIR = MODELS_DIR / "store"
JUDGE_FILES = ("state_head", "calibration", "scenario_classifier")  # files under models/


class ModelEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    backend: str  # a name in the backend registry (models/backends/__init__.py)
    file: str | None = None  # in models/store: a .gguf file or a safetensors folder
    build: str | None = None  # how `make models` produces the file
    remote_model: str | None = None  # openai backend: the server's model name
    base_url: str | None = None
    trained_for_judging: bool = False
    context: int = 4096
    template: str | None = None  # the prompt template the model was trained on
    pair_combine: PairCombine = "agree"
    tie_margin: float = Field(default=0.0, ge=0)
    max_input_chars: int | None = Field(default=None, ge=200)  # a cap; None: what the context holds
    # Pairwise verdicts and rankings less confident than this are reported as uncertain.
    uncertain_below: float = Field(default=0.5, ge=0, le=1)
    critiques: bool = True  # False: the judge writes no critique; "Explain" says so
    # False: trained on the decision alone (decision-first templates), so criterion scores
    # are not read from it (they would be untrained guesses)
    criteria: bool = True
    # Pairwise verdicts joined with MiniLM request relevance (weights fitted on training-split
    # pairs by training.relevance_join); None: the judge's own verdict.
    relevance_join: RelevanceJoin | None = None
    # Verdicts, rankings (and grades, where it has a grade head) read from the model's own
    # hidden states by a fitted linear head: a JSON file under models/ (app/state_head.py,
    # fitted by training.state_head); None: decided from the generated or scored reply.
    state_head: str | None = None
    # A second judge (a registry name) for the judgments this one is unsure of: those with a
    # confidence below `cascade_below` go to it (app/cascade.py); None: no cascade.
    cascade_to: str | None = None
    # Its confidence mapped to how often such verdicts are right (app/calibration.py): a
    # JSON file under models/, fitted by training.confidence_calibration; None: none.
    calibration: str | None = None
    # `scenario: auto` read from the judge model's own states of the request: a classifier
    # file under models/ (app/scenario_detection.py, fitted by training.scenario_classifier
    # --states); None: the shipped MiniLM classifier.
    scenario_classifier: str | None = None
    cascade_below: float = Field(default=0.6, ge=0, le=1)
    card: str | None = None  # its model card (under models/), whose measured figures the app shows
    adapter: str | None = None  # build from base + adapter: folder under models/, see build.py
    base: str | None = None  # the base an adapter build starts from (models/bases.py BASES)
    description: str = ""

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from models.backends import backend_names

        if value not in backend_names():
            raise ValueError(f"unknown backend '{value}'; known: {', '.join(backend_names())}")
        return value

    @model_validator(mode="after")
    def _adapter_build_has_base(self) -> ModelEntry:
        if (self.build or "").partition(":")[0] == "adapter" and not self.base:
            raise ValueError("an 'adapter:<folder>' build needs 'base' (a name in models/bases.py)")
        return self

    @model_validator(mode="after")
    def _judge_files_exist(self) -> ModelEntry:
        """The files a judge reads beside its model are there. What is in them is checked
        where they are read (app.model_settings: the head, the calibration, the
        classifier), with errors naming the file and the field."""
        for field_name in JUDGE_FILES:
            relative = getattr(self, field_name)
            if relative is not None and not (MODELS_DIR / relative).is_file():
                missing = ConfigError(MODELS_DIR / relative, field_name, "file not found")
                raise ValueError(f"{field_name}: {missing}")
        return self

    def path(self, store: Path = STORE_DIR) -> Path | None:
        return store / self.file if self.file else None


class Registry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    default: str
    models: tuple[ModelEntry, ...]

    def names(self) -> list[str]:
        return [entry.name for entry in self.models]

    def get(self, name: str | None = None) -> ModelEntry:
        wanted = name or self.default
        for entry in self.models:
            if entry.name == wanted:
                return entry
        raise UnknownNameError("model", wanted, self.names())


@cache
def load_registry(path: Path = REGISTRY_FILE) -> Registry:
    registry = validate(Registry, read_mapping(path), path)
    names = registry.names()
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(path, "models", f"duplicate model names: {', '.join(duplicates)}")
    if registry.default not in names:
        raise ConfigError(path, "default", f"'{registry.default}' is not one of {names}")
    for index, entry in enumerate(registry.models):
        if entry.cascade_to is not None and entry.cascade_to not in set(names) - {entry.name}:
            raise ConfigError(
                path,
                f"models.{index}.cascade_to",
                f"'{entry.cascade_to}' is not another model of the registry ({names})",
            )
    return registry
