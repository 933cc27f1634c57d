"""A trained judge's GGUF LoRA adapter, built by `make models` from its committed peft adapter.

llama.cpp applies a GGUF LoRA adapter to the base GGUF at load (`BackendOptions.lora_path`),
so a judge trained as a LoRA on a base the store already holds ships as its adapter alone:
no second copy of the base, and the base's own quantized weights are the ones it was
trained on. The committed folder (`lora_from` in models/registry.yaml) holds:

- `adapter_config.json`: peft's;
- `base_config.json`: the base's config.json (architecture and sizes; the converter reads
  no weights of the base);
- `adapter_model.partNN.safetensors`: the weights in bfloat16, cut into files under the
  repository's 10 MB limit (`split_adapter` writes them).

They are joined into a temporary peft folder and converted with llama.cpp's own
`convert_lora_to_gguf.py` (models.converter.convert_lora_to_gguf).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from models.registry import MODELS_DIR, STORE_DIR, ModelEntry

PART_BYTES = 9_000_000  # under the repository's 10 MB file limit
WEIGHTS = "adapter_model.safetensors"
BASE_CONFIG = "base_config.json"


def split_adapter(adapter_dir: Path, base_config: dict, out_dir: Path) -> list[Path]:
    """`adapter_dir` (a peft folder) written to `out_dir` for committing: its config, the
    base's config and its weights in bfloat16 parts; the files written."""
    import torch
    from safetensors.torch import load_file, save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("adapter_model.part*.safetensors"):
        stale.unlink()
    shutil.copy2(adapter_dir / "adapter_config.json", out_dir / "adapter_config.json")
    (out_dir / BASE_CONFIG).write_text(json.dumps(base_config, indent=1), encoding="utf-8")
    loaded = load_file(adapter_dir / WEIGHTS)
    weights = {k: v.to(torch.bfloat16).contiguous() for k, v in loaded.items()}
    parts: list[dict] = [{}]
    size = 0
    for name in sorted(weights):
        tensor_bytes = weights[name].numel() * 2
        if parts[-1] and size + tensor_bytes > PART_BYTES:
            parts.append({})
            size = 0
        parts[-1][name] = weights[name]
        size += tensor_bytes
    written = []
    for number, part in enumerate(parts):
        path = out_dir / f"adapter_model.part{number:02d}.safetensors"
        save_file(part, path, metadata={"format": "pt"})
        written.append(path)
    return written


def joined_adapter(folder: Path, out_dir: Path) -> tuple[Path, Path]:
    """The committed `folder` as a peft folder and a base-config folder under `out_dir`."""
    from safetensors.torch import load_file, save_file

    parts = sorted(folder.glob("adapter_model.part*.safetensors"))
    if not parts or not (folder / "adapter_config.json").is_file():
        raise SystemExit(f"{folder}: no committed adapter (adapter_config.json and weight parts)")
    adapter, base = out_dir / "adapter", out_dir / "base"
    adapter.mkdir(parents=True)
    base.mkdir()
    shutil.copy2(folder / "adapter_config.json", adapter / "adapter_config.json")
    shutil.copy2(folder / BASE_CONFIG, base / "config.json")
    weights: dict = {}
    for part in parts:
        weights |= load_file(part)
    save_file(weights, adapter / WEIGHTS, metadata={"format": "pt"})
    return adapter, base


def build_lora(entry: ModelEntry, store: Path = STORE_DIR, models_dir: Path = MODELS_DIR) -> str:
    """Build the entry's GGUF LoRA adapter (`lora`) from `lora_from`; what was done."""
    path = entry.lora_path(store)
    if path is None or not entry.lora_from:
        return "no adapter to build"
    if path.exists():
        return f"adapter present: {path}"
    from models.converter import convert_lora_to_gguf

    store.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pj-lora-", dir=store) as tmp:
        adapter, base = joined_adapter(models_dir / entry.lora_from, Path(tmp))
        convert_lora_to_gguf(adapter, base, path)
    return f"adapter built: {path} ({path.stat().st_size / 1e6:.0f} MB)"
