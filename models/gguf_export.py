"""A merged safetensors folder turned into a GGUF (llama.cpp's converter), and a
Q4_K_M copy (llama.cpp's quantizer).

Here rather than under training/: `make models` builds a judge from its base
and committed adapter with these, and must not need the training code.

    python -m training.shipping.export gguf MODEL_DIR OUT.gguf [--outtype q8_0] [--base NAME]
    python -m training.shipping.export q4_k_m IN.gguf OUT.gguf
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from models.base_models import BASES, base_gguf, get_base
from models.converter import convert_hf_to_gguf
from models.foundation.errors import BackendError
from models.gguf_vocab import added_tokens_decoder, read_gguf_vocab, write_sentencepiece_model

# -- GGUF ---------------------------------------------------------------------------


def export_gguf(
    model_dir: Path, out_file: Path, outtype: str = "q8_0", *, base: str | None = None
) -> Path:
    """Convert a (merged) safetensors folder to one GGUF file with llama.cpp's converter.

    The converter reads a staged copy of the folder (links, plus the fixes of
    `stage_for_converter`); the folder itself is not changed. `base` names the
    base model (models/base_models.py) when the folder needs its GGUF vocabulary
    and does not say where it comes from (no `pocketjudge_source.json`).
    """
    model_dir, out_file = Path(model_dir), Path(out_file)
    with tempfile.TemporaryDirectory(prefix="pj-export-") as tmp:
        stage = stage_for_converter(model_dir, Path(tmp) / out_file.stem, base)
        return convert_hf_to_gguf(stage, out_file, outtype)


def stage_for_converter(model_dir: Path, stage: Path, base: str | None = None) -> Path:
    """A folder of links to `model_dir`'s files, with what the converter needs fixed.

    - `config.json` loses a `quantization_config` of quant_method "gguf" that
      transformers leaves after loading a GGUF (the weights are floats; the
      converter would refuse them);
    - a SentencePiece base (Gemma 3) without `tokenizer.model` gets it back from
      the base's GGUF (models/gguf_vocab.py);
    - with a `tokenizer.model`, `tokenizer_config.json` gets the
      `added_tokens_decoder` transformers 5 no longer writes, so control and
      user-defined tokens keep their types.
    """
    if not (model_dir / "config.json").is_file():
        raise BackendError(f"{model_dir} is not a Hugging Face model directory (no config.json)")
    stage.mkdir(parents=True)
    rewritten = {"config.json", "tokenizer_config.json"}
    for item in model_dir.iterdir():
        if item.name not in rewritten:
            (stage / item.name).symlink_to(item.resolve())
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if (config.get("quantization_config") or {}).get("quant_method") == "gguf":
        del config["quantization_config"]
    _write_json(stage / "config.json", config)

    tokenizer_config_file = model_dir / "tokenizer_config.json"
    tokenizer_config = (
        json.loads(tokenizer_config_file.read_text(encoding="utf-8"))
        if tokenizer_config_file.is_file()
        else {}
    )
    sp_model = stage / "tokenizer.model"
    gguf_path = None if sp_model.exists() else _base_gguf_of(model_dir, base)
    if gguf_path is not None:
        vocab = read_gguf_vocab(gguf_path)
        if vocab.model == "llama":
            write_sentencepiece_model(vocab, sp_model)
            tokenizer_config = {**vocab.add_special, **tokenizer_config}
    if sp_model.exists() and "added_tokens_decoder" not in tokenizer_config:
        tokenizer_config["added_tokens_decoder"] = added_tokens_decoder(sp_model)
    if not sp_model.exists() and str(config.get("model_type", "")).startswith("gemma"):
        raise BackendError(
            f"{model_dir} has no tokenizer.model, which llama.cpp's converter needs for a "
            "Gemma model: pass the base name (export_gguf(..., base='gemma3-270m')) or copy "
            "tokenizer.model from models/store/hf/<base>/"
        )
    if tokenizer_config or tokenizer_config_file.is_file():
        _write_json(stage / "tokenizer_config.json", tokenizer_config)
    return stage


def _base_gguf_of(model_dir: Path, base: str | None) -> Path | None:
    """The GGUF a folder's base came from: named, or recorded by models.base_models."""
    if base is not None:
        return base_gguf(get_base(base).name)
    source = model_dir / "pocketjudge_source.json"
    if not source.is_file():
        return None
    gguf_name = json.loads(source.read_text(encoding="utf-8")).get("gguf")
    for candidate in BASES.values():
        if candidate.gguf == gguf_name:
            return base_gguf(candidate.name)
    return None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def quantize_q4_k_m(gguf_in: Path, gguf_out: Path, n_threads: int = 0) -> Path:
    """Quantize a GGUF to Q4_K_M with llama.cpp (`llama_model_quantize`).

    Best from an f16/f32 GGUF; from Q8_0 it requantizes (allowed, slightly
    worse). Tensors whose rows do not fit the 256-value K blocks fall back to
    other types, as in llama.cpp's `llama-quantize`.
    """
    import llama_cpp

    gguf_in, gguf_out = Path(gguf_in), Path(gguf_out)
    if not gguf_in.is_file():
        raise BackendError(f"no GGUF file at {gguf_in}")
    gguf_out.parent.mkdir(parents=True, exist_ok=True)
    partial = gguf_out.with_name(f".{gguf_out.name}.{os.getpid()}.partial")
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_K_M
    params.nthread = n_threads
    params.allow_requantize = True
    status = llama_cpp.llama_model_quantize(
        str(gguf_in).encode(), str(partial).encode(), ctypes.byref(params)
    )
    if status != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise BackendError(f"llama_model_quantize failed (status {status}) on {gguf_in}")
    os.replace(partial, gguf_out)
    return gguf_out
