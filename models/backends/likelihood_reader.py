"""How likely a model finds an answer's tokens after a prompt, with its states at the same spots.

One read decodes a prompt (the request in the model's chat template, or an empty
request) followed by the answer's tokens, and keeps only what is asked at the
positions that predict the answer: the log-probability of each answer token
(the end-of-turn token included) and the final-layer states there. Logits are
computed for those positions only: the vocabulary of a Qwen model is 151k
entries, so logits for every position of a long context would cost more than
the read.

The reader keeps what it last decoded in its cache and decodes only what
differs: the two answers of a pair share the request's tokens, and every
request-free read shares the empty request's. It makes its own context on the
weights of a loaded model, as `StateReader` does, so the weights are held once.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.errors import BackendError
from models.backends.sequence_runner import shared_length
from models.backends.state_reader import READ_CONTEXT, reading_context


@dataclass(frozen=True)
class Reading:
    """What one read gives for the answer's tokens."""

    logprobs: np.ndarray  # log P(token | everything before it), one per answer token
    states: np.ndarray  # (tokens, width) final-layer states at the predicting positions


class LikelihoodReader:
    """Reads answers with the weights of `llama` (a loaded llama_cpp.Llama)."""

    def __init__(self, llama: Any, n_threads: int | None = None) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self._stack = contextlib.ExitStack()
        # States need the context's embeddings switched on, and llama.cpp then makes every
        # token of a batch an output (logits included): the answer is decoded as a batch of
        # its own with them on, the prompt before it with them off.
        self._context, self._batch = reading_context(llama, n_threads, False, self._stack)
        self._width = llama.n_embd()
        self._vocab_size = llama.n_vocab()
        self._cached: list[int] = []  # the tokens whose keys and values the cache holds
        self._lock = threading.Lock()

    def read(self, prompt: Sequence[int], answer: Sequence[int], states: bool = True) -> Reading:
        """The answer's token log-probabilities after `prompt`, and (with `states`) the
        final-layer states at the positions that predict them.

        The answer is cut to what the context holds after the prompt."""
        if not prompt:
            raise BackendError("a likelihood read needs a prompt of at least one token")
        room = READ_CONTEXT - len(prompt)
        if room < 1:
            raise BackendError(
                f"the prompt has {len(prompt)} tokens; a likelihood read holds {READ_CONTEXT}"
            )
        answer = list(answer[:room])
        tokens = list(prompt) + answer
        first_output = len(prompt) - 1  # the position that predicts the answer's first token
        with self._lock:
            start = min(shared_length(self._cached, tokens), first_output)
            self._forget_from(start)
            if len(self._cached) < start:  # the cache was cleared: decode from the beginning
                start = 0
            self._decode(tokens[start:first_output], start, outputs=False, embeddings=False)
            self._decode(tokens[first_output:], first_output, outputs=True, embeddings=states)
            self._cached = tokens
            n_out = len(answer)
            ctx = self._context.ctx
            logits = self._view(self._lib.llama_get_logits(ctx), n_out, self._vocab_size)
            logprobs = _token_logprobs(logits, answer)
            found = (
                self._view(self._lib.llama_get_embeddings(ctx), n_out, self._width).copy()
                if states
                else np.zeros((n_out, 0), dtype=np.float32)
            )
        return Reading(logprobs=logprobs, states=found)

    def _forget_from(self, start: int) -> None:
        if start >= len(self._cached):
            return
        memory = self._lib.llama_get_memory(self._context.ctx)
        if not self._lib.llama_memory_seq_rm(memory, 0, start, -1):
            # a cache that cannot drop a tail (some sliding-window models) starts over
            self._lib.llama_memory_clear(memory, True)
            self._cached = []
            start = 0
        self._cached = self._cached[:start]

    def _decode(self, tokens: list[int], start: int, outputs: bool, embeddings: bool) -> None:
        """Decode `tokens` at positions from `start`; with `outputs`, every one but the last
        gives logits (and, with `embeddings`, states: llama.cpp then gives all of them)."""
        if not tokens:
            return
        self._lib.llama_set_embeddings(self._context.ctx, embeddings)
        batch = self._batch.batch
        for n, token in enumerate(tokens):
            batch.token[n] = token
            batch.pos[n] = start + n
            batch.seq_id[n][0] = 0
            batch.n_seq_id[n] = 1
            batch.logits[n] = outputs and (embeddings or n < len(tokens) - 1)
        batch.n_tokens = len(tokens)
        try:
            self._context.decode(self._batch)
        except Exception as exc:  # llama.cpp's failures come as RuntimeError or ValueError
            self._cached = []
            self._lib.llama_memory_clear(self._lib.llama_get_memory(self._context.ctx), True)
            raise BackendError(f"llama.cpp could not read the answer: {exc}") from exc

    def _view(self, pointer: Any, rows: int, width: int) -> np.ndarray:
        """llama.cpp's output buffer as an array (valid until the next decode)."""
        if rows == 0:
            return np.zeros((0, width), dtype=np.float32)
        flat = np.ctypeslib.as_array(
            ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (rows * width,)
        )
        return flat.reshape(rows, width)

    def close(self) -> None:
        self._stack.close()


LOGSUMEXP_ROWS = 32  # rows of logits turned to log-probabilities at a time (memory)


def _token_logprobs(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
    """log softmax(logits[i])[targets[i]] for every row, in float64 for the sums. The rows
    are read a few at a time: a full copy of a long answer's logits would be hundreds of MB."""
    picked = np.zeros(len(targets))
    for begin in range(0, len(targets), LOGSUMEXP_ROWS):
        rows = logits[begin : begin + LOGSUMEXP_ROWS]
        top = rows.max(axis=1, keepdims=True)
        total = np.log(np.exp(rows - top).sum(axis=1, dtype=np.float64)) + top[:, 0]
        chosen = np.asarray(targets[begin : begin + LOGSUMEXP_ROWS])
        picked[begin : begin + len(rows)] = rows[np.arange(len(rows)), chosen] - total
    return picked
