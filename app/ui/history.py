"""What the run history records of a batch the app runs. No Streamlit here.

The Batch page's settings become the run's recorded settings (and, with the uploaded
bytes, its run key), the same way the CLI's arguments do for `python -m app judge`:
everything that changes the results, nothing that only changes how fast they come
(threads, GPU layers, engines).
"""

from __future__ import annotations

import hashlib
from dataclasses import fields
from pathlib import Path
from typing import Any

from app.batches.job import upload_run_start
from app.judging.config import JudgeConfig
from app.runs.store import RunStart
from app.ui.settings import Settings, is_model_file, registry_entry

NOT_SETTINGS = frozenset({"rubric", "n_threads", "n_gpu_layers", "workers"})


def model_file(model: str) -> Path | None:
    """The model's GGUF file: the file chosen, or the registry entry's (None if neither)."""
    if is_model_file(model):
        return Path(model)
    entry = registry_entry(model)
    return entry.path() if entry is not None else None


def recorded_settings(settings: Settings) -> dict[str, Any]:
    """The settings a run's results depend on, JSON-serialisable: the rubric by its content,
    the model file by its path, size and modification time (as the CLI records it)."""
    recorded = {f.name: getattr(settings, f.name) for f in fields(settings)}
    recorded = {k: v for k, v in recorded.items() if k not in NOT_SETTINGS}
    if settings.criteria_mode == "rubric" and settings.rubric is not None:
        content = settings.rubric.model_dump_json().encode()
        recorded["rubric"] = hashlib.sha256(content).hexdigest()
    path = model_file(settings.model)
    if path is not None and path.exists():
        stat = path.stat()
        recorded["model_file"] = [str(path.resolve()), stat.st_size, stat.st_mtime_ns]
    return recorded


def batch_history(
    settings: Settings, data: bytes, name: str, model: str, config: JudgeConfig, total: int
) -> RunStart:
    """The run a batch of the uploaded file `name` (its bytes `data`) starts in the history."""
    return upload_run_start(
        data,
        name,
        recorded_settings(settings),
        model=model,
        template=config.judge.template,
        protocol=settings.protocol,
        scenario=settings.scenario,
        total=total,
        model_file=model_file(settings.model),
    )
