"""Turn a trained, merged judge into shippable files.

- `export_gguf`: the merged safetensors folder -> one GGUF (Q8_0 by default),
  with llama.cpp's own converter (models/converter.py);
- `quantize_q4_k_m`: a smaller Q4_K_M copy, with llama.cpp's quantizer;
- `check_int8`: loads the folder in bitsandbytes INT8 and generates a few tokens;
- `write_model_card`: MODEL_CARD.md (base, data, recipe, commit, metrics, limits),
  from training/model_card.py;
- `registry_entry` / `add_registry_entry`: the judge's entry in models/registry.yaml,
  from training/registry_entry.py.

    python -m training.export gguf MODEL_DIR OUT.gguf [--outtype q8_0] [--base NAME]
    python -m training.export q4_k_m IN.gguf OUT.gguf
    python -m training.export int8 MODEL_DIR
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.errors import BackendError, BackendUnavailable, ConfigError
from models.converter import convert_hf_to_gguf
from training.bases import BASES, base_gguf, get_base
from training.gguf_vocab import added_tokens_decoder, read_gguf_vocab, write_sentencepiece_model
from training.model_card import git_commit, write_model_card
from training.registry_entry import add_registry_entry, registry_entry

__all__ = [
    "add_registry_entry",
    "check_int8",
    "export_gguf",
    "git_commit",
    "quantize_q4_k_m",
    "registry_entry",
    "stage_for_converter",
    "write_model_card",
]

INT8_PROMPT = "Answer in one word: is the sky blue?"


# -- GGUF ---------------------------------------------------------------------------


def export_gguf(
    model_dir: Path, out_file: Path, outtype: str = "q8_0", *, base: str | None = None
) -> Path:
    """Convert a (merged) safetensors folder to one GGUF file with llama.cpp's converter.

    The converter reads a staged copy of the folder (links, plus the fixes of
    `stage_for_converter`); the folder itself is not changed. `base` names the
    base model (training/bases.py) when the folder needs its GGUF vocabulary
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
      the base's GGUF (training/gguf_vocab.py);
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
    """The GGUF a folder's base came from: named, or recorded by training.bases."""
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


# -- INT8 ---------------------------------------------------------------------------


def check_int8(model_dir: Path, max_tokens: int = 8) -> str:
    """Load `model_dir` in bitsandbytes INT8, generate a few tokens, say what happened.

    With CUDA this goes through the transformers backend (`load_in_8bit=True`).
    Without, the backend refuses INT8, so the check loads the model directly
    with transformers on the CPU, where bitsandbytes >= 0.46 has INT8 kernels.
    Raises BackendUnavailable when INT8 cannot load or quantizes nothing.
    """
    import torch

    if torch.cuda.is_available():
        return _check_int8_backend(Path(model_dir), max_tokens)
    return _check_int8_cpu(Path(model_dir), max_tokens)


def _check_int8_backend(model_dir: Path, max_tokens: int) -> str:
    from models.backends.base import BackendOptions, Message, SamplingParams
    from models.backends.transformers_backend import TransformersBackend

    backend = TransformersBackend(model_dir, BackendOptions(load_in_8bit=True))
    try:
        layers = _int8_layers(backend.model)
        generation = backend.generate(
            [Message("user", INT8_PROMPT)], SamplingParams(max_tokens=max_tokens)
        )
    finally:
        backend.close()
    if not layers:
        raise BackendUnavailable(f"INT8 load of {model_dir} quantized no linear layer")
    return (
        f"INT8 ok on CUDA ({_bnb_version()}, transformers backend): {layers} int8 linear "
        f"layers; greedy reply to {INT8_PROMPT!r}: {generation.text!r}"
    )


def _check_int8_cpu(model_dir: Path, max_tokens: int) -> str:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    # bitsandbytes warns on every matmul that float32 inputs are cast to float16
    logging.getLogger("bitsandbytes.autograd._functions").setLevel(logging.ERROR)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            model_dir,
            local_files_only=True,
            use_safetensors=True,
            dtype=torch.float32,
            quantization_config=BitsAndBytesConfig(load_in_8bit=True),
            device_map={"": "cpu"},
        ).eval()
        layers = _int8_layers(model)
        inputs = _int8_inputs(tokenizer)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        with torch.inference_mode():
            out = model.generate(
                **inputs, max_new_tokens=max_tokens, do_sample=False, pad_token_id=pad
            )
    except (ImportError, OSError, RuntimeError, ValueError) as exc:
        raise BackendUnavailable(
            f"bitsandbytes INT8 does not work on this machine (CPU, {_bnb_version()}): {exc}"
        ) from exc
    if not layers:
        raise BackendUnavailable(
            f"bitsandbytes INT8 on CPU ({_bnb_version()}) loaded {model_dir} "
            "but quantized no linear layer"
        )
    text = tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    megabytes = model.get_memory_footprint() / 1e6
    return (
        f"INT8 ok on CPU ({_bnb_version()}, transformers directly: the transformers backend "
        f"offers INT8 only with CUDA): {layers} int8 linear layers, {megabytes:.0f} MB; "
        f"greedy reply to {INT8_PROMPT!r}: {text!r}"
    )


def _int8_inputs(tokenizer: Any) -> Any:
    if getattr(tokenizer, "chat_template", None):
        chat = [{"role": "user", "content": INT8_PROMPT}]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        return tokenizer(text, return_tensors="pt", add_special_tokens=False)
    return tokenizer(INT8_PROMPT, return_tensors="pt")


def _int8_layers(model: Any) -> int:
    """Linear layers whose weights really are int8 (bitsandbytes Linear8bitLt)."""
    import torch

    return sum(
        1
        for module in model.modules()
        if type(module).__name__ == "Linear8bitLt" and module.weight.dtype == torch.int8
    )


def _bnb_version() -> str:
    from importlib import metadata

    try:
        return f"bitsandbytes {metadata.version('bitsandbytes')}"
    except metadata.PackageNotFoundError:
        return "bitsandbytes not installed: pip install bitsandbytes==0.50.2"


# -- CLI ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    gguf = sub.add_parser("gguf", help="convert a merged safetensors folder to GGUF")
    gguf.add_argument("model_dir", type=Path)
    gguf.add_argument("out", type=Path)
    gguf.add_argument("--outtype", default="q8_0")
    gguf.add_argument("--base", choices=sorted(BASES))
    small = sub.add_parser("q4_k_m", help="quantize a GGUF to Q4_K_M")
    small.add_argument("gguf_in", type=Path)
    small.add_argument("out", type=Path)
    int8 = sub.add_parser("int8", help="load a safetensors folder in INT8 and generate")
    int8.add_argument("model_dir", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "gguf":
            print(export_gguf(args.model_dir, args.out, args.outtype, base=args.base))
        elif args.command == "q4_k_m":
            print(quantize_q4_k_m(args.gguf_in, args.out))
        else:
            print(check_int8(args.model_dir))
    except (BackendError, BackendUnavailable, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
