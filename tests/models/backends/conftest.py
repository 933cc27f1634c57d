"""The tiny real model opened twice: through the llama.cpp backend (its reads), and by
llama-cpp-python alone with logits at every position (the independent reference the
reads are held equal to)."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.backends.base import BackendOptions


@pytest.fixture(scope="module")
def backend(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=1024, n_threads=1))
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def full_reader(tiny_gguf_model: Path):
    """llama-cpp-python's own evaluation of one sequence, logits at every position."""
    from llama_cpp import Llama

    llama = Llama(
        model_path=str(tiny_gguf_model), n_ctx=2048, logits_all=True, n_threads=1, verbose=False
    )
    yield llama
    llama.close()
