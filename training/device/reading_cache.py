"""An answer's likelihood reads, cached on disk by (model, text), resumable.

A read of an answer after its request (`cond`, with the states there) depends on
both texts; a read after an empty request (`uncond`) on the answer alone, so an
answer met with several requests (a counterexample's borrowed answer) is read
without a request once. Reads go to chunk files of `CHUNK` entries: a run killed
at any moment loses at most one chunk, and N processes (one core each) share a
list of work by `--part K --parts N`. A cache kept in git (`half`) writes its arrays in half
precision, compressed: a pooled state keeps three significant digits, which a linear head
does not notice, in half the bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from models.readings import AnswerReading

CHUNK = 20


@contextlib.contextmanager
def stopped_by_term() -> Iterator[None]:
    """SIGTERM (`kill PID`) raises KeyboardInterrupt while inside, so a reader stopped by it
    keeps what it read, as Ctrl-C does. A reader started in the background by a shell
    without job control cannot be stopped by Ctrl-C or SIGINT: the shell starts it with
    SIGINT ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def cond_key(question: str, answer: str) -> str:
    return "c" + hashlib.sha1(f"{question}\x00{answer}".encode()).hexdigest()


def uncond_key(answer: str) -> str:
    return "u" + hashlib.sha1(answer.encode("utf-8")).hexdigest()


class ReadingCache:
    """Token log-probabilities (and the request-read's pooled states) under `folder`."""

    def __init__(self, folder: Path, half: bool = False) -> None:
        self.folder = folder
        self.half = half
        self.arrays: dict[str, np.ndarray] = {}
        for path in sorted(folder.glob("*.npz")):
            with np.load(path) as chunk:
                for key in chunk.files:
                    self.arrays[key] = chunk[key].astype(np.float32, copy=False)
        self._pending: dict[str, np.ndarray] = {}
        self._label = "part0"

    def has(self, question: str, answer: str) -> bool:
        return (
            cond_key(question, answer) + ".lp" in self.arrays and uncond_key(answer) in self.arrays
        )

    def get(self, question: str, answer: str) -> AnswerReading:
        key = cond_key(question, answer)
        try:
            cond = self.arrays[key + ".lp"]
            uncond = self.arrays[uncond_key(answer)]
            states = self.arrays[key + ".st"]
        except KeyError:
            raise KeyError(
                f"{self.folder}: no reading of an answer of the fitting set "
                f"({answer[:60]!r}...); run `python -m training.heads.likelihood_head read` first"
            ) from None
        n = min(len(cond), len(uncond))
        return AnswerReading(cond=cond[:n], uncond=uncond[:n], states=states)

    def fill(
        self,
        texts: Sequence[tuple[str, str]],
        read_cond: Callable[[str, str], tuple[np.ndarray, np.ndarray]],
        read_uncond: Callable[[str], np.ndarray],
        label: str,
    ) -> None:
        """Read every (question, answer) not cached yet: `read_cond` gives the token
        log-probabilities and pooled states after the question, `read_uncond` the
        log-probabilities after none. Texts of one question should come together (the
        reader reuses the question's tokens)."""
        from tqdm import tqdm

        self._label = label
        self.folder.mkdir(parents=True, exist_ok=True)
        todo = [(q, a) for q, a in texts if not self.has(q, a)]
        groups: dict[str, list[str]] = {}
        for question, answer in todo:
            groups.setdefault(question, []).append(answer)
        bar = tqdm(total=len(todo), desc=f"reads {label}", unit="answer", file=sys.stderr)
        with stopped_by_term():
            try:  # a run stopped by Ctrl-C or `kill PID` keeps what it read
                for question, answers in groups.items():
                    for answer in answers:  # the request's reads first: they share its tokens
                        key = cond_key(question, answer) + ".lp"
                        if key not in self.arrays and key not in self._pending:
                            logprobs, states = read_cond(question, answer)
                            # one call: a stop between two stores would keep half an entry
                            self._pending.update({key: logprobs, key[:-3] + ".st": states})
                    for answer in answers:
                        free = uncond_key(answer)
                        if free not in self.arrays and free not in self._pending:
                            self._pending[free] = read_uncond(answer)
                        bar.update()
                    if len(self._pending) >= 3 * CHUNK:
                        self.flush()
            finally:
                bar.close()
                self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        number = len(list(self.folder.glob(f"{self._label}-*.npz")))
        path = self.folder / f"{self._label}-{number:05d}.npz"
        partial = path.with_suffix(".tmp.npz")
        if self.half:
            halves = {key: value.astype(np.float16) for key, value in self._pending.items()}
            np.savez_compressed(partial, **halves)
        else:
            np.savez(partial, **self._pending)
        partial.replace(path)
        self.arrays.update(self._pending)
        self._pending = {}

    def put(self, question: str, answer: str, reading: AnswerReading) -> None:
        """Keep an engine's reading (cond with its pooled states, uncond) for later runs."""
        key = cond_key(question, answer)
        self._pending[key + ".lp"] = reading.cond
        self._pending[key + ".st"] = np.asarray(reading.states)
        self._pending[uncond_key(answer)] = reading.uncond
        self.arrays.update(self._pending)
        if len(self._pending) >= 3 * CHUNK:
            self.flush()


class CachedReads:
    """A backend's `read_answers` served from a ReadingCache, new reads kept in it: an
    evaluation run again (another head on the same model, a resumed run) reads nothing twice.
    The readings are the backend's own, so the judgments are those of an uncached run."""

    def __init__(self, read_answers: Callable, cache: ReadingCache, label: str) -> None:  # type: ignore[type-arg]
        self._read = read_answers
        self._cache = cache
        cache._label = label
        cache.folder.mkdir(parents=True, exist_ok=True)

    def __call__(
        self,
        request: str,
        answers: Sequence[str],
        unconditioned: bool = True,
        criteria: Any = None,
    ) -> list[AnswerReading]:
        """Whole readings (after the request and after none) whatever `unconditioned` asks:
        a cached reading serves every head, those that read likelihoods too. Criteria read on
        from the reads (`criteria`) are read afresh, the readings kept as ever."""
        if criteria is not None:
            readings = self._read(request, answers, True, criteria)
            for answer, reading in zip(answers, readings):
                if not self._cache.has(request, answer):
                    self._cache.put(request, answer, reading)
            return readings
        missing = [a for a in answers if not self._cache.has(request, a)]
        if missing:
            for answer, reading in zip(missing, self._read(request, missing)):
                self._cache.put(request, answer, reading)
        return [self._cache.get(request, a) for a in answers]

    def close(self) -> None:
        self._cache.flush()
