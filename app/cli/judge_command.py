"""`python -m app judge`: open the judge (and a second one), resolve the run's
configuration, and hand the rows to the batch runner (app/cli/batch.py)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from app.batch_run import ExitCode
from app.cli.batch import run_batch
from app.cli.judge_options import CASCADE_BELOW, backend_options
from app.criteria_resolution import AUTO, CriteriaChoice
from app.judging_arguments import judging_overrides
from app.model_settings import model_judge_settings, sampling_of
from app.records import Protocol
from app.rubrics import load_rubric
from app.scenarios import load_catalog

if TYPE_CHECKING:
    from app.service import JudgeConfig
    from models.loader import LoadedJudge
    from models.registry import ModelEntry


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
    started = time.perf_counter()
    judge = open_first(args)
    try:
        second = open_second(args, judge)
    except BaseException:
        judge.close()
        raise
    load_s = time.perf_counter() - started
    try:
        config = with_second(args, choice, judge_config(args, choice, judge.entry), second)
        return run_batch(args, judge, config, total, started, load_s)
    finally:
        judge.close()
        if second is not None:
            second.close()


def open_first(args: argparse.Namespace) -> LoadedJudge:
    from models.loader import open_judge

    return open_judge(args.model, backend_options(args, args.base_url), backend=args.backend)


def judge_config(
    args: argparse.Namespace,
    choice: CriteriaChoice,
    entry: ModelEntry | None,
    *,
    own_settings: bool = False,
) -> JudgeConfig:
    """The run's configuration for a judge; `own_settings`: its registry settings alone
    (a cascade's second judge keeps its own template, threshold...)."""
    from app.service import JudgeConfig

    overrides = None if own_settings else judging_overrides(args)
    return JudgeConfig(
        protocol=None if args.protocol == "auto" else Protocol(args.protocol),
        choice=choice,
        use_reference=not args.no_reference,
        swap=not args.no_swap,
        reference_metrics=args.reference_metrics,
        mode=args.mode,
        feedback=args.feedback,
        detect_scenario=not args.no_scenario_detection,
        **model_judge_settings(entry, overrides, context_tokens=args.n_ctx).config_fields(),
        sampling=sampling_of(args),
    )


def open_second(args: argparse.Namespace, first: LoadedJudge) -> LoadedJudge | None:
    """The cascade's second judge (`--cascade-to`, else the registry entry's `cascade_to`),
    or None (`--no-cascade`, or none named)."""
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
        args.cascade_below = CASCADE_BELOW
    from models.loader import open_judge

    options = backend_options(args, args.cascade_base_url)
    backend = "openai" if args.cascade_base_url else None
    return open_judge(args.cascade_to, options, backend=backend)


def check_choice(choice: CriteriaChoice) -> None:
    """A typo in --scenario or --criteria fails here (exit 2), not once per row."""
    catalog = load_catalog()
    if choice.scenario not in (None, AUTO):
        catalog.get_scenario(choice.scenario)
    if choice.criteria and choice.rubric is None:
        catalog.specs_for(criteria_ids=list(choice.criteria))


def with_second(
    args: argparse.Namespace,
    choice: CriteriaChoice,
    config: JudgeConfig,
    second: LoadedJudge | None,
) -> JudgeConfig:
    """`config` with the cascade to the second judge, which keeps its own settings."""
    if second is None:
        return config
    from app.cascade import Cascade
    from app.service import JudgeService

    second_config = judge_config(args, choice, second.entry, own_settings=True)
    cascade = Cascade(JudgeService(second.backend, second.name), second_config, args.cascade_below)
    return replace(config, cascade=cascade)
