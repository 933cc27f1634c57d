"""Batches for a reading context: tokens on one or several sequences, and their outputs.

A reader's context (models/backends/state_reader.reading_context) holds several
sequences in one unified cache. A token may belong to several of them at once (an
answer read for the verdict and for every criterion's reply after it), and a copied
prefix shares its cells instead of being decoded again. This module fills llama.cpp's
batch, decodes it and hands back outputs; the readers decide what goes in.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.foundation.errors import BackendError


@dataclass(frozen=True)
class Entry:
    """One token of a batch: its position, the sequences it belongs to, output or not."""

    token: int
    position: int
    seqs: tuple[int, ...]
    output: bool


@dataclass(frozen=True)
class Job:
    """Tokens read on one sequence from `position`; the logits after the last one wanted."""

    seq: int
    position: int
    tokens: tuple[int, ...]


class ReadBatches:
    """Decodes entries in `context` through `batch` (at most `size` tokens at a time; logits
    of `vocab` entries)."""

    def __init__(self, lib: Any, context: Any, batch: Any, size: int, vocab: int) -> None:
        self._lib = lib
        self._context = context
        self._batch = batch
        self.size = size
        self.vocab = vocab

    @property
    def memory(self) -> Any:
        return self._lib.llama_get_memory(self._context.ctx)

    def decode(self, entries: Sequence[Entry], what: str) -> None:
        """One decode of at most `size` entries; `what` names the read in an error."""
        batch = self._batch.batch
        for n, entry in enumerate(entries):
            batch.token[n], batch.pos[n] = entry.token, entry.position
            for k, seq in enumerate(entry.seqs):
                batch.seq_id[n][k] = seq
            batch.n_seq_id[n] = len(entry.seqs)
            batch.logits[n] = entry.output
        batch.n_tokens = len(entries)
        try:
            self._context.decode(self._batch)
        except Exception as exc:  # llama.cpp's failures come as RuntimeError or ValueError
            raise BackendError(f"llama.cpp could not read {what}: {exc}") from exc

    def logits_at(self, index: int) -> np.ndarray:
        """A copy of the logits of the last decode's entry `index` (an output)."""
        pointer = self._lib.llama_get_logits_ith(self._context.ctx, index)
        return view(pointer, 1, self.vocab)[0].copy()

    def logprobs_at(self, indices: Sequence[int], targets: Sequence[int]) -> np.ndarray:
        """log P(targets[k]) at the last decode's entry indices[k] (outputs), in float64."""
        found = np.zeros(len(targets))
        for k, (index, target) in enumerate(zip(indices, targets, strict=True)):
            row = view(self._lib.llama_get_logits_ith(self._context.ctx, index), 1, self.vocab)
            found[k] = token_logprobs(row, [target])[0]
        return found

    def feed(self, jobs: Sequence[Job], what: str) -> list[np.ndarray]:
        """Each job's tokens decoded (in batches of `size`); the logits after each job's last
        token, in job order."""
        entries = [
            Entry(token, job.position + n, (job.seq,), n == len(job.tokens) - 1)
            for job in jobs
            for n, token in enumerate(job.tokens)
        ]
        rows: list[np.ndarray] = []
        for begin in range(0, len(entries), self.size):
            chunk = entries[begin : begin + self.size]
            self.decode(chunk, what)
            rows += [self.logits_at(n) for n, entry in enumerate(chunk) if entry.output]
        return rows

    def copy_sequence(self, source: int, target: int) -> None:
        self._lib.llama_memory_seq_cp(self.memory, source, target, -1, -1)

    def drop(self, seq: int, start: int = -1) -> bool:
        """Forget sequence `seq` from position `start` on (-1: all of it)."""
        return bool(self._lib.llama_memory_seq_rm(self.memory, seq, start, -1))

    def clear(self) -> None:
        self._lib.llama_memory_clear(self.memory, True)


def view(pointer: Any, rows: int, width: int) -> np.ndarray:
    """llama.cpp's output buffer as an array (valid until the next decode)."""
    if rows == 0:
        return np.zeros((0, width), dtype=np.float32)
    flat = np.ctypeslib.as_array(
        ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (rows * width,)
    )
    return flat.reshape(rows, width)


LOGSUMEXP_ROWS = 32  # rows of logits turned to log-probabilities at a time (memory)


def token_logprobs(logits: np.ndarray, targets: Sequence[int]) -> np.ndarray:
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
