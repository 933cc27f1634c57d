"""Run many score-mode replies at once as parallel sequences of one llama.cpp context.

The prompts of a batch share their instructions (system message, scenario,
criteria); that prefix is evaluated once, into sequence 0, where it stays for
the next batch (prefix reuse). Each reply gets a worker sequence that starts as
a copy of the prefix (in a unified KV cache the copy shares the cells, it costs
nothing) and evaluates only its own item. From then on every step gathers the
pending tokens of all workers into one `llama_decode`: the item tokens of
several prompts, and later one value step of each reply, so the model's weights
are read once per step for all of them instead of once per reply.

Sequence 0 is also the sequence of llama-cpp-python's own `Llama.eval`: the
prefix is written through it, so `Llama.input_ids` / `n_tokens` stay true and a
full generation after a scoring batch reuses the prefix too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from models.backends.reply_walker import Walk, WalkedReply
from models.backends.value_reader import Feed, Rewind

PREFIX_SEQ = 0


@dataclass
class _Slot:
    seq: int
    job: int = -1  # -1: free
    walk: Walk | None = None
    position: int = 0  # tokens in this sequence
    pending: list[int] = field(default_factory=list)
    cells: int = 0  # KV cells reserved for the job
    logits: np.ndarray | None = None
    prompt: list[int] = field(default_factory=list)  # the last prompt this sequence read


@dataclass
class RunStats:
    """What one run evaluated, for benchmarks."""

    prefix_tokens: int = 0  # prefix tokens evaluated (0 when the cached prefix was reused)
    item_tokens: int = 0  # prompt tokens after the prefix, all jobs
    reply_tokens: int = 0  # tokens fed while walking the replies (values, look-aheads)
    decodes: int = 0
    seconds: float = 0.0


class SequenceRunner:
    """Walks replies for prompts over `llama` (a `llama_cpp.Llama` made with n_seq_max > 1)."""

    def __init__(self, llama, workers: int) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self.llama = llama
        self.workers = max(1, workers)
        self.n_batch = llama.n_batch
        self.n_ctx = llama.n_ctx()
        self.n_vocab = llama.n_vocab()
        self._batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self._slots = [_Slot(seq=s + 1) for s in range(self.workers)]
        self.stats = RunStats()

    def forget(self) -> None:
        """Drop every cached token (after a failure the cache may hold anything)."""
        self._seq_rm(-1, 0)
        self.llama.n_tokens = 0
        self.drop_workers()

    def drop_workers(self) -> None:
        """Empty the worker sequences (full generation is about to use the cache alone)."""
        for slot in self._slots:
            self._seq_rm(slot.seq, 0)
            slot.prompt = []
            slot.job = -1
            slot.walk = None

    def close(self) -> None:
        if self._batch is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None

    # -- the run ---------------------------------------------------------------------
    def run(
        self,
        prompts: Sequence[list[int]],
        walkers: Sequence[Callable[[], Walk]],
        reply_cells: Sequence[int],
        *,
        reuse_prefix: bool = True,
    ) -> list[WalkedReply]:
        """One reply per prompt. `reply_cells[i]`: KV cells reply i may need at most."""
        if self.workers == 1:
            return self._run_in_one_sequence(prompts, walkers, reuse_prefix)
        started = time.perf_counter()
        stats = RunStats()
        prefix = _common_prefix(prompts) if reuse_prefix else []
        stats.prefix_tokens = self._set_prefix(prefix)
        free = self.n_ctx - len(prefix)
        need = [len(p) - len(prefix) + reply_cells[i] for i, p in enumerate(prompts)]
        for i, cells in enumerate(need):
            if cells > free:
                raise ValueError(
                    f"prompt {i} needs {cells + len(prefix)} KV cells, the context holds "
                    f"{self.n_ctx}"
                )
        results: list[WalkedReply | None] = [None] * len(prompts)
        slots = self._slots
        queue = list(range(len(prompts)))

        def held(slot: _Slot) -> int:  # KV cells a sequence holds beyond the prefix
            return slot.cells if slot.job >= 0 else max(len(slot.prompt) - len(prefix), 0)

        while queue or any(slot.job >= 0 for slot in slots):
            for slot in slots:
                if slot.job >= 0 or not queue:
                    continue
                others = sum(held(other) for other in slots if other is not slot)
                if others + need[queue[0]] > free:
                    continue
                job = queue.pop(0)
                self._start(slot, job, prompts[job], len(prefix), walkers[job])
                slot.cells = need[job]
                stats.item_tokens += len(slot.pending)
            active = [slot for slot in slots if slot.job >= 0]
            if not active:  # idle sequences hold the room: let them go
                for slot in slots:
                    self._seq_rm(slot.seq, 0)
                    slot.prompt = []
                continue
            for slot in self._step(active, stats):
                reply = self._advance(slot, stats)
                if reply is not None:
                    results[slot.job] = reply
                    self._seq_rm(slot.seq, len(slot.prompt))  # keep the prompt, drop the reply
                    slot.job = -1
        stats.seconds = time.perf_counter() - started
        self.stats = stats
        return results  # type: ignore[return-value]

    def _run_in_one_sequence(
        self,
        prompts: Sequence[list[int]],
        walkers: Sequence[Callable[[], Walk]],
        reuse_prefix: bool,
    ) -> list[WalkedReply]:
        """One reply after the other in sequence 0, each prompt reusing what it shares
        with the tokens cached before it (its instructions, and the request both orders of
        a pair share).

        Measured faster than worker sequences when replies are not decoded side by side:
        the cache stays one contiguous run of cells, so attention never spans the cells
        other sequences left behind.
        """
        started = time.perf_counter()
        stats = RunStats()
        llama = self.llama
        self.drop_workers()
        results = []
        for prompt, walker in zip(prompts, walkers):
            common = shared_length(llama.input_ids[: llama.n_tokens].tolist(), prompt)
            common = min(common, len(prompt) - 1) if reuse_prefix else 0
            self._seq_rm(-1, common)
            llama.n_tokens = common
            walk = walker()
            request = next(walk)
            assert isinstance(request, Feed)
            stats.item_tokens += len(prompt) - common
            tokens = list(prompt[common:]) + list(request.tokens)
            try:
                while True:
                    if isinstance(request, Feed):
                        llama.eval(tokens)
                        stats.decodes += 1
                        pointer = self._lib.llama_get_logits_ith(llama._ctx.ctx, -1)
                        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()
                        request = walk.send(logits)
                    else:
                        llama.n_tokens -= request.count
                        self._seq_rm(-1, llama.n_tokens)
                        request = walk.send(None)
                    if isinstance(request, Feed):
                        tokens = list(request.tokens)
                        stats.reply_tokens += len(tokens)
            except StopIteration as stop:
                results.append(stop.value)
        stats.seconds = time.perf_counter() - started
        self.stats = stats
        return results

    def _set_prefix(self, prefix: list[int]) -> int:
        """Make sequence 0 hold exactly `prefix`; return how many tokens were evaluated."""
        llama = self.llama
        common = shared_length(llama.input_ids[: llama.n_tokens].tolist(), prefix)
        self._seq_rm(-1, common)  # every sequence: the workers keep their copy of prefix[:common]
        llama.n_tokens = common
        for slot in self._slots:
            slot.prompt = slot.prompt[:common]
        if len(prefix) > common:
            llama.eval(prefix[common:])
        return len(prefix) - common

    def _start(self, slot: _Slot, job: int, prompt: list[int], prefix: int, walker) -> None:
        """Ready a sequence for a prompt: keep what it shares with the sequence's last
        prompt (the request both orders of a pair share), else copy the prefix."""
        kept = min(shared_length(slot.prompt, prompt), len(prompt) - 1)
        if kept > prefix:
            self._seq_rm(slot.seq, kept)
        else:
            kept = prefix
            self._seq_rm(slot.seq, 0)
            if prefix:
                self._lib.llama_memory_seq_cp(self._memory(), PREFIX_SEQ, slot.seq, -1, -1)
        suffix = prompt[kept:]
        slot.prompt = list(prompt)
        slot.job = job
        slot.position = kept
        slot.walk = walker()
        first = next(slot.walk)  # the text the reply starts with, fed with the prompt
        assert isinstance(first, Feed)
        slot.pending = list(suffix) + list(first.tokens)

    def _step(self, active: list[_Slot], stats: RunStats) -> list[_Slot]:
        """One llama_decode over the pending tokens of the active slots (as many as fit).

        Returns the slots whose pending tokens are all evaluated, with their logits read.
        """
        batch = self._batch
        count = 0
        outputs: list[tuple[_Slot, int]] = []
        for slot in active:
            room = self.n_batch - count
            if room <= 0:
                break
            take = slot.pending[:room]
            last = len(take) == len(slot.pending)
            for offset, token in enumerate(take):
                batch.token[count] = token
                batch.pos[count] = slot.position + offset
                batch.n_seq_id[count] = 1
                batch.seq_id[count][0] = slot.seq
                batch.logits[count] = last and offset == len(take) - 1
                count += 1
            slot.position += len(take)
            del slot.pending[: len(take)]
            if last:
                outputs.append((slot, count - 1))
        batch.n_tokens = count
        code = self._lib.llama_decode(self.llama._ctx.ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama_decode failed with code {code} (KV cache full?)")
        stats.decodes += 1
        done = []
        for slot, index in outputs:
            pointer = self._lib.llama_get_logits_ith(self.llama._ctx.ctx, index)
            slot.logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)).copy()
            done.append(slot)
        return done

    def _advance(self, slot: _Slot, stats: RunStats) -> WalkedReply | None:
        """Send the logits to the slot's walk; queue its next feed, or end it."""
        assert slot.walk is not None
        try:
            request = slot.walk.send(slot.logits)
            while isinstance(request, Rewind):
                slot.position -= request.count
                self._seq_rm(slot.seq, slot.position)
                request = slot.walk.send(None)
        except StopIteration as stop:
            slot.walk = None
            return stop.value
        assert isinstance(request, Feed)
        slot.pending = list(request.tokens)
        stats.reply_tokens += len(slot.pending)
        return None

    def _memory(self):
        return self._lib.llama_get_memory(self.llama._ctx.ctx)

    def _seq_rm(self, seq: int, start: int) -> None:
        self._lib.llama_memory_seq_rm(self._memory(), seq, start, -1)


