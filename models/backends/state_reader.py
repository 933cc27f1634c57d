"""A GGUF model's hidden states for a text, pooled: what a state head (app/state_head.py) reads.

llama.cpp gives per-token final-layer states when the model is loaded for
embeddings without pooling; that needs a context of its own, so a judge with a
state head holds this reader beside its generation context (the weights are
memory-mapped once and shared).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from app.errors import BackendUnavailable
from app.state_head import pooled

READ_CONTEXT = 1024  # tokens: a state text is a cut request and answer (about 400 tokens)


class StateReader:
    def __init__(self, model_path: str | Path, n_threads: int | None = None) -> None:
        try:
            from llama_cpp import LLAMA_POOLING_TYPE_NONE, Llama
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise BackendUnavailable(
                "reading model states needs llama-cpp-python: run `make setup`"
            ) from exc
        path = Path(model_path)
        if not path.is_file():
            raise BackendUnavailable(f"{path}: model file not found; run `make models`")
        try:
            self._llama = Llama(
                model_path=str(path),
                embedding=True,
                pooling_type=LLAMA_POOLING_TYPE_NONE,
                n_ctx=READ_CONTEXT,
                n_batch=READ_CONTEXT,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise BackendUnavailable(f"{path}: llama.cpp could not load the model: {exc}") from exc
        self.model_path = path
        self._lock = threading.Lock()

    def features(self, text: str) -> np.ndarray:
        """Mean and last token state of `text` (cut to the reader's context)."""
        with self._lock:
            return pooled(self._llama.embed(text, truncate=True))

    def close(self) -> None:
        self._llama.close()
