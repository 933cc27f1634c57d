"""A GGUF model's hidden states for a text, pooled: what a state head reads
(app/deciding/state_head.py).

llama.cpp gives per-token final-layer states from a context made for embeddings
without pooling. The reader makes such a context on the weights of a model that
is already loaded, so a judge holds its weights once: a second `Llama` on the
same file would hold them twice (llama.cpp repacks quantized weights for the CPU
into memory of its own). The reading is the one `Llama.embed` does (the text
tokenized with BOS, cut to the context, every token an output, the cache cleared
first), so states read here equal those read through `Llama(embedding=True)`.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from pathlib import Path
from typing import Any

import numpy as np

from models.foundation.errors import BackendUnavailable
from models.readings import pooled

READ_CONTEXT = 1024  # tokens: a state text is a cut request and answer (about 400 tokens)
READ_UBATCH = 512  # llama-cpp-python's default micro-batch, as the head's states were read


def lora_adapter(llama: Any, path: str) -> Any:
    """The GGUF LoRA adapter at `path` loaded for `llama`'s weights (freed with them), set on
    no context yet. llama.cpp's note for every tensor it cannot repack (about 170 lines,
    logged as errors by llama-cpp-python) is silenced; a failure still raises."""
    import logging

    import llama_cpp

    if not Path(path).is_file():
        raise BackendUnavailable(f"{path}: LoRA adapter not found; run `make models`")
    log = logging.getLogger("llama-cpp-python")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        adapter = llama_cpp.llama_adapter_lora_init(llama._model.model, path.encode("utf-8"))
    finally:
        log.setLevel(level)
    if adapter is None:
        raise BackendUnavailable(f"{path}: llama.cpp could not load this LoRA adapter")
    llama._stack.callback(llama_cpp.llama_adapter_lora_free, adapter)
    return adapter


def load_lora(llama: Any, path: str) -> None:
    """The GGUF LoRA adapter at `path` applied to `llama`: set on its context and on every
    later one (`set_lora`)."""
    llama._lora_adapter, llama.lora_path, llama.lora_scale = lora_adapter(llama, path), path, 1.0
    set_lora(llama, llama._ctx)


def set_lora(llama: Any, context: Any, adapter: Any = None) -> None:
    """`adapter` (one `lora_adapter` loaded), else the one applied to `llama` (`load_lora`),
    set on `context`: an adapter applies per context, and the reads and the backend's
    several-sequence context are made beside the model's first one."""
    import llama_cpp

    adapter = adapter if adapter is not None else getattr(llama, "_lora_adapter", None)
    if adapter is None:
        return
    adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
    scales = (ctypes.c_float * 1)(1.0)
    if llama_cpp.llama_set_adapters_lora(context.ctx, adapters, 1, scales):
        raise BackendUnavailable("llama.cpp could not set a LoRA adapter on a context")


def reading_context(  # type: ignore[no-untyped-def]
    llama: Any,
    n_threads: int | None,
    embeddings: bool,
    stack: Any,
    room: int = 0,
    n_seq: int = 1,
    adapter: Any = None,
):
    """A context of READ_CONTEXT tokens (plus `room` more) on the weights of `llama`, and a
    batch of READ_CONTEXT tokens for it, both closed with `stack`: per-token states (no
    pooling) where `embeddings`. `n_seq` sequences share its cache (unified: a copied
    prefix shares its cells). `adapter`: a LoRA adapter of its own (`lora_adapter`) in place
    of the one applied to `llama`."""
    import llama_cpp
    from llama_cpp import _internals

    params = llama_cpp.llama_context_params.from_buffer_copy(llama.context_params)
    params.n_ctx = READ_CONTEXT + room
    params.n_batch = READ_CONTEXT
    params.n_ubatch = READ_UBATCH
    params.n_seq_max = n_seq
    params.kv_unified = True
    params.embeddings = embeddings
    params.pooling_type = llama_cpp.LLAMA_POOLING_TYPE_NONE
    if n_threads:
        params.n_threads = params.n_threads_batch = n_threads
    context = stack.enter_context(
        contextlib.closing(
            _internals.LlamaContext(model=llama._model, params=params, verbose=False)
        )
    )
    set_lora(llama, context, adapter)
    batch = stack.enter_context(
        contextlib.closing(
            _internals.LlamaBatch(n_tokens=READ_CONTEXT, embd=0, n_seq_max=n_seq, verbose=False)
        )
    )
    return context, batch


class StateReader:
    """Reads states with the weights of `llama` (a loaded llama_cpp.Llama)."""

    def __init__(self, llama: Any, n_threads: int | None = None) -> None:
        import llama_cpp

        self._llama = llama
        self._lib = llama_cpp
        self._stack = contextlib.ExitStack()
        self._context, self._batch = reading_context(llama, n_threads, True, self._stack)
        self._width = llama.n_embd()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, model_path: str | Path, n_threads: int | None = None) -> StateReader:
        """A reader on a model file of its own (training and probes)."""
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise BackendUnavailable(
                "reading model states needs llama-cpp-python: run `make setup`"
            ) from exc
        path = Path(model_path)
        if not path.is_file():
            raise BackendUnavailable(f"{path}: model file not found; run `make models`")
        try:
            llama = Llama(
                model_path=str(path),
                n_ctx=READ_CONTEXT,
                n_batch=READ_CONTEXT,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(f"{path}: llama.cpp could not load the model: {exc}") from exc
        reader = cls(llama, n_threads)
        reader._stack.callback(llama.close)  # its own model goes with it
        return reader

    def features(self, text: str) -> np.ndarray:
        """Mean and last token state of `text` (cut to the reader's context)."""
        with self._lock:
            tokens = self._llama.tokenize(text.encode("utf-8"))[:READ_CONTEXT]
            self._batch.reset()
            self._batch.add_sequence(tokens, 0, True)
            self._context.kv_cache_clear()
            self._context.decode(self._batch)
            pointer = self._lib.llama_get_embeddings(self._context.ctx)
            size = len(tokens) * self._width
            flat = np.ctypeslib.as_array(
                ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (size,)
            )
            states = flat.reshape(len(tokens), self._width).copy()
            self._batch.reset()
        return pooled(states)

    def close(self) -> None:
        self._stack.close()
