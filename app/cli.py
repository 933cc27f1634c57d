"""Command line: `python -m app judge|scenarios|criteria|models|templates`.

The CLI only parses arguments, calls the core, and turns the core's typed
errors into one-line messages with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from app.criteria_resolution import AUTO, CriteriaChoice
from app.errors import PocketJudgeError
from app.judging_arguments import add_judging_arguments, judging_overrides
from app.model_settings import model_judge_settings, sampling_of
from app.prompts import template_names
from app.records import Protocol, Status
from app.rubrics import load_rubric
from app.scenarios import load_catalog
from models.backends import backend_names
from models.backends.base import BackendOptions

PROTOCOLS = ("auto", *(p.value for p in Protocol))


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except PocketJudgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="PocketJudge: a local judge")
    commands = parser.add_subparsers(dest="command", required=True)

    judge = commands.add_parser(
        "judge", help="judge a JSONL/JSON file, one output row per input row"
    )
    judge.add_argument("input", type=Path, help=".jsonl or .json file (any supported layout)")
    judge.add_argument("--out", type=Path, required=True, help="output .jsonl file")
    judge.add_argument("--csv", type=Path, help="also write a flat CSV here")
    judge.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="auto",
        help="auto: 1 answer single, 2 pairwise, 3+ multi (default)",
    )
    judge.add_argument(
        "--scenario",
        default=AUTO,
        help="scenario name for every row; 'auto' uses each row's own, else default",
    )
    judge.add_argument("--criteria", help="comma-separated criterion ids (replace the scenario's)")
    judge.add_argument("--rubric", type=Path, help="rubric YAML file (replaces criteria)")
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
        "--schema-form",
        choices=("json_schema", "json_object", "none"),
        default="json_schema",
        help="openai backend: how the server takes the JSON schema (json_object for "
        "llama-cpp-python's server)",
    )
    add_judging_arguments(judge)
    judge.add_argument("--no-reference", action="store_true", help="ignore reference answers")
    judge.add_argument("--no-swap", action="store_true", help="pairwise: judge one order only")
    judge.add_argument(
        "--feedback",
        action="store_true",
        help="score mode: also write a critique of each judgment (one generation per item)",
    )
    judge.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="score mode: replies decoded side by side as llama.cpp sequences (1: one at a time)",
    )
    judge.add_argument(
        "--no-prefix-cache",
        action="store_true",
        help="score mode: evaluate every prompt in full (benchmarks)",
    )
    judge.add_argument(
        "--reference-metrics",
        action="store_true",
        help="add ROUGE-1/2/L, BLEU and BERTScore F1 per answer for rows with a reference",
    )
    judge.add_argument("--temperature", type=float, default=0.0)
    judge.add_argument("--top-p", type=float, default=1.0)
    judge.add_argument("--max-tokens", type=int, default=768)
    judge.add_argument("--repeat-penalty", type=float, default=1.1)
    judge.add_argument("--seed", type=int, default=0)
    judge.add_argument("--threads", type=int, help="CPU threads (default: llama.cpp's choice)")
    judge.add_argument("--gpu-layers", type=int, default=0, help="layers offloaded to the GPU")
    judge.add_argument("--int8", action="store_true", help="transformers: bitsandbytes INT8 (GPU)")
    judge.add_argument("--limit", type=int, help="judge only the first N rows")
    judge.add_argument("--quiet", action="store_true", help="no progress bar")
    judge.set_defaults(handler=_judge)

    scenarios = commands.add_parser("scenarios", help="list scenarios by group")
    scenarios.add_argument("--search", help="only scenarios matching this text")
    scenarios.add_argument("--criteria", action="store_true", help="show each scenario's criteria")
    scenarios.set_defaults(handler=_scenarios)

    criteria = commands.add_parser("criteria", help="list the criteria library by category")
    criteria.set_defaults(handler=_criteria)

    models = commands.add_parser("models", help="list judge models in the registry")
    models.set_defaults(handler=_models)

    templates = commands.add_parser("templates", help="list prompt templates")
    templates.set_defaults(handler=_templates)
    return parser


def _judge(args: argparse.Namespace) -> int:
    from app.io.reader import count_rows, read_rows
    from app.io.writer import to_csv, write_jsonl
    from app.progress import ProgressBar
    from app.service import JudgeConfig, JudgeService
    from models.loader import open_judge

    if not args.input.exists():
        print(f"error: {args.input}: file not found", file=sys.stderr)
        return 2
    choice = CriteriaChoice(
        scenario=args.scenario,
        criteria=tuple(c.strip() for c in args.criteria.split(",") if c.strip())
        if args.criteria
        else None,
        rubric=load_rubric(args.rubric) if args.rubric else None,
    )
    _check_choice(choice)
    options = BackendOptions(
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        load_in_8bit=args.int8,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        parallel=args.parallel,
        prefix_cache=not args.no_prefix_cache,
        extra={"schema_form": args.schema_form},
    )
    total = count_rows(args.input)
    if args.limit is not None:
        total = min(total, args.limit)
    started = time.perf_counter()
    judge = open_judge(args.model, options, backend=args.backend)
    load_s = time.perf_counter() - started
    entry = judge.entry
    config = JudgeConfig(
        protocol=None if args.protocol == "auto" else Protocol(args.protocol),
        choice=choice,
        use_reference=not args.no_reference,
        swap=not args.no_swap,
        reference_metrics=args.reference_metrics,
        mode=args.mode,
        feedback=args.feedback,
        **model_judge_settings(
            entry, judging_overrides(args), context_tokens=args.n_ctx
        ).config_fields(),
        sampling=sampling_of(args),
    )
    if judge.entry is not None and not judge.entry.trained_for_judging:
        from models.cards import untrained_note

        print(f"note: '{judge.name}' is {untrained_note(judge.entry)}", file=sys.stderr)
    service = JudgeService(judge.backend, judge.name)
    rows = read_rows(args.input)
    if args.limit is not None:
        rows = (row for row, _ in zip(rows, range(args.limit)))
    judgments = []
    with ProgressBar(total=total, disable=args.quiet) as bar:
        stream = service.judge_rows(rows, config, total=total, on_judgment=bar.update)
        write_jsonl(_collect(stream, judgments), args.out)
    judge.close()
    if args.csv:
        to_csv(judgments, args.csv)
    _summary(judgments, time.perf_counter() - started, load_s, args.out)
    return 0


def _check_choice(choice: CriteriaChoice) -> None:
    """A typo in --scenario or --criteria fails here (exit 2), not once per row."""
    catalog = load_catalog()
    if choice.scenario not in (None, AUTO):
        catalog.get_scenario(choice.scenario)
    if choice.criteria and choice.rubric is None:
        catalog.specs_for(criteria_ids=list(choice.criteria))


def _collect(stream, sink: list):
    for judgment in stream:
        sink.append(judgment)
        yield judgment


def _summary(judgments: list, elapsed: float, load_s: float, out: Path) -> None:
    counts = {status: sum(j.status is status for j in judgments) for status in Status}
    judged = elapsed - load_s
    rate = len(judgments) / judged if judged > 0 else 0.0
    print(
        f"{len(judgments)} rows -> {out}: {counts[Status.OK]} ok, "
        f"{counts[Status.UNPARSED]} unparsed, {counts[Status.ERROR]} error; "
        f"model load {load_s:.1f}s, judging {judged:.1f}s ({rate:.2f} rows/s)",
        file=sys.stderr,
    )
    uncertain = sum(bool(j.uncertain) for j in judgments)
    truncated = sum(j.truncated for j in judgments)
    if uncertain or truncated:
        print(
            f"  {uncertain} verdicts uncertain (confidence below the judge's threshold: read "
            f"'leaning'), {truncated} rows cut to fit the context ('truncated')",
            file=sys.stderr,
        )
    for judgment in judgments:
        if judgment.status is not Status.OK:
            print(
                f"  line {judgment.line} [{judgment.status.value}]: {judgment.error}",
                file=sys.stderr,
            )


def _scenarios(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    shown = {s.id for s in catalog.search(args.search or "")}
    total = 0
    for group, ids in catalog.groups.items():
        members = [catalog.scenarios[i] for i in ids if i in shown]
        if not members:
            continue
        print(f"{group} ({len(members)})")
        for scenario in members:
            total += 1
            print(f"  {scenario.id:<38} {scenario.description}")
            if args.criteria:
                print(f"  {'':<38} criteria: {', '.join(scenario.criteria)}")
    groups = sum(1 for ids in catalog.groups.values() if any(i in shown for i in ids))
    print(f"{total} scenarios in {groups} groups")
    return 0


def _criteria(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    for category, criteria in catalog.criteria_by_category().items():
        print(f"{category} ({len(criteria)})")
        for criterion in criteria:
            print(f"  {criterion.id:<32} {criterion.description}")
    print(f"{len(catalog.criteria)} criteria")
    return 0


def _models(args: argparse.Namespace) -> int:
    from models.registry import load_registry

    registry = load_registry()
    for entry in registry.models:
        path = entry.path()
        state = "built" if path is not None and path.exists() else "not built (make models)"
        if entry.backend == "openai":
            state = f"server {entry.base_url}"
        marks = " [default]" if entry.name == registry.default else ""
        trained = "trained judge" if entry.trained_for_judging else "NOT trained for judging"
        print(f"{entry.name}{marks}: {entry.backend}, {trained}, {state}")
        print(f"  {entry.description}")
    return 0


def _templates(args: argparse.Namespace) -> int:
    from app.prompts import get_template

    for name in template_names():
        template = get_template(name)
        protocols = ", ".join(p.value for p in template.protocols)
        print(json.dumps({"name": name, "protocols": protocols, "about": template.description}))
    return 0
