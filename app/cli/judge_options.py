"""The arguments of `python -m app judge`, in groups: what is judged, the judge, the
answer asked of it, a second judge, and the run itself. The judging settings a registry
entry also sets (template, tie margin, thresholds...) come from app.judging.arguments."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.catalog.criteria_resolution import AUTO
from app.judging.arguments import add_judging_arguments, add_run_arguments
from models.backends import backend_names
from models.backends.base import SAMPLING_SETTINGS, BackendOptions


def add_judge_arguments(judge: argparse.ArgumentParser) -> None:
    """Every argument of `judge`, in the order `--help` lists them."""
    what_is_judged(judge)
    the_judge(judge)
    add_judging_arguments(judge)
    the_answer(judge)
    a_second_judge(judge)
    the_run(judge)


def what_is_judged(judge: argparse.ArgumentParser) -> None:
    """The input, the output and what every row is judged on."""
    judge.add_argument("input", type=Path, help=".jsonl or .json file (any supported layout)")
    judge.add_argument("--out", type=Path, required=True, help="output .jsonl file")
    judge.add_argument("--csv", type=Path, help="also write a flat CSV here")
    add_run_arguments(judge, "protocol")
    judge.add_argument(
        "--scenario",
        default=AUTO,
        help="scenario name for every row; 'auto' uses each row's own, else the scenario "
        "classifier's pick (default when it is unsure)",
    )
    add_run_arguments(judge, "detect_scenario")
    judge.add_argument("--criteria", help="comma-separated criterion ids (replace the scenario's)")
    judge.add_argument("--rubric", type=Path, help="rubric YAML file (replaces criteria)")


def the_judge(judge: argparse.ArgumentParser) -> None:
    """Which model judges, through which backend (and a server's options)."""
    judge.add_argument("--model", help="registry name, .gguf file or safetensors folder")
    judge.add_argument("--backend", choices=backend_names())
    judge.add_argument(
        "--base-url", help="openai backend: server URL, e.g. http://127.0.0.1:8080/v1"
    )
    judge.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="openai backend: environment variable holding the key",
    )
    judge.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="openai backend: seconds one request may take (default 120)",
    )
    judge.add_argument(
        "--retries",
        type=int,
        default=3,
        help="openai backend: retries of a request that got no connection, timed out or a "
        "429/5xx, waiting 1, 2, 4... s between them (default 3)",
    )
    judge.add_argument(
        "--schema-form",
        choices=("json_schema", "json_object", "none"),
        default="json_schema",
        help="openai backend: how the server takes the JSON schema (json_object for "
        "llama-cpp-python's server)",
    )


def the_answer(judge: argparse.ArgumentParser) -> None:
    """What is asked of the judge and how it reads and writes."""
    add_run_arguments(judge, "use_reference", "run_code", "self_reference", "swap", "feedback")
    judge.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="score mode: replies decoded side by side as llama.cpp sequences, or requests in "
        "flight at once to an OpenAI-compatible server (1: one at a time)",
    )
    judge.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="score mode: evaluate every prompt in full (benchmarks)",
    )
    add_run_arguments(
        judge, "reference_metrics", *SAMPLING_SETTINGS, "n_threads", "n_gpu_layers", "workers"
    )
    judge.add_argument("--int8", action="store_true", help="transformers: bitsandbytes INT8 (GPU)")


def a_second_judge(judge: argparse.ArgumentParser) -> None:
    """A cascade: a second judge for the judgments this one is unsure of."""
    judge.add_argument(
        "--cascade-to",
        help="a second judge (registry name or .gguf; with --cascade-base-url, the server's "
        "model) for the judgments this one is unsure of",
    )
    judge.add_argument(
        "--cascade-base-url",
        help="the second judge is an OpenAI-compatible server at this URL",
    )
    add_run_arguments(judge, "cascade_below")
    judge.add_argument(
        "--no-cascade",
        action="store_true",
        help="no second judge, even when the model's registry entry names one",
    )


def the_run(judge: argparse.ArgumentParser) -> None:
    """How the run goes: how much, how fast, where, and its record."""
    judge.add_argument("--limit", type=int, help="judge only the first N rows")
    judge.add_argument("--quiet", action="store_true", help="no progress bar")
    judge.add_argument(
        "--restart",
        action="store_true",
        help="judge every row again, dropping the rows an interrupted run of this command kept",
    )
    judge.add_argument(
        "--window",
        type=int,
        help="score mode: rows scored together in one batch (a kill loses at most these; "
        "more may be faster when rows share instructions). Default: --parallel (1)",
    )
    judge.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="where rows are judged: this process, or a Ray actor pool (one judge per worker; "
        "results in input order, resumable like a local run)",
    )
    judge.add_argument(
        "--address",
        help="--engine ray: the cluster to join (ray://HOST:10001, or auto); default: a local "
        "Ray instance on 127.0.0.1",
    )
    judge.add_argument(
        "--history",
        type=Path,
        help="the run history database (default: runs.sqlite3 in $POCKETJUDGE_HOME, else "
        "~/.local/share/pocketjudge)",
    )
    judge.add_argument(
        "--no-history", action="store_true", help="do not record this run in the run history"
    )


def backend_options(args: argparse.Namespace, base_url: str | None) -> BackendOptions:
    """The load and request options of a judge (the first, or a cascade's second)."""
    return BackendOptions(
        n_ctx=args.n_ctx,
        n_threads=args.n_threads or None,
        n_gpu_layers=args.n_gpu_layers,
        load_in_8bit=args.int8,
        base_url=base_url,
        api_key_env=args.api_key_env,
        parallel=args.parallel,
        prefix_cache=not args.no_prefix_cache,
        timeout_s=args.timeout,
        max_retries=args.retries,
        extra={"schema_form": args.schema_form},
    )
