"""Open a judge model by registry name or by file path."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from models import model_file
from models.backends import create_backend
from models.backends.base import Backend, BackendOptions
from models.foundation.errors import BackendUnavailable, ModelFileError
from models.registry import ModelEntry, load_registry


@dataclass
class LoadedJudge:
    backend: Backend
    name: str
    entry: ModelEntry | None

    def close(self) -> None:
        self.backend.close()


def backend_for_path(path: Path) -> str:
    if path.suffix.lower() == ".gguf":
        return "llama-cpp"
    if path.is_dir() and (path / "config.json").is_file():
        return "transformers"
    raise BackendUnavailable(
        f"{path}: not a .gguf file or a folder with config.json and safetensors weights"
    )


# Backends whose native code runs in an engine worker when a caller asks for isolation.
ISOLATABLE = ("llama-cpp",)


def create_isolated(kind: str, model: str, options: BackendOptions, isolated: bool) -> Backend:
    """`kind`'s backend for `model`; with `isolated`, in an engine worker process
    (models/backends/worker_backend.py) where its native code can crash alone, and the
    MiniLM embeddings of this process in one of their own."""
    if isolated and kind in ISOLATABLE:
        from models import sentence_encoder
        from models.backends.worker_backend import WorkerBackend

        sentence_encoder.isolate()  # relevance and scenario detection embed through llama.cpp
        return WorkerBackend(kind, model, options)
    return create_backend(kind, model, options)


def open_judge(
    model: str | None,
    options: BackendOptions | None = None,
    *,
    backend: str | None = None,
    isolated: bool = False,
) -> LoadedJudge:
    """`model` is a registry name, a .gguf path, a safetensors folder, or (openai) a server model.

    None opens the registry's default. `isolated`: llama.cpp runs in an engine worker
    process, so a native crash ends that process and raises EngineStopped here instead of
    ending the caller's (the app and the CLI ask for it).
    """
    options = options or BackendOptions()
    if backend == "openai":
        name = model or "default"
        return LoadedJudge(create_backend("openai", name, options), f"openai:{name}", None)
    if model and (Path(model).suffix.lower() == ".gguf" or Path(model).exists()):
        path = Path(model).expanduser()
        if not path.exists():
            raise ModelFileError(path, "missing", "file not found", model_file.MISSING_REMEDY)
        chosen = backend or backend_for_path(path)
        return LoadedJudge(create_isolated(chosen, str(path), options, isolated), path.name, None)
    entry = load_registry().get(model)
    if entry.backend == "openai":
        options = replace(
            options,
            base_url=options.base_url or entry.base_url,
            remote_model=options.remote_model or entry.remote_model,
        )
        return LoadedJudge(create_backend("openai", entry.name, options), entry.name, entry)
    path = entry.path()
    if path is None or not path.exists():
        how = (
            "run `make models`"
            if entry.build
            else "`make models` cannot build it; its model card says how it is made"
        )
        raise BackendUnavailable(
            f"model '{entry.name}' is not built yet ({path} is missing): {how}"
        )
    lora = entry.lora_path()
    if lora is not None:
        if not lora.is_file():
            raise BackendUnavailable(
                f"model '{entry.name}' is not built yet (its adapter {lora} is missing): "
                "run `make models`"
            )
        options = replace(options, lora_path=str(lora))
    try:
        backend = create_isolated(entry.backend, str(path), options, isolated)
    except ModelFileError as exc:
        if exc.kind != "corrupt":
            raise
        raise ModelFileError(exc.path, exc.kind, exc.problem, _rebuild_hint(entry)) from exc
    return LoadedJudge(backend, entry.name, entry)


def _rebuild_hint(entry: ModelEntry) -> str:
    """What to do about a registry model's damaged file (`make models` keeps a present one)."""
    if entry.build:
        return f"delete it and run `make models` to build model '{entry.name}' again"
    return f"delete it and make model '{entry.name}' again as its model card says"
