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

A read can go on (`Continuation`): the judge's next turn, then several replies that
start from it (one per criterion), side by side as sequences that share the answer's
cells, each ending where a value is read. Where they fit, they are decoded in the same
batch as the answer (the answer's tokens belong to every sequence): on a CPU a larger
batch reads several times more tokens a second, so the turn and the replies cost a
fraction of a read of their own. A read that keeps states fuses only a short turn (its
every token would be an output, logits and all: FUSED_LOGITS_BYTES). The answer's read is
left in the cache as it was.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.backends.read_batches import Entry, Job, ReadBatches, token_logprobs, view
from models.backends.sequence_runner import shared_length
from models.backends.state_reader import READ_CONTEXT, reading_context
from models.backends.value_reader import Feed
from models.backends.value_reader import Reading as ValueReading
from models.foundation.errors import BackendError

BRANCH_ROOM = 2048  # tokens of context after a read, for the turn and replies read after it
BRANCHES = 16  # replies read side by side after a read (more go in groups)
LOOK_AHEAD = 4  # cells a reply may take beyond its last token (a value's look-ahead)
# With states on, llama.cpp makes every token of a batch an output, a vocabulary's logits
# each (about 0.6 MB on Qwen2.5), and keeps its output buffer at the largest batch it saw: a
# turn and replies whose logits would take more than this go after the answer's batch, not
# in it (session 29's check after a reference turn raised the peak by about 300 MB in it).
FUSED_LOGITS_BYTES = 32 * 2**20


@dataclass(frozen=True)
class Continuation:
    """What a read goes on to: the judge's `turn` after the answer, then each of `branches`
    (a reply's first tokens) after the turn; at a branch's end `reading(branch index,
    logits)` reads a value (a `models.backends.value_reader` generator: its look-ahead
    tokens are read on the branch and rewound). The turn's `scored` tokens (from its
    second on) get their log-probabilities read."""

    turn: tuple[int, ...]
    branches: tuple[tuple[int, ...], ...]
    reading: Callable[[int, np.ndarray], ValueReading]
    scored: tuple[int, int] = (0, 0)  # turn[start:end]: tokens whose log-probabilities are read


@dataclass(frozen=True)
class Reading:
    """What one read gives for the answer's tokens."""

    logprobs: np.ndarray  # log P(token | everything before it), one per answer token
    states: np.ndarray  # (tokens, width) final-layer states at the predicting positions
    values: tuple[dict[str, float], ...] | None = None  # a continuation's, one per branch
    scored: np.ndarray | None = None  # the log-probabilities of a continuation's scored tokens


class LikelihoodReader:
    """Reads answers with the weights of `llama` (a loaded llama_cpp.Llama)."""

    def __init__(self, llama: Any, n_threads: int | None = None, adapter: Any = None) -> None:
        """`adapter`: a LoRA adapter (state_reader.lora_adapter) this reader's context reads
        with, on the same weights, in place of the one applied to `llama` (if any)."""
        import llama_cpp

        self._lib = llama_cpp
        self._stack = contextlib.ExitStack()
        # States need the context's embeddings switched on, and llama.cpp then makes every
        # token of a batch an output (logits included): the answer is decoded as a batch of
        # its own with them on, the prompt before it with them off.
        self._context, batch = reading_context(
            llama, n_threads, False, self._stack, BRANCH_ROOM, BRANCHES + 1, adapter
        )
        self._batches = ReadBatches(llama_cpp, self._context, batch, READ_CONTEXT, llama.n_vocab())
        self._width = llama.n_embd()
        self._vocab_size = llama.n_vocab()
        self._cached: list[int] = []  # the tokens whose keys and values the cache holds
        self._lock = threading.Lock()

    def read(
        self,
        prompt: Sequence[int],
        answer: Sequence[int],
        states: bool = True,
        then: Continuation | None = None,
    ) -> Reading:
        """The answer's token log-probabilities after `prompt`, (with `states`) the
        final-layer states at the positions that predict them, and (with `then`) the values
        read on from the answer.

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
        fused = then is not None and self._fits(
            then, len(tokens) - first_output, len(tokens), states
        )
        values, scored = None, None
        with self._lock:
            start = min(shared_length(self._cached, tokens), first_output)
            self._forget_from(start)
            if len(self._cached) < start:  # the cache was cleared: decode from the beginning
                start = 0
            try:
                self._decode(tokens[start:first_output], start, outputs=False, embeddings=False)
                if fused:
                    assert then is not None
                    logprobs, found, values, scored = self._read_on(
                        tokens, first_output, states, then
                    )
                else:
                    tail = tokens[first_output:]
                    self._decode(tail, first_output, outputs=True, embeddings=states)
                    logprobs, found = self._answer_outputs(answer, states)
            except BackendError:
                self._cached = []
                self._batches.clear()
                raise
            self._cached = tokens
        if then is not None and not fused:
            values, scored = self.read_branches(then)
        return Reading(logprobs=logprobs, states=found, values=values, scored=scored)

    def _answer_outputs(self, answer: list[int], states: bool) -> tuple[np.ndarray, np.ndarray]:
        """The answer's log-probabilities and states from the last decode's first outputs."""
        n_out = len(answer)
        ctx = self._context.ctx
        logits = view(self._lib.llama_get_logits(ctx), n_out, self._vocab_size)
        logprobs = token_logprobs(logits, answer)
        found = (
            view(self._lib.llama_get_embeddings(ctx), n_out, self._width).copy()
            if states
            else np.zeros((n_out, 0), dtype=np.float32)
        )
        return logprobs, found

    def _fits(self, then: Continuation, tail: int, total: int, states: bool) -> bool:
        """Whether the answer's tail, the turn and the branches go in one batch (with
        `states`, only a short turn and replies: see FUSED_LOGITS_BYTES)."""
        branches = sum(len(b) for b in then.branches)
        cells = total + len(then.turn) + branches + LOOK_AHEAD * len(then.branches)
        return (
            0 < len(then.branches) <= BRANCHES
            and (
                not states
                or (len(then.turn) + branches) * 4 * self._vocab_size <= FUSED_LOGITS_BYTES
            )
            and tail + len(then.turn) + branches <= READ_CONTEXT
            and cells <= READ_CONTEXT + BRANCH_ROOM
        )

    def _read_on(
        self, tokens: list[int], first_output: int, states: bool, then: Continuation
    ) -> tuple[np.ndarray, np.ndarray, tuple[dict[str, float], ...], np.ndarray]:
        """The answer's tail, the turn and every branch in one batch: the answer on every
        sequence (0 is the read's, 1.. the branches'), the turn on the branches', each branch
        on its own. The branches' sequences are forgotten after."""
        replies = tuple(range(1, len(then.branches) + 1))
        for seq in replies:  # the prompt's cells, shared
            self._batches.copy_sequence(0, seq)
        tail = tokens[first_output:]
        every = (0, *replies)
        entries = [
            Entry(t, first_output + n, every, states or n < len(tail) - 1)
            for n, t in enumerate(tail)
        ]
        begin, end = then.scored
        turn_at = len(entries)  # the batch index of the turn's first token
        entries += [
            Entry(t, len(tokens) + n, replies, states or begin - 1 <= n < end - 1)
            for n, t in enumerate(then.turn)
        ]
        after = len(tokens) + len(then.turn)
        ends: list[int] = []
        for seq, branch in zip(replies, then.branches, strict=True):
            entries += [
                Entry(t, after + n, (seq,), states or n == len(branch) - 1)
                for n, t in enumerate(branch)
            ]
            ends.append(len(entries) - 1)
        self._lib.llama_set_embeddings(self._context.ctx, states)
        try:
            self._batches.decode(entries, "the answer and what follows it")
            logprobs, found = self._answer_outputs(tokens[first_output + 1 :], states)
            firsts = [self._batches.logits_at(index) for index in ends]
            scored = self._batches.logprobs_at(
                range(turn_at + begin - 1, turn_at + end - 1), then.turn[begin:end]
            )
            self._lib.llama_set_embeddings(self._context.ctx, False)
            readers = [then.reading(n, row) for n, row in enumerate(firsts)]
            positions = [after + len(b) for b in then.branches]
            values = self._drive(readers, list(replies), positions)
        finally:
            for seq in replies:
                self._batches.drop(seq)
        return logprobs, found, tuple(values), scored

    def read_branches(self, then: Continuation) -> tuple[tuple[dict[str, float], ...], np.ndarray]:
        """After the last read: `then` read on from it where one batch cannot hold it all:
        the turn once, then its branches in groups of BRANCHES. The read's own tokens stay
        cached as they were."""
        with self._lock:
            base = len(self._cached)
            if not base:
                raise BackendError("a branch read follows an answer's read; none is cached")
            longest = max((len(b) for b in then.branches), default=0)
            if base + len(then.turn) + longest + LOOK_AHEAD > READ_CONTEXT + BRANCH_ROOM:
                raise BackendError(
                    f"the criteria and reference take {len(then.turn) + longest} tokens "
                    f"after the answer; {READ_CONTEXT + BRANCH_ROOM - base} are left"
                )
            self._lib.llama_set_embeddings(self._context.ctx, False)
            try:
                scored = self._read_turn(base, then)
                start = base + len(then.turn)
                values: list[dict[str, float]] = []
                for first in range(0, len(then.branches), BRANCHES):
                    group = then.branches[first : first + BRANCHES]
                    values += self._read_group(group, start, first, then.reading)
            except BackendError:
                self._cached = []
                self._batches.clear()
                raise
            self._batches.drop(0, base)
            return tuple(values), scored

    def _read_turn(self, base: int, then: Continuation) -> np.ndarray:
        """The turn on sequence 0 after the read, in batches; its scored tokens' log-probs."""
        begin, end = then.scored
        scored: list[np.ndarray] = []
        size = self._batches.size
        for first in range(0, len(then.turn), size):
            chunk = then.turn[first : first + size]
            wanted = [first + n for n in range(len(chunk)) if begin - 1 <= first + n < end - 1]
            entries = [
                Entry(t, base + first + n, (0,), first + n in wanted) for n, t in enumerate(chunk)
            ]
            self._batches.decode(entries, "the criteria")
            targets = [then.turn[n + 1] for n in wanted]
            scored.append(self._batches.logprobs_at([n - first for n in wanted], targets))
        return np.concatenate(scored) if scored else np.zeros(0)

    def _read_group(
        self,
        group: Sequence[Sequence[int]],
        start: int,
        first: int,
        reading: Callable[[int, np.ndarray], ValueReading],
    ) -> list[dict[str, float]]:
        """One group of branches, each on a sequence of its own (1, 2, ...)."""
        seqs = list(range(1, len(group) + 1))
        for seq in seqs:
            self._batches.copy_sequence(0, seq)
        try:
            jobs = [Job(seq, start, tuple(b)) for seq, b in zip(seqs, group)]
            logits = self._batches.feed(jobs, "the criteria")
            readers = [reading(first + n, row) for n, row in enumerate(logits)]
            return self._drive(readers, seqs, [start + len(b) for b in group])
        finally:
            for seq in seqs:
                self._batches.drop(seq)

    def _drive(
        self, readers: list[ValueReading], seqs: list[int], ends: list[int]
    ) -> list[dict[str, float]]:
        """Run each value reader to its end: look-ahead tokens asked at once by several
        readers go in one batch, each on its reader's sequence (from `ends[n]` on)."""
        values: list[dict[str, float] | None] = [None] * len(readers)
        sent: list[np.ndarray | None] = [None] * len(readers)
        while any(v is None for v in values):
            waiting: list[int] = []
            jobs: list[Job] = []
            for n, reader in enumerate(readers):
                while values[n] is None:
                    try:
                        request = reader.send(sent[n])  # type: ignore[arg-type]
                    except StopIteration as done:
                        values[n] = done.value
                        break
                    if isinstance(request, Feed):
                        jobs.append(Job(seqs[n], ends[n], request.tokens))
                        ends[n] += len(request.tokens)
                        waiting.append(n)
                        break
                    ends[n] -= request.count  # a Rewind
                    self._batches.drop(seqs[n], ends[n])
                    sent[n] = None
            for n, row in zip(waiting, self._batches.feed(jobs, "the criteria")):
                sent[n] = row
        return [v for v in values if v is not None]

    def _forget_from(self, start: int) -> None:
        if start >= len(self._cached):
            return
        if not self._batches.drop(0, start):
            # a cache that cannot drop a tail (some sliding-window models) starts over
            self._batches.clear()
            self._cached = []
            start = 0
        self._cached = self._cached[:start]

    def _decode(self, tokens: list[int], start: int, outputs: bool, embeddings: bool) -> None:
        """Decode `tokens` at positions from `start` on sequence 0; with `outputs`, every
        one but the last gives logits (and, with `embeddings`, states: llama.cpp then gives
        all of them)."""
        if not tokens:
            return
        self._lib.llama_set_embeddings(self._context.ctx, embeddings)
        entries = [
            Entry(t, start + n, (0,), outputs and (embeddings or n < len(tokens) - 1))
            for n, t in enumerate(tokens)
        ]
        self._batches.decode(entries, "the answer")

    def close(self) -> None:
        self._stack.close()


class Readers:
    """A model's likelihood readers, each made on first use: one of its weights as loaded, and
    one per LoRA adapter file read with (`adapter`: its context carries it, the weights stay
    in memory once; an adapter is loaded once and kept while the model is)."""

    def __init__(self, llama: Any, n_threads: int | None = None) -> None:
        self._llama, self._n_threads = llama, n_threads
        self._readers: dict[str | None, LikelihoodReader] = {}

    def get(self, adapter: str | None = None) -> LikelihoodReader:
        if adapter not in self._readers:
            from models.backends.state_reader import lora_adapter

            loaded = lora_adapter(self._llama, adapter) if adapter else None
            self._readers[adapter] = LikelihoodReader(self._llama, self._n_threads, loaded)
        return self._readers[adapter]

    def close(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers = {}
