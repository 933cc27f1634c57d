"""The tiny test model builds, converts, loads in llama.cpp and obeys a JSON grammar."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from models.converter import convert_hf_to_gguf, ensure_converter
from models.foundation.errors import BackendError
from tests.support.needs import need_module
from tests.support.tiny_model import (
    CHAT_MARKERS,
    SETTINGS,
    cache_key,
    tiny_gguf_path,
    tiny_hf_dir,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "enum": list(range(1, 11))},
        "verdict": {"type": "string", "enum": ["A", "B", "tie"]},
    },
    "required": ["score", "verdict"],
    "additionalProperties": False,
}
MESSAGES = [
    {"role": "system", "content": "You are a fair judge."},
    {"role": "user", "content": "Which answer is better?"},
]


@pytest.fixture(scope="module")
def llm():
    llama_cpp = need_module("llama_cpp")
    model = llama_cpp.Llama(model_path=str(tiny_gguf_path()), n_ctx=2048, verbose=False, seed=0)
    yield model
    model.close()


def test_build_is_cached_and_keyed() -> None:
    hf_dir = tiny_hf_dir()
    assert hf_dir.parent.name == cache_key()
    assert tiny_hf_dir() == hf_dir
    for name in ("config.json", "model.safetensors", "tokenizer.model", "tokenizer.json"):
        assert (hf_dir / name).is_file(), name
    assert not list(hf_dir.glob("*.bin"))


def test_hf_chat_template_renders() -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_hf_dir(), local_files_only=True)
    text = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    assert text == (
        "<s><|system|>\nYou are a fair judge.</s>\n"
        "<|user|>\nWhich answer is better?</s>\n<|assistant|>\n"
    )
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    for marker in CHAT_MARKERS:  # each marker stays one token
        assert tokenizer.convert_tokens_to_ids(marker) in ids


def test_llama_cpp_tokenizes_json_text(llm) -> None:
    text = '{\n  "score": 10, "verdict": "tie", "reason": "Both are OK; 42 < 57."}\n'
    tokens = llm.tokenize(text.encode(), add_bos=False, special=False)
    assert llm.detokenize(tokens).decode().lstrip(" ") == text
    assert len(llm.tokenize(b"<|assistant|>", add_bos=False, special=True)) == 1


def test_gguf_chat_template_renders(llm) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata["tokenizer.chat_template"]
    formatter = Jinja2ChatFormatter(template, eos_token="</s>", bos_token="<s>")
    prompt = formatter(messages=MESSAGES).prompt
    assert prompt.endswith("<|assistant|>\n") and "<|user|>\nWhich answer is better?</s>" in prompt


@pytest.mark.parametrize("temperature", [0.0, 0.9])
def test_grammar_constrained_generation_is_valid_json(llm, temperature: float) -> None:
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_json_schema(json.dumps(SCHEMA), verbose=False)
    out = llm.create_completion(
        "<|user|>\nJudge the answers.</s>\n<|assistant|>\n",
        grammar=grammar,
        max_tokens=200,
        temperature=temperature,
        seed=3,
    )
    value = json.loads(out["choices"][0]["text"])
    assert set(value) == {"score", "verdict"}
    assert value["score"] in range(1, 11) and not isinstance(value["score"], bool)
    assert value["verdict"] in ("A", "B", "tie")


def test_q8_0_converts_and_loads() -> None:
    llama_cpp = need_module("llama_cpp")
    gguf = tiny_gguf_path("q8_0")
    assert gguf.stat().st_size < tiny_gguf_path("f32").stat().st_size
    model = llama_cpp.Llama(model_path=str(gguf), n_ctx=512, verbose=False)
    try:
        assert model.n_vocab() == SETTINGS["vocab_size"]
    finally:
        model.close()


def test_converter_is_vendored_once() -> None:
    first = ensure_converter()
    started = time.perf_counter()
    assert ensure_converter() == first
    assert time.perf_counter() - started < 1.0
    assert (first.parent / "gguf-py" / "gguf" / "__init__.py").is_file()


def test_converter_failure_reports_its_stderr(tmp_path: Path) -> None:
    config = {"architectures": ["NoSuchModelForCausalLM"], "model_type": "llama"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = tmp_path / "out.gguf"
    with pytest.raises(BackendError, match="NoSuchModelForCausalLM is not supported"):
        convert_hf_to_gguf(tmp_path, out, outtype="f32")
    assert not out.exists() and not list(tmp_path.glob("*.partial"))


def test_converter_rejects_unknown_outtype(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outtype"):
        convert_hf_to_gguf(tmp_path, tmp_path / "out.gguf", outtype="q4_k_m")
