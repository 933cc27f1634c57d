"""Turn a trained, merged judge into shippable files.

- `export_gguf`: the merged safetensors folder -> one GGUF (Q8_0 by default),
  with llama.cpp's own converter (models/gguf_export.py, which `make models` uses);
- `quantize_q4_k_m`: a smaller Q4_K_M copy, with llama.cpp's quantizer (same module);
- `check_int8`: loads the folder in bitsandbytes INT8 and generates a few tokens;
- `write_model_card`: MODEL_CARD.md (base, data, recipe, commit, metrics, limits),
  from training/shipping/model_card.py;
- `registry_entry` / `add_registry_entry`: the judge's entry in models/registry.yaml,
  from training/shipping/registry_entry.py.

    python -m training.shipping.export gguf MODEL_DIR OUT.gguf [--outtype q8_0] [--base NAME]
    python -m training.shipping.export q4_k_m IN.gguf OUT.gguf
    python -m training.shipping.export int8 MODEL_DIR
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from models.base_models import BASES
from models.foundation.errors import BackendError, BackendUnavailable, ConfigError
from models.gguf_export import export_gguf, quantize_q4_k_m, stage_for_converter
from training.shipping.model_card import git_commit, write_model_card
from training.shipping.registry_entry import add_registry_entry, registry_entry

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
    parser = argparse.ArgumentParser(prog="python -m training.shipping.export", description=__doc__)
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