def _common_prefix(prompts: Sequence[list[int]]) -> list[int]:
    """The tokens every prompt starts with, leaving each at least its last token."""
    if not prompts:
        return []
    first = prompts[0]
    length = min(len(p) for p in prompts) - 1
    for prompt in prompts[1:]:
        common = 0
        for a, b in zip(first[:length], prompt):
            if a != b:
                break
            common += 1
        length = min(length, common)
    return list(first[: max(length, 0)])


MIN_SHARED_PREFIX = 32  # tokens two prompts must share to be run over one prefix

Job = tuple[int, list[int], int]  # (request index, prompt tokens, reply cells)


def prefix_groups(jobs: Sequence[Job], share: bool) -> list[list[Job]]:
    """Jobs in runs that share their instructions (sorted by prompt, so a batch of mixed
    scenarios or protocols still evaluates each set of instructions once).

    Without `share`, each job runs alone (the benchmark's score mode without reuse).
    """
    if not share:
        return [[job] for job in jobs]
    groups: list[list[Job]] = []
    for job in sorted(jobs, key=lambda j: j[1]):
        if groups and shared_length(groups[-1][0][1], job[1]) >= MIN_SHARED_PREFIX:
            groups[-1].append(job)
        else:
            groups.append([job])
    return groups


def shared_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many tokens `a` and `b` share at their start."""
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count
