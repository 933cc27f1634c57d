"""The CLI's batch runner: a resumable output, the run's record in the history, the rows
judged here or on Ray with a progress bar, and the exit code (app.batches.run.ExitCode).

Each row is written to `<out>.<key>.partial` as it finishes; the same command run again
after a kill goes on from there (app.io.resumable)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.batches.run import ExitCode, exit_code
from app.cli.judge_options import backend_options
from app.formats.prompts import get_template
from app.records import JudgeItem, Judgment, Status
from models.foundation.errors import EngineStopped, PocketJudgeError

if TYPE_CHECKING:
    from app.api import Judge
    from app.batches.progress_bar import ProgressBar
    from app.batches.run import BatchWrite
    from app.io.reader import InputRow
    from app.io.resumable import ResumableOutput
    from app.judging.config import JudgeConfig
    from app.runs.recorder import RunRecorder


def run_batch(
    args: argparse.Namespace,
    judge: Judge,
    config: JudgeConfig,
    total: int,
    started: float,
    load_s: float,
) -> int:
    """Judge the input's rows with `config` into `args.out`, resuming a cut-off run."""
    announce(judge, config, args.mode)
    settings = run_settings(args, judge)
    output, done, rows = resumable_output(args, settings, total)
    recorder = _recorder(args, output.key, judge, config.judge.template, total, settings)
    try:
        written = judged_rows(args, judge, config, rows, (total, len(done)), output, recorder)
    except OSError as exc:
        recorder.stop()
        return _kept(
            output,
            ExitCode.WRITE,
            f"error: could not write the results to {output.partial}: {exc}. The {{kept}} rows "
            "written are kept; free some space and run the same command again to go on.",
        )
    except EngineStopped as exc:
        recorder.stop()
        return _kept(
            output,
            ExitCode.BACKEND,
            f"error: {exc}. The {{kept}} rows written are kept in {output.partial}; run the "
            "same command again to go on from there with a fresh engine.",
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
        return _stopped(output, judgments, written.stopped)
    final = _finish(output, judgments, args.csv)
    if final is not None:
        recorder.stop()
        return final
    recorder.finish(judgments, _items_by_line(args.input, args.limit))
    if recorder.active:
        print(f"recorded as run {recorder.run_id} (python -m app runs show ...)", file=sys.stderr)
    print_summary(judgments, time.perf_counter() - started, load_s, args.out, resumed=len(done))
    return exit_code(judgments, written)


def announce(judge: Judge, config: JudgeConfig, mode: str) -> None:
    """What the user should know of this judge before its rows come: untrained, what it
    does with a reference, a native template that score mode cannot read."""
    from app.judging.head_decider import own_answer_note, reference_note

    entry = judge.entry
    if entry is not None and not entry.trained_for_judging:
        from models.cards import untrained_note

        print(f"note: '{judge.name}' is {untrained_note(entry)}", file=sys.stderr)
    for note in (reference_note(config), own_answer_note(config)):
        if note is not None:
            print(f"note: '{judge.name}' {note}", file=sys.stderr)
    if mode == "score" and get_template(config.judge.template).native:
        print(
            f"note: template '{config.judge.template}' writes free text (the native format of "
            "another judge model), which score mode cannot read: judging in generate mode",
            file=sys.stderr,
        )


def resumable_output(
    args: argparse.Namespace, settings: dict[str, Any], total: int
) -> tuple[ResumableOutput, list[Judgment], Iterator[InputRow]]:
    """The run's partial output, the rows an earlier run of this command judged, and the
    input rows still to judge."""
    from app.io.resumable import ResumableOutput, run_key

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
    return output, done, rows


def judged_rows(
    args: argparse.Namespace,
    judge: Judge,
    config: JudgeConfig,
    rows: Iterator[InputRow],
    counts: tuple[int, int],
    output: ResumableOutput,
    recorder: RunRecorder,
) -> BatchWrite:
    """The rows judged (here, or on Ray) and written as they come, under a progress bar
    (`counts`: the rows in all, and those judged before); each is recorded once written."""
    from app.batches.progress_bar import ProgressBar
    from app.batches.run import write_batch

    total, initial = counts
    window = (args.window or max(1, args.parallel)) if args.mode == "score" else 1
    with ProgressBar(total=total, initial=initial, disable=args.quiet) as bar:
        if args.engine == "ray":
            stream = _on_ray(args, config, rows, window, bar, total)
        else:
            engines = max(1, min(args.workers, total - initial))  # no engine without rows
            stream = judge.judge_rows(
                rows, config, engines, total=total, on_judgment=bar.update, window=window
            )
        return write_batch(stream, output, on_written=recorder.add)


def _stopped(output: ResumableOutput, judgments: list[Judgment], why: str) -> ExitCode:
    output.close()
    kept = (
        f"The {len(judgments)} rows judged are kept in {output.partial}"
        if judgments
        else "No row was judged"
    )
    print(
        f"error: stopped: {why}. {kept}; fix the backend (is the server up? "
        "--base-url?) and run the same command again to go on.",
        file=sys.stderr,
    )
    return ExitCode.BACKEND


def _on_ray(
    args: argparse.Namespace,
    config: JudgeConfig,
    rows: Iterable[InputRow],
    window: int,
    bar: ProgressBar,
    total: int,
) -> Iterator[Judgment]:
    """The rows judged by a Ray actor pool, in order (app/batches/ray_engine.py)."""
    from app.batches.ray_engine import RayJudge, judge_rows_on_ray
    from app.batches.tally import Tally

    progress = Tally(total=total)

    def shown(judgment: Judgment) -> None:
        progress.add(judgment)
        bar.update(judgment, progress)

    judge = RayJudge(args.model, backend_options(args, args.base_url), args.backend, config)
    return judge_rows_on_ray(
        rows, judge, workers=args.workers, window=window, address=args.address, on_judgment=shown
    )


def _recorder(
    args: argparse.Namespace,
    key: str,
    judge: Judge,
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
    """Close the partial file, say how many whole rows it keeps (`{kept}` in `message`, which
    may hold braces of its own: an error's text, a path), return `code`."""
    output.close()
    print(message.replace("{kept}", str(len(output.load()))), file=sys.stderr)
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


def run_settings(args: argparse.Namespace, judge: Judge) -> dict[str, Any]:
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
    from models.judge_settings import JUDGE_FILES
    from models.registry import MODELS_DIR

    judging = judge.config.judge
    for field in JUDGE_FILES:  # files whose content changes the results
        if getattr(judging, field):
            settings[field] = file_digest(MODELS_DIR / getattr(judging, field))
    return settings


def print_summary(judgments: list, elapsed: float, load_s: float, out: Path, resumed: int) -> None:
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
