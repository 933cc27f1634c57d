"""`python -m app judge`: open the judge (and a second one), resolve the run's
configuration, and hand the rows to the batch runner (app/cli/batch.py)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.batches.run import ExitCode
from app.catalog.criteria_resolution import AUTO, CriteriaChoice
from app.catalog.rubrics import load_rubric
from app.catalog.scenarios import load_catalog
from app.cli.batch import run_batch
from app.cli.judge_options import backend_options
from app.judging.arguments import judging_overrides
from app.records import Protocol
from models.backends.base import sampling_of
from models.run_settings import RUN_DEFAULTS

if TYPE_CHECKING:
    from app.api import Judge
    from app.judging.config import JudgeConfig


def run_judge(args: argparse.Namespace) -> int:
    from app.io.reader import count_rows

    if not args.input.exists():
        print(f"error: {args.input}: file not found", file=sys.stderr)
        return ExitCode.USAGE
    choice = CriteriaChoice(
        scenario=args.scenario,
        criteria=tuple(c.strip() for c in args.criteria.split(",") if c.strip())
        if args.criteria
        else None,
        rubric=load_rubric(args.rubric) if args.rubric else None,
    )
    check_choice(choice)
    total = count_rows(args.input)
    if args.limit is not None:
        total = min(total, args.limit)
    args.workers = batch_engines(args)
    if args.workers > 1 and not args.n_threads and args.engine == "local":
        args.n_threads = 1  # each engine one thread: the cores are the engines'
    started = time.perf_counter()
    judge = open_first(args, choice)
    try:
        second = open_second(args, choice, judge)
    except BaseException:
        judge.close()
        raise
    load_s = time.perf_counter() - started
    try:
        config = with_second(judge.config, second, args.cascade_below)
        return run_batch(args, judge, config, total, started, load_s)
    finally:
        judge.close()
        if second is not None:
            second.close()


def batch_engines(args: argparse.Namespace) -> int:
    """The engines that judge the rows (`--workers`; else one per usable core, as memory
    allows, for llama.cpp; 2 Ray actors; 1 for a server's backend), said where memory
    caps them."""
    if args.workers:
        if args.workers < 0:
            raise SystemExit("error: --workers must be 0 (one per core) or more")
        return args.workers
    if args.engine == "ray":
        return 2
    if args.base_url or args.backend not in (None, "llama-cpp"):
        return 1
    from app.batches.engine_pool import default_engines
    from models.foundation.errors import PocketJudgeError
    from models.registry import load_registry

    try:
        path = Path(args.model) if args.model and args.model.endswith(".gguf") else None
        path = path or load_registry().get(args.model).path()
    except PocketJudgeError:
        return 1  # the front door names the model's problem when it opens it
    engines, note = default_engines(path)
    if note and not args.quiet:
        print(f"note: {note}", file=sys.stderr)
    return engines


def run_fields(args: argparse.Namespace, choice: CriteriaChoice) -> dict[str, Any]:
    """What this run asks of a judge, whatever judge it is (app.judging.config.JudgeConfig)."""
    return {
        "protocol": None if args.protocol == "auto" else Protocol(args.protocol),
        "choice": choice,
        "use_reference": args.use_reference,
        "run_code": args.run_code,
        "self_reference": args.self_reference,
        "swap": args.swap,
        "reference_metrics": args.reference_metrics,
        "mode": args.mode,
        "feedback": args.feedback,
        "detect_scenario": args.detect_scenario,
        "sampling": sampling_of(args),
    }


def open_first(args: argparse.Namespace, choice: CriteriaChoice) -> Judge:
    """The judge, its registry settings under the flags given (app.api, the front door)."""
    from app.api import load_judge

    return load_judge(
        args.model,
        options=backend_options(args, args.base_url),
        backend=args.backend,
        overrides=judging_overrides(args),
        isolated=True,
        **run_fields(args, choice),
    )


def open_second(args: argparse.Namespace, choice: CriteriaChoice, first: Judge) -> Judge | None:
    """The cascade's second judge (`--cascade-to`, else the registry entry's `cascade_to`),
    with its own registry settings; None with `--no-cascade` or none named."""
    if args.no_cascade:
        return None
    if not args.cascade_to and not args.cascade_base_url:
        entry = first.entry
        if entry is None or entry.cascade_to is None:
            return None
        args.cascade_to = entry.cascade_to
        if args.cascade_below is None:
            args.cascade_below = entry.cascade_below
    if args.cascade_below is None:
        args.cascade_below = RUN_DEFAULTS.cascade_below
    from app.api import load_judge

    return load_judge(
        args.cascade_to,
        options=backend_options(args, args.cascade_base_url),
        backend="openai" if args.cascade_base_url else None,
        isolated=True,
        **run_fields(args, choice),
    )


def check_choice(choice: CriteriaChoice) -> None:
    """A typo in --scenario or --criteria fails here (exit 2), not once per row."""
    catalog = load_catalog()
    if choice.scenario not in (None, AUTO):
        catalog.get_scenario(choice.scenario)
    if choice.criteria and choice.rubric is None:
        catalog.specs_for(criteria_ids=list(choice.criteria))


def with_second(config: JudgeConfig, second: Judge | None, below: float) -> JudgeConfig:
    """`config` with the cascade to the second judge (which keeps its own settings)."""
    if second is None:
        return config
    from app.judging.cascade import Cascade

    return replace(config, cascade=Cascade(second, second.config, below))
