"""Judging on a Ray cluster (`python -m app judge ... --engine ray [--address ADDR]`).

The driver reads the input with PocketJudge's own reader, so every layout and every
bad row come out exactly as in a local run; Ray Data spreads the rows over an actor
pool in batches of `window` rows. Each actor opens one judge backend (llama.cpp with
its own threads, or transformers on its GPU) and judges its batches through the same
`JudgeService` as a local run. Results stream back in input order
(`preserve_order`), so the CLI writes them into the same resumable output as a local
run: a killed run resumes, and exit codes and statuses are the local ones.

Without an address a local Ray instance starts on 127.0.0.1 with one CPU per worker
(and no dashboard); with one (`ray://host:10001` or `auto`) the run joins that
cluster, whose nodes need PocketJudge and the model files at the same paths.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from app.io.reader import InputRow
from app.judging.config import JudgeConfig
from app.records import Judgment
from models.backends.base import BackendOptions
from models.foundation.errors import PocketJudgeError

LOCAL_OBJECT_STORE_BYTES = 256 * 1024 * 1024  # rows and judgments are small
LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": node addresses are 127.0.0.1


class RayEngineError(PocketJudgeError):
    """Ray is missing, or the run asks for something the Ray engine does not do."""


@dataclass(frozen=True)
class RayJudge:
    """What each worker needs to open the judge and judge like the driver would."""

    model: str | None
    options: BackendOptions
    backend: str | None
    config: JudgeConfig


class JudgeActor:
    """One judge backend per Ray worker, judging a batch of rows at a time."""

    def __init__(self, judge: RayJudge) -> None:
        from app.api import load_judge

        self.config = judge.config  # the run's, resolved once where it started
        self.judge = load_judge(judge.model, options=judge.options, backend=judge.backend)

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        rows: list[InputRow] = list(batch["row"])
        judgments = self.judge.judge_many(rows, self.config)
        return {
            "index": list(batch["index"]),
            "judgment": [j.model_dump_json() for j in judgments],
        }


def judge_rows_on_ray(
    rows: Iterable[InputRow],
    judge: RayJudge,
    *,
    workers: int,
    window: int,
    address: str | None = None,
    on_judgment: Callable[[Judgment], None] | None = None,
) -> Iterator[Judgment]:
    """One judgment per row, in row order, judged by `workers` actors on Ray."""
    if judge.config.cascade is not None:
        raise RayEngineError(
            "a second judge (--cascade-to) does not run on the Ray engine yet: judge with "
            "the Ray engine first, then send the unsure rows with a local run"
        )
    if workers < 1 or window < 1:
        raise RayEngineError("--workers and --window must be at least 1")
    ray = _ray() if address else _prepare_local()
    from ray.data import ActorPoolStrategy, DataContext

    started_here = _connect(ray, address, workers)
    try:
        items = [{"index": n, "row": row} for n, row in enumerate(rows)]
        if not items:
            return
        context = DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        dataset = ray.data.from_items(items, override_num_blocks=max(1, len(items) // window))
        judged = dataset.map_batches(
            JudgeActor,
            fn_constructor_args=(judge,),
            batch_size=window,
            batch_format="numpy",
            compute=ActorPoolStrategy(size=workers),
            num_cpus=1,
            num_gpus=1 if _on_gpu(judge.options) else 0,
        )
        for expected, record in enumerate(judged.iter_rows()):
            if int(record["index"]) != expected:  # preserve_order guarantees it; check anyway
                raise RayEngineError(f"Ray returned row {record['index']}, expected {expected}")
            judgment = Judgment.model_validate_json(record["judgment"])
            if on_judgment is not None:
                on_judgment(judgment)
            yield judgment
    finally:
        if started_here:
            ray.shutdown()


def _on_gpu(options: BackendOptions) -> bool:
    """A worker that offloads layers (llama.cpp) or loads INT8 (transformers) needs a GPU
    of its own: Ray then places one worker per GPU."""
    return options.n_gpu_layers > 0 or options.load_in_8bit


def _prepare_local() -> Any:
    """Ray, imported so that a local instance lives on 127.0.0.1: Ray gives it the
    machine's outward address even when asked for 127.0.0.1, unless this switch is off
    when Ray is imported (the processes it starts inherit it)."""
    os.environ.setdefault(LOOPBACK_SWITCH, "0")
    return _ray()


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RayEngineError(
            "the Ray engine needs Ray: pip install 'ray[data]' (it is in requirements.txt)"
        ) from exc
    return ray


def _connect(ray: Any, address: str | None, workers: int) -> bool:
    """Join the cluster at `address`, or start a local instance on 127.0.0.1; True when
    this call started Ray (and so shuts it down)."""
    import logging

    for name in ("ray", "ray.data"):  # its INFO lines would drown the progress bar
        logging.getLogger(name).setLevel(logging.WARNING)
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=False)
        return True
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        object_store_memory=LOCAL_OBJECT_STORE_BYTES,
        log_to_driver=False,
        configure_logging=False,
    )
    return True
