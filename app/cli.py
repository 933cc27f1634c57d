"""Command line: `python -m app judge|scenarios|criteria|models|templates`.

The CLI only parses arguments, calls the core, and turns the core's typed
errors into one-line messages with a non-zero exit code (`app.batch_run.ExitCode`:
0 all rows ok, 1 some rows error or unparsed, 2 bad usage or input, 3 the
backend failed, 4 the results could not be written, 130 interrupted).

`judge` writes each row to `<out>.<key>.partial` as it finishes; the same
command run again after a kill goes on from there (`app.io.resumable`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.batch_run import ExitCode, exit_code
from app.criteria_resolution import AUTO, CriteriaChoice
from app.errors import BackendError, PocketJudgeError
from app.judging_arguments import add_judging_arguments, judging_overrides
from app.model_settings import model_judge_settings, sampling_of
from app.prompts import get_template, template_names
from app.records import JudgeItem, Judgment, Protocol, Status
from app.rubrics import load_rubric
from app.runs.commands import add_runs_parser
from app.scenarios import load_catalog
from models.backends import backend_names
from models.backends.base import BackendOptions

if TYPE_CHECKING:
    from app.io.reader import InputRow
    from app.io.resumable import ResumableOutput
    from app.progress import ProgressBar
    from app.runs.recorder import RunRecorder
    from app.service import JudgeConfig
    from models.loader import LoadedJudge
    from models.registry import ModelEntry

PROTOCOLS = ("auto", *(p.value for p in Protocol))
CASCADE_BELOW = 0.6  # the default threshold of a second judge named on the command line


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # bitsandbytes warns on every load that an optional CPU kernel package is missing:
    # nothing for a user to do, and it reads like a failure.
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    try:
        return int(args.handler(args))
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BACKEND
    except PocketJudgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description="PocketJudge: a local judge")
    commands = parser.add_subparsers(dest="command", required=True)

    judge = commands.add_parser(
        "judge",
        help="judge a JSONL/JSON file, one output row per input row",
        description="Judge a JSONL/JSON file, one output row per input row. Each row is "
        "written as it finishes; if the run is killed, the same command goes on from there.",
        epilog="exit codes: 0 every row ok; 1 some rows error or unparsed; 2 bad arguments, "
        "input or model; 3 the backend failed (run again to resume); 4 the results could not "
        "be written (run again to resume); 130 interrupted (run again to resume)",
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
        help="scenario name for every row; 'auto' uses each row's own, else the scenario "
        "classifier's pick (default when it is unsure)",
    )
    judge.add_argument(
        "--no-scenario-detection",
        action="store_true",
        help="with --scenario auto: a row without a scenario gets 'default' instead of the "
        "classifier's pick",
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
        help="score mode: replies decoded side by side as llama.cpp sequences, or requests in "
        "flight at once to an OpenAI-compatible server (1: one at a time)",
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
    judge.add_argument(
        "--cascade-to",
        help="a second judge (registry name or .gguf; with --cascade-base-url, the server's "
        "model) for the judgments this one is unsure of",
    )
    judge.add_argument(
        "--cascade-base-url",
        help="the second judge is an OpenAI-compatible server at this URL",
    )
    judge.add_argument(
        "--cascade-below",
        type=float,
        help=f"with a second judge: a confidence below this goes to it (default: the "
        f"registry entry's, else {CASCADE_BELOW})",
    )
    judge.add_argument(
        "--no-cascade",
        action="store_true",
        help="no second judge, even when the model's registry entry names one",
    )
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
        "--workers", type=int, default=2, help="--engine ray: actors, each with its own judge"
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

    ask = commands.add_parser(
        "ask",
        help="ask the judge about one of its judgments (why, an example)",
        description="Ask a question about a judgment in a judged JSONL: the judge gets the "
        "input row, its judgment and the question, and answers in free text.",
    )
    ask.add_argument("judged", type=Path, help="the JSONL `judge` wrote")
    ask.add_argument("--input", type=Path, required=True, help="the input file it judged")
    ask.add_argument("--id", required=True, help="the row's id")
    ask.add_argument("question", help="what to ask, e.g. 'Why is B better?'")
    ask.add_argument("--model", help="registry name or .gguf (default: the default judge)")
    ask.add_argument("--threads", type=int, help="CPU threads")
    ask.set_defaults(handler=_ask)
    add_runs_parser(commands)
    return parser


def _judge(args: argparse.Namespace) -> int:
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
    _check_choice(choice)
    total = count_rows(args.input)
    if args.limit is not None:
        total = min(total, args.limit)
    started = time.perf_counter()
    judge = _open(args)
    try:
        second = _open_second(args, judge)
    except BaseException:
        judge.close()
        raise
    load_s = time.perf_counter() - started
    try:
        return _run_batch(args, judge, choice, total, started, load_s, second)
    finally:
        judge.close()
        if second is not None:
            second.close()


def _open(args: argparse.Namespace) -> LoadedJudge:
    from models.loader import open_judge

    return open_judge(args.model, _options(args, args.base_url), backend=args.backend)


def _options(args: argparse.Namespace, base_url: str | None) -> BackendOptions:
    """The load and request options of a judge (the first, or a cascade's second)."""
    return BackendOptions(
        n_ctx=args.n_ctx,
        n_threads=args.threads,
        n_gpu_layers=args.gpu_layers,
        load_in_8bit=args.int8,
        base_url=base_url,
        api_key_env=args.api_key_env,
        parallel=args.parallel,
        prefix_cache=not args.no_prefix_cache,
        timeout_s=args.timeout,
        max_retries=args.retries,
        extra={"schema_form": args.schema_form},
    )


def _judge_config(
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


def _open_second(args: argparse.Namespace, first: LoadedJudge) -> LoadedJudge | None:
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

    options = _options(args, args.cascade_base_url)
    backend = "openai" if args.cascade_base_url else None
    return open_judge(args.cascade_to, options, backend=backend)


def _run_batch(
    args: argparse.Namespace,
    judge: LoadedJudge,
    choice: CriteriaChoice,
    total: int,
    started: float,
    load_s: float,
    second: LoadedJudge | None = None,
) -> int:
    from app.batch_run import write_batch
    from app.io.resumable import ResumableOutput, run_key
    from app.progress import ProgressBar
    from app.service import JudgeService, reference_note

    entry = judge.entry
    config = _judge_config(args, choice, entry)
    if second is not None:
        from app.cascade import Cascade

        second_config = _judge_config(args, choice, second.entry, own_settings=True)
        cascade = Cascade(
            JudgeService(second.backend, second.name), second_config, args.cascade_below
        )
        config = replace(config, cascade=cascade)
    if entry is not None and not entry.trained_for_judging:
        from models.cards import untrained_note

        print(f"note: '{judge.name}' is {untrained_note(entry)}", file=sys.stderr)
    if (note := reference_note(config)) is not None:
        print(f"note: '{judge.name}' {note}", file=sys.stderr)
    if args.mode == "score" and get_template(config.template).native:
        print(
            f"note: template '{config.template}' writes free text (the native format of "
            "another judge model), which score mode cannot read: judging in generate mode",
            file=sys.stderr,
        )
    settings = _settings(args, judge)
    output = ResumableOutput(args.out, run_key(args.input, settings))
    if args.restart:
        output.discard()
    for other in output.others():
        print(
            f"note: {other} is an unfinished run with another input or other settings; "
            "it is left as it is (delete it if you don't need it)",
            file=sys.stderr,
        )
    done = output.load()
    rows = _after(_input_rows(args.input, args.limit), done, output)
    if done:
        print(
            f"resuming: {len(done)} of {total} rows were judged by an earlier run of this "
            f"command ({output.partial}); --restart judges them again",
            file=sys.stderr,
        )
    service = JudgeService(judge.backend, judge.name)
    window = (args.window or max(1, args.parallel)) if args.mode == "score" else 1
    recorder = _recorder(args, output.key, judge, config.template, total, settings)
    try:
        with ProgressBar(total=total, initial=len(done), disable=args.quiet) as bar:
            if args.engine == "ray":
                stream = _on_ray(args, config, rows, window, bar, total)
            else:
                stream = service.judge_rows(
                    rows, config, total=total, on_judgment=bar.update, window=window
                )
            written = write_batch(stream, output, on_written=recorder.add)
    except OSError as exc:
        recorder.stop()
        return _kept(
            output,
            ExitCode.WRITE,
            f"error: could not write the results to {output.partial}: {exc}. The {{kept}} rows "
            "written are kept; free some space and run the same command again to go on.",
        )
    except KeyboardInterrupt:
        recorder.stop()
        return _kept(
            output,
            ExitCode.INTERRUPTED,
            f"interrupted: {{kept}} rows are kept in {output.partial}; run the same command "
            "again to go on from there",
        )
    judgments = done + written.judgments
    if written.stopped is not None:
        recorder.stop()
        output.close()
        kept = (
            f"The {len(judgments)} rows judged are kept in {output.partial}"
            if judgments
            else "No row was judged"
        )
        print(
            f"error: stopped: {written.stopped}. {kept}; fix the backend (is the server up? "
            "--base-url?) and run the same command again to go on.",
            file=sys.stderr,
        )
        return ExitCode.BACKEND
    final = _finish(output, judgments, args.csv)
    if final is not None:
        recorder.stop()
        return final
    recorder.finish(judgments, _items_by_line(args.input, args.limit))
    if recorder.active:
        print(f"recorded as run {recorder.run_id} (python -m app runs show ...)", file=sys.stderr)
    _summary(judgments, time.perf_counter() - started, load_s, args.out, resumed=len(done))
    return exit_code(judgments, written)


def _on_ray(
    args: argparse.Namespace,
    config: JudgeConfig,
    rows: Iterable[InputRow],
    window: int,
    bar: ProgressBar,
    total: int,
) -> Iterator[Judgment]:
    """The rows judged by a Ray actor pool, in order (app/ray_engine.py)."""
    from app.ray_engine import RayJudge, judge_rows_on_ray
    from app.service import Progress

    progress = Progress(total=total)

    def shown(judgment: Judgment) -> None:
        progress.add(judgment)
        bar.update(judgment, progress)

    judge = RayJudge(args.model, _options(args, args.base_url), args.backend, config)
    return judge_rows_on_ray(
        rows, judge, workers=args.workers, window=window, address=args.address, on_judgment=shown
    )


def _recorder(
    args: argparse.Namespace,
    key: str,
    judge: LoadedJudge,
    template: str,
    total: int,
    settings: dict[str, Any],
) -> RunRecorder:
    """The run's record in the history (disabled by --no-history or a history that fails)."""
    from app.io.resumable import file_digest
    from app.runs.recorder import RunRecorder, run_versions
    from app.runs.store import RunStart

    def warn(message: str) -> None:
        print(message, file=sys.stderr)

    recorder = RunRecorder.open(args.history, warn, enabled=not args.no_history)
    entry = judge.entry
    model_file = entry.path() if entry is not None else Path(args.model) if args.model else None
    recorder.start(
        RunStart(
            run_key=key,
            source="cli",
            input_name=args.input.name,
            input_hash=file_digest(args.input),
            model=judge.name,
            template=template,
            protocol=args.protocol,
            scenario=args.scenario or "auto",
            total=total,
            settings=settings,
            versions=run_versions(template, model_file),
        )
    )
    return recorder


def _input_rows(path: Path, limit: int | None) -> Iterator[InputRow]:
    """The input rows a run judges: all, or the first `limit` (--limit)."""
    from app.io.reader import read_rows

    rows = read_rows(path)
    return rows if limit is None else (row for row, _ in zip(rows, range(limit)))


def _items_by_line(path: Path, limit: int | None) -> dict[int, JudgeItem]:
    """The input items by line, stored with the judgments (the Runs page shows them)."""
    rows = _input_rows(path, limit)
    return {row.line: row.item for row in rows if row.item is not None and row.line is not None}


def _kept(output: ResumableOutput, code: ExitCode, message: str) -> ExitCode:
    """Close the partial file, say how many whole rows it keeps (`{kept}`), return `code`."""
    output.close()
    print(message.format(kept=len(output.load())), file=sys.stderr)
    return code


def _after(
    rows: Iterable[InputRow], done: list[Judgment], output: ResumableOutput
) -> Iterator[InputRow]:
    """The input rows after the ones an earlier run judged, checking they line up."""
    iterator = iter(rows)
    for judgment in done:
        row = next(iterator, None)
        if row is None or row.line != judgment.line:
            raise PocketJudgeError(
                f"{output.partial} does not match the input (row for line {judgment.line}); "
                "run with --restart to judge every row again"
            )
    return iterator


def _finish(
    output: ResumableOutput, judgments: list[Judgment], csv_path: Path | None
) -> int | None:
    """Write the CSV (atomically) and move the JSONL into place; an exit code on failure."""
    from app.io.writer import to_csv

    try:
        if csv_path is not None:
            partial_csv = csv_path.with_name(f"{csv_path.name}.{output.key}.partial")
            csv_path.parent.mkdir(parents=True, exist_ok=True)
            to_csv(judgments, partial_csv)
            os.replace(partial_csv, csv_path)
        output.finish()
    except OSError as exc:
        print(
            f"error: could not write the results: {exc}. All {len(judgments)} rows are kept "
            f"in {output.partial}; free some space and run the same command again.",
            file=sys.stderr,
        )
        return ExitCode.WRITE
    return None


# Arguments that change how fast a run goes or where it writes, not what it judges: a run
# resumed with other values of these goes on with the rows already judged.
_NOT_SETTINGS = frozenset(
    {
        "handler",
        "command",
        "input",
        "out",
        "csv",
        "quiet",
        "threads",
        "parallel",
        "window",
        "no_prefix_cache",
        "gpu_layers",
        "restart",
        "api_key_env",
        "timeout",
        "retries",
        "history",
        "no_history",
        "engine",
        "address",
        "workers",
    }
)


def _settings(args: argparse.Namespace, judge: LoadedJudge) -> dict[str, Any]:
    """What a run's results depend on besides the input: a resumed run must match it."""
    from app.io.resumable import file_digest

    settings = {k: v for k, v in vars(args).items() if k not in _NOT_SETTINGS}
    if args.rubric is not None:
        settings["rubric"] = file_digest(args.rubric)
    settings["model"] = judge.name
    entry = judge.entry
    path = entry.path() if entry is not None else Path(args.model) if args.model else None
    if path is not None and path.exists():
        stat = path.stat()
        settings["model_file"] = [str(path.resolve()), stat.st_size, stat.st_mtime_ns]
    from models.registry import MODELS_DIR

    for field in ("state_head", "calibration"):  # files whose content changes the results
        if entry is not None and getattr(entry, field):
            settings[field] = file_digest(MODELS_DIR / getattr(entry, field))
    return settings


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


def _summary(judgments: list, elapsed: float, load_s: float, out: Path, resumed: int) -> None:
    counts = {status: sum(j.status is status for j in judgments) for status in Status}
    judged = elapsed - load_s
    rate = (len(judgments) - resumed) / judged if judged > 0 else 0.0
    earlier = f" ({resumed} from the earlier run)" if resumed else ""
    print(
        f"{len(judgments)} rows{earlier} -> {out}: {counts[Status.OK]} ok, "
        f"{counts[Status.UNPARSED]} unparsed, {counts[Status.ERROR]} error; "
        f"model load {load_s:.1f}s, judging {judged:.1f}s ({rate:.2f} rows/s)",
        file=sys.stderr,
    )
    cascaded = [j for j in judgments if j.cascade is not None]
    if cascaded:
        second = sum(j.cascade["decided_by"] == "second" for j in cascaded)  # type: ignore[index]
        print(
            f"  cascade: the second judge decided {second} of {len(cascaded)} rows "
            f"({second / len(cascaded):.0%}; confidence below {cascaded[0].cascade['below']})",
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


def _ask(args: argparse.Namespace) -> int:
    """One follow-up question about one judged row (app/followup.py)."""
    from app.followup import ask
    from app.io.judgments import read_judgments
    from app.io.reader import read_rows
    from models.loader import open_judge

    for path in (args.judged, args.input):
        if not path.exists():
            print(f"error: {path}: file not found", file=sys.stderr)
            return ExitCode.USAGE
    judgment = next((j for j in read_judgments(args.judged) if j.id == args.id), None)
    item = next((r.item for r in read_rows(args.input) if r.item and r.item.id == args.id), None)
    if judgment is None or item is None:
        where = args.judged if judgment is None else args.input
        print(f"error: no row with id '{args.id}' in {where}", file=sys.stderr)
        return ExitCode.USAGE
    judge = open_judge(args.model, BackendOptions(n_threads=args.threads))
    try:
        print(ask(judge.backend, item, judgment, [], args.question))
    finally:
        judge.close()
    return ExitCode.OK


def _templates(args: argparse.Namespace) -> int:
    for name in template_names():
        template = get_template(name)
        protocols = ", ".join(p.value for p in template.protocols)
        about = {"name": name, "protocols": protocols, "reply": template.reply_format}
        print(json.dumps({**about, "about": template.description}))
    return 0
