"""TransformersBackend: real generation with the tiny random-weight HF model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models.backends.base import Backend, BackendOptions, Message, OutputSpec, SamplingParams
from models.backends.transformers_backend import (
    INSTALL_HINT,
    TransformersBackend,
    create,
    cut_at_stop,
    merge_system_into_user,
    plain_transcript,
)
from models.foundation.errors import BackendError, BackendUnavailable
from tests.support.needs import need_module
from tests.support.tiny_model import tiny_hf_dir

need_module("torch", module_level=True)
need_module("transformers", module_level=True)

MESSAGES = (
    Message("system", "You are a fair judge."),
    Message("user", "Score the answer from 1 to 10."),
)
GREEDY = SamplingParams(temperature=0.0, max_tokens=40)


@pytest.fixture(scope="module")
def backend() -> TransformersBackend:
    instance = create(str(tiny_hf_dir()), BackendOptions())
    yield instance
    instance.close()


def test_implements_the_protocol(backend: TransformersBackend) -> None:
    assert isinstance(backend, Backend)
    assert backend.name == "transformers"
    assert not backend.capabilities.grammar
    assert not backend.capabilities.score_distributions


def test_greedy_is_deterministic(backend: TransformersBackend) -> None:
    first = backend.generate(MESSAGES, GREEDY)
    second = backend.generate(MESSAGES, GREEDY)
    assert first.text == second.text
    assert first.text
    assert first.prompt_tokens == second.prompt_tokens > 10
    assert first.latency_s is not None and first.latency_s > 0


def test_sampling_is_seeded(backend: TransformersBackend) -> None:
    params = SamplingParams(temperature=0.9, top_p=0.95, max_tokens=20, seed=5)
    assert backend.generate(MESSAGES, params).text == backend.generate(MESSAGES, params).text
    # and it samples: other seeds give other texts (greedy decoding would give one text)
    texts = {
        backend.generate(MESSAGES, SamplingParams(temperature=0.9, max_tokens=20, seed=n)).text
        for n in range(4)
    }
    assert len(texts) > 1


def test_max_tokens_respected(backend: TransformersBackend) -> None:
    result = backend.generate(MESSAGES, SamplingParams(max_tokens=5))
    assert result.completion_tokens is not None and result.completion_tokens <= 5
    if result.completion_tokens == 5:
        assert result.finish_reason == "length"


def test_stop_string_cuts_the_text(backend: TransformersBackend) -> None:
    full = backend.generate(MESSAGES, GREEDY).text
    start = next(i for i in range(5, len(full) - 3) if full.find(full[i : i + 3]) == i)
    stop = full[start : start + 3]
    result = backend.generate(MESSAGES, SamplingParams(max_tokens=40, stop=("@@never@@", stop)))
    assert result.text == full[:start]
    assert result.finish_reason == "stop"
    assert result.completion_tokens is not None and result.completion_tokens < 40


def test_chat_template_applied(backend: TransformersBackend) -> None:
    prompt = backend.render_prompt(MESSAGES)
    assert prompt == (
        "<s><|system|>\nYou are a fair judge.</s>\n"
        "<|user|>\nScore the answer from 1 to 10.</s>\n<|assistant|>\n"
    )
    result = backend.generate(MESSAGES, SamplingParams(max_tokens=1))
    ids = backend.tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert result.prompt_tokens == len(ids)  # BOS comes from the template, not twice


def test_json_schema_is_accepted_but_not_enforced(backend: TransformersBackend) -> None:
    spec = OutputSpec(json_schema={"type": "object", "properties": {"score": {"type": "integer"}}})
    result = backend.generate(MESSAGES, SamplingParams(max_tokens=8), spec)
    assert isinstance(result.text, str) and result.distributions == ()


def test_prompt_longer_than_context_is_an_error() -> None:
    small = TransformersBackend(tiny_hf_dir(), BackendOptions(n_ctx=16))
    with pytest.raises(BackendError, match="context holds 16"):
        small.generate((Message("user", "word " * 50),), GREEDY)
    small.close()
    with pytest.raises(BackendError, match="closed"):
        small.generate(MESSAGES, GREEDY)


def test_plain_transcript_without_chat_template(tmp_path: Path) -> None:
    model_dir = tmp_path / "no-template"
    shutil.copytree(tiny_hf_dir(), model_dir)
    (model_dir / "chat_template.jinja").unlink(missing_ok=True)
    config_file = model_dir / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config.pop("chat_template", None)
    config_file.write_text(json.dumps(config))
    plain = TransformersBackend(model_dir, BackendOptions())
    try:
        assert plain.render_prompt(MESSAGES) == (
            "System: You are a fair judge.\n\nUser: Score the answer from 1 to 10.\n\nAssistant:"
        )
        assert plain.generate(MESSAGES, SamplingParams(max_tokens=3)).completion_tokens
    finally:
        plain.close()


def test_template_without_system_role_gets_it_merged(tmp_path: Path) -> None:
    model_dir = tmp_path / "no-system"
    shutil.copytree(tiny_hf_dir(), model_dir)
    (model_dir / "chat_template.jinja").write_text(
        "{%- for m in messages -%}"
        "{%- if m['role'] == 'system' -%}{{ raise_exception('no system role') }}{%- endif -%}"
        "[{{ m['role'] }}] {{ m['content'] + '\\n' }}"
        "{%- endfor -%}[assistant] "
    )
    strict = TransformersBackend(model_dir, BackendOptions())
    try:
        assert strict.render_prompt(MESSAGES) == (
            "[user] You are a fair judge.\n\nScore the answer from 1 to 10.\n[assistant] "
        )
    finally:
        strict.close()


def test_int8_without_gpu_is_unavailable() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(BackendUnavailable, match="NVIDIA GPU") as info:
        TransformersBackend(tiny_hf_dir(), BackendOptions(load_in_8bit=True))
    assert "load_in_8bit" in str(info.value)


def test_missing_bitsandbytes_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from models.backends import transformers_backend

    monkeypatch.setattr(transformers_backend.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(BackendUnavailable, match="pip install bitsandbytes"):
        transformers_backend.check_int8_support(cuda_available=True)


def test_pickle_weights_are_refused(tmp_path: Path) -> None:
    shutil.copy(tiny_hf_dir() / "config.json", tmp_path / "config.json")
    (tmp_path / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(BackendUnavailable, match="refusing to load pickle weights"):
        TransformersBackend(tmp_path, BackendOptions())


def test_missing_directory_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="not found"):
        TransformersBackend(tmp_path / "nope", BackendOptions())


def test_missing_packages_give_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(BackendUnavailable) as info:
        TransformersBackend(tiny_hf_dir(), BackendOptions())
    assert INSTALL_HINT in str(info.value)


def test_import_is_cheap() -> None:
    code = (
        "import sys, models.backends.transformers_backend; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    repo = Path(__file__).resolve().parents[3]
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_helpers() -> None:
    assert cut_at_stop("abc END def STOP", ("STOP", "END")) == "abc "
    assert cut_at_stop("abc", ("x",)) is None
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert merge_system_into_user(chat) == [{"role": "user", "content": "S\n\nU"}]
    assert plain_transcript([Message("user", "hi")]) == "User: hi\n\nAssistant:"
