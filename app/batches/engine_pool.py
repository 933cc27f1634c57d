"""A batch judged by several engines at once, one per usable core: the rows come out in
input order as if one engine had judged them.

One engine decodes with one thread and reads a prompt with every core, so engines gain
where replies are decoded and little for a judge that only reads prompts (bench/engines.md:
0.85x the time of one engine for the 135M reply judge, 0.98x for the default's head). Each
engine is a judge of its own (its own engine worker process, one thread: app/api.py,
models/backends/worker_backend.py); a driver thread per engine takes the next window of
rows, and the judgments are given out in row order, each as soon as every earlier row's
is. A stop asked for (`should_stop`) lets the windows in progress finish and starts no new
one; an engine that stops (EngineStopped: a crash, the machine out of memory) ends the
batch after the rows before its window, so the rows written are whole and in order, and
the same command judges the rest (the next call starts a fresh engine).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from queue import Queue
from typing import TypeVar

ENGINE_OVERHEAD_BYTES = 600 * 1024**2  # an engine worker beside its model: context, Python
MOST_BY_DEFAULT = 8  # engines a batch gets unasked on a large machine (--workers N: more)
LOOKAHEAD = 2  # windows in flight per engine: the next one is ready when one finishes
Item = TypeVar("Item")
Done = TypeVar("Done")


def usable_cores() -> int:
    """The cores this process may run on (its affinity, which a container may narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory the machine can give without swapping (Linux's MemAvailable)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_engines(model: Path | None) -> tuple[int, str | None]:
    """Engines for a batch of the model file `model` by default: one per usable core (at
    most MOST_BY_DEFAULT), capped by the memory each needs (its own copy of the model and
    its context); a note where memory caps them."""
    cores = min(usable_cores(), MOST_BY_DEFAULT)
    memory = available_memory()
    model_bytes = model.stat().st_size if model is not None and model.is_file() else None
    if not model_bytes or memory is None:
        return cores, None
    fits = max(1, memory // (model_bytes + ENGINE_OVERHEAD_BYTES))
    if fits >= cores:
        return cores, None
    note = (
        f"{fits} engine(s), not {cores} (one per core): each holds its own copy of the "
        f"model, and {memory / 1024**3:.1f} GiB of memory is free"
    )
    return int(fits), note


def in_order(
    workers: Sequence[Callable[[list[Item]], list[Done]]],
    items: Iterable[Item],
    should_stop: Callable[[], bool] | None = None,
    window: int = 1,
) -> Iterator[Done]:
    """What `workers` make of `items`, `window` items at a time, each worker in a thread
    of its own, given out in the items' order (see the module's docstring: a stop lets the
    windows in progress finish; a worker's exception comes out at its window's place)."""
    free: Queue[Callable[[list[Item]], list[Done]]] = Queue()
    for worker in workers:
        free.put(worker)

    def done(chunk: list[Item]) -> list[Done]:
        worker = free.get()
        try:
            return worker(chunk)
        finally:
            free.put(worker)

    iterator = iter(items)
    pending: deque[Future[list[Done]]] = deque()
    with ThreadPoolExecutor(len(workers), thread_name_prefix="engine") as pool:
        try:
            while True:
                stopping = should_stop is not None and should_stop()
                while not stopping and len(pending) < LOOKAHEAD * len(workers):
                    chunk = list(islice(iterator, window))
                    if not chunk:
                        break
                    pending.append(pool.submit(done, chunk))
                if not pending:
                    return
                yield from pending.popleft().result()
        finally:
            for future in pending:  # a stop or a stopped engine: start none of the rest
                future.cancel()
