"""The registry of judge models (models/registry.yaml), validated on load."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from models.foundation.datafiles import read_mapping, validate
from models.foundation.errors import ConfigError, UnknownNameError
from models.judge_settings import JudgeSettings
from models.run_settings import RUN_DEFAULTS

MODELS_DIR = Path(__file__).resolve().parent
REGISTRY_FILE = MODELS_DIR / "registry.yaml"
STORE_DIR = MODELS_DIR / "store"


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
    judging: JudgeSettings = JudgeSettings()  # how it judges (models/judge_settings.py)
    # A second judge (a registry name) for the judgments this one is unsure of: those with a
    # confidence below `cascade_below` go to it (app/judging/cascade.py); None: no cascade.
    cascade_to: str | None = None
    cascade_below: float = Field(default=RUN_DEFAULTS.cascade_below, ge=0, le=1)
    card: str | None = None  # its model card (under models/), whose measured figures the app shows
    adapter: str | None = None  # build from base + adapter: folder under models/, see build.py
    base: str | None = None  # the base an adapter build starts from (models/base_models.py BASES)
    # llama.cpp: a GGUF LoRA adapter in models/store applied to `file` at load, and the peft
    # adapter folder under models/ that `make models` converts into it (models/lora_build.py)
    lora: str | None = None
    lora_from: str | None = None
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
            raise ValueError(
                "an 'adapter:<folder>' build needs 'base' (a name in models/base_models.py)"
            )
        return self

    @model_validator(mode="after")
    def _lora_build_has_file(self) -> ModelEntry:
        if self.lora_from and not self.lora:
            raise ValueError("lora_from: needs 'lora', the GGUF adapter file it is built into")
        return self

    def path(self, store: Path = STORE_DIR) -> Path | None:
        return store / self.file if self.file else None

    def lora_path(self, store: Path = STORE_DIR) -> Path | None:
        return store / self.lora if self.lora else None


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
