"""Meta-evaluate a judge on labelled files: `python -m training.evaluation.evaluate FILE [FILE...]`.

This module judges and runs the whole evaluation; reading the labelled rows is
training/datasets/labelled_files.py, re-scoring saved judgments training/evaluation/rescore.py,
turning judged rows into metrics training/evaluation/score_rows.py.

Reads labelled rows in any layout the reader knows (Auto-J pairwise and
single, LLMBar, PandaLM, JudgeLM, pointwise, ours), judges them (pairwise
files with both orders, single-score files with the single protocol), writes
the judgments as JSONL, then scores them against the labels and writes
`report.json` and `report.md` into the output folder.

`--judgments FILE.jsonl` re-scores a saved run without loading a model: the
labels still come from the input files, matched to the judgments by file name
and line. A JSONL written by `python -m app judge` works too when one input
file is given.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.catalog.scenarios import load_catalog
from app.deciding.calibration import ConfidenceCalibration, load_calibration
from app.io.judgments import read_judgments
from app.io.writer import write_jsonl
from app.judging.arguments import add_judging_arguments, add_run_arguments, judging_overrides
from app.judging.config import JudgeConfig
from app.judging.settings import SettingsLayer, judge_config
from app.records import Judgment, Protocol
from models.backends.base import BackendOptions, run_sampling
from models.foundation.errors import PocketJudgeError
from models.registry import ModelEntry
from models.run_settings import RUN_DEFAULTS
from training.datasets.labelled_files import (
    FILE_KEY,
    EvaluationError,
    Kind,
    LabelledFile,
    file_names,
    load_labelled,
)
from training.device.caches import cached_reads, cached_scores, cached_states
from training.evaluation.criteria_agreement import criteria_agreement
from training.evaluation.eval_report import render_markdown
from training.evaluation.meta_metrics import PairRow, cascade_curve, group_table, indicator_halves
from training.evaluation.rescore import (
    attach_judgments,
    base_entropies,
    judgment_margin,
    recombine,
    second_verdicts,
)
from training.evaluation.score_rows import score_file
from training.evaluation.signal_parts import signal_agreement

if TYPE_CHECKING:
    from app.api import Judge

RUNS_DIR = Path(__file__).resolve().parents[1] / "runs"
JUDGMENTS_FILE = "judgments.jsonl"

# --------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Overrides:
    """The evaluation's own choices: the user's layer of judging settings, and the mode."""

    settings: SettingsLayer = field(default_factory=SettingsLayer)
    mode: str = RUN_DEFAULTS.mode  # score (the default everywhere) or generate (the whole reply)


def protocol_of(kind: Kind) -> Protocol:
    return Protocol.PAIRWISE if kind == "pairwise" else Protocol.SINGLE


def run_fields(kind: Kind, overrides: Overrides = Overrides()) -> dict[str, Any]:
    """What an evaluation asks of any judge on a file of this kind: both orders of a pair,
    the mode, and the sampling the CLI uses."""
    return {
        "protocol": protocol_of(kind),
        "swap": True,
        "mode": overrides.mode,
        "sampling": run_sampling(),
    }


def file_config(
    kind: Kind, entry: ModelEntry | None, n_ctx: int, overrides: Overrides = Overrides()
) -> JudgeConfig:
    """The configuration for one file without opening the judge (a GPU read planner's:
    training.device.gpu_levels), resolved as `open_evaluated` resolves it."""
    return judge_config(
        entry, overrides.settings, context_tokens=n_ctx, **run_fields(kind, overrides)
    )


def open_evaluated(
    model: str | None,
    options: BackendOptions,
    backend: str | None = None,
    overrides: Overrides = Overrides(),
    kind: Kind = "pairwise",
) -> Judge:
    """The judge as an evaluation runs it, opened through the front door (app.api)."""
    from app.api import load_judge

    return load_judge(
        model,
        options=options,
        backend=backend,
        overrides=overrides.settings,
        **run_fields(kind, overrides),
    )


def _judge_files(
    files: Sequence[LabelledFile],
    model: str | None,
    options: BackendOptions,
    backend: str | None,
    out: Path,
    quiet: bool,
    overrides: Overrides = Overrides(),
    fresh: bool = False,
    reading_cache: Path | None = None,
    score_cache: Path | None = None,
    state_cache: Path | None = None,
) -> dict[str, Any]:
    """Judge every file's labelled rows, writing the judgments to `out` as they come.

    A run that was cut off goes on where it stopped: rows already in `out` (same
    model, template and mode) are kept and only the others are judged, unless
    `fresh`. The files end up holding every saved judgment, in row order.
    """
    from app.batches.progress_bar import ProgressBar

    judge = open_evaluated(model, options, backend, overrides)
    cached = cached_reads(judge.backend, reading_cache, out)
    scored = cached_scores(judge.backend, score_cache, out)
    states = cached_states(judge.backend, state_cache, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    shown = judge.config
    done = set() if fresh else _resumable(out, judge.name, shown)
    try:
        with open(out, "a" if done else "w", encoding="utf-8", newline="\n") as stream:
            for file in files:
                config = replace(judge.config, protocol=protocol_of(file.kind))
                todo = [row for row in file.rows if (file.name, row.line) not in done]
                if not quiet:
                    kept = len(file.rows) - len(todo)
                    note = f" ({kept} judged before, kept)" if kept else ""
                    print(f"{file.name}: {len(file.rows)} labelled rows{note}", file=sys.stderr)
                with ProgressBar(total=len(todo), disable=quiet) as bar:
                    judged = judge.judge_rows(todo, config, on_judgment=bar.update)
                    write_jsonl(_tagged(judged, file), stream)
    finally:
        for wrapper in (cached, scored, states):
            if wrapper is not None:
                wrapper.close()
        judge.close()
    attach_judgments(files, read_judgments(out))
    return {
        "model": judge.name,
        "template": shown.judge.template,
        "pair_combine": shown.judge.pair_combine,
        "tie_margin": shown.judge.tie_margin,
        "rescored": False,
        "resumed": len(done),
        "judgments": str(out),
    }


def _resumable(out: Path, model: str, config: JudgeConfig) -> set[tuple[Any, int | None]]:
    """(file, line) of the judgments a cut-off run left in `out`; raises if they
    are another judge's. A last line cut off mid-write is dropped from the file."""
    if not out.is_file():
        return set()
    text = out.read_text(encoding="utf-8")
    complete = text[: text.rfind("\n") + 1]
    if complete != text:
        out.write_text(complete, encoding="utf-8")
    saved = read_judgments(out)
    wanted = (model, config.judge.template, config.mode)
    for judgment in saved:
        found = (judgment.model, judgment.template, judgment.mode)
        # A row that failed early carries no template or mode; what it lacks says nothing.
        if any(f is not None and f != w for f, w in zip(found, wanted)):
            raise EvaluationError(
                f"{out} holds judgments of model {found[0]}, template {found[1]}, mode "
                f"{found[2]}; this run is {wanted[0]}, {wanted[1]}, {wanted[2]}. "
                "Give another --out, or --fresh to start over there"
            )
    return {(j.metadata.get(FILE_KEY), j.line) for j in saved}


def _tagged(judgments: Iterator[Judgment], file: LabelledFile) -> Iterator[Judgment]:
    for judgment in judgments:
        tagged = judgment.model_copy(
            update={"metadata": {**judgment.metadata, FILE_KEY: file.name}}
        )
        file.judgments.append(tagged)
        yield tagged


# --------------------------------------------------------------------------- the run


def evaluate_files(
    paths: Sequence[str | Path],
    model: str | None = None,
    limit: int | None = None,
    out_dir: str | Path | None = None,
    *,
    judgments: str | Path | None = None,
    threads: int | None = None,
    n_ctx: int = RUN_DEFAULTS.n_ctx,
    backend: str | None = None,
    quiet: bool = False,
    overrides: Overrides = Overrides(),
    fresh: bool = False,
    skip: int = 0,
    second_judgments: str | Path | None = None,
    base_judgments: str | Path | None = None,
    calibration: str | Path | None = None,
    reading_cache: str | Path | None = None,
    score_cache: str | Path | None = None,
    state_cache: str | Path | None = None,
) -> dict[str, Any]:
    """Judge (or re-score, with `judgments`) labelled files; write and return the report.

    `second_judgments`: a saved run of another judge on the same files (the second tier
    of a cascade); each pairwise file then gets the cascade curve (`cascade`).
    `base_judgments`: a saved run of the judge's base model on the same files, in score
    mode; the confidence indicators then include the entropy minus the base's.
    `calibration`: re-scoring only: a calibration file (app/deciding/calibration.py) applied to
    the saved judgments, as if the judge had had it when judging.

    `model` is a registry name or a model path (None: the registry default);
    `backend` forces a backend by name; `overrides` replace the entry's template,
    pair combine, tie margin and input budget. Re-scoring with a calibrated
    combine and a tie margin recomputes each verdict from the saved margin. `out_dir` defaults to
    training/runs/eval-<model> when judging, and to the folder of `judgments`
    when re-scoring. A judging run whose folder holds judgments of the same
    judge goes on from them (a cut-off run resumes) unless `fresh`. Raises
    EvaluationError, FileNotFoundError or the loader's errors; one bad row never
    stops the run.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise EvaluationError("give at least one labelled file to evaluate on")
    files = [load_labelled(p, n, limit, skip) for p, n in zip(paths, file_names(paths))]
    if calibration is not None and judgments is None:
        raise EvaluationError("--calibration re-scores saved judgments: give --judgments too")
    if judgments is not None:
        run = _rescored(files, Path(judgments), overrides, calibration)
        out = Path(out_dir) if out_dir is not None else Path(judgments).parent
    else:
        options = BackendOptions(n_ctx=n_ctx, n_threads=threads)
        out = Path(out_dir) if out_dir is not None else RUNS_DIR / f"eval-{_slug(model)}"
        run = _judge_files(
            files,
            model,
            options,
            backend,
            out / JUDGMENTS_FILE,
            quiet,
            overrides,
            fresh,
            Path(reading_cache) if reading_cache is not None else None,
            Path(score_cache) if score_cache is not None else None,
            Path(state_cache) if state_cache is not None else None,
        )
    second = read_judgments(Path(second_judgments)) if second_judgments is not None else None
    base = read_judgments(Path(base_judgments)) if base_judgments is not None else None
    report = build_report(files, run, limit, skip, second, base)
    write_report(report, out)
    return report


def _rescored(
    files: list[LabelledFile],
    judgments: Path,
    overrides: Overrides,
    calibration: str | Path | None,
) -> dict[str, Any]:
    """Saved judgments attached to their files (re-calibrated, re-decided with a new tie
    margin where asked); the run's description."""
    saved = read_judgments(judgments)
    if calibration is not None:
        saved = _calibrated(saved, load_calibration(Path(calibration)))
    run = _saved_run(saved, judgments)
    tie_margin = overrides.settings.tie_margin
    if tie_margin is not None:
        # Only calibrated judgments carry a margin; a new margin re-decides exactly those.
        if overrides.settings.pair_combine == "agree":
            raise EvaluationError(
                "a tie margin re-scores the calibrated verdict; drop --combine agree"
            )
        if any(judgment_margin(j) is not None for j in saved):
            saved = [recombine(j, tie_margin) for j in saved]
            run["pair_combine"], run["tie_margin"] = "calibrated", tie_margin
    attach_judgments(files, saved)
    return run


def build_report(
    files: Sequence[LabelledFile],
    run: dict[str, Any],
    limit: int | None,
    skip: int = 0,
    second: Sequence[Judgment] | None = None,
    base: Sequence[Judgment] | None = None,
) -> dict[str, Any]:
    catalog = load_catalog()
    entries: dict[str, Any] = {}
    pairs: list[PairRow] = []
    for file in files:
        entries[file.name], rows = score_file(file, catalog)
        if second is not None and rows:
            entries[file.name]["cascade"] = cascade_curve(rows, second_verdicts(file, second))
            entries[file.name]["cascade_model"] = next((j.model for j in second), None)
        if base is not None and rows:
            entries[file.name]["indicators"] = indicator_halves(rows, base_entropies(file, base))
            entries[file.name]["base_model"] = next((j.model for j in base), None)
        if entries[file.name]["kind"] == "pairwise":
            signals = signal_agreement(file.rows, file.judgments)
            if signals is not None:
                entries[file.name]["signals"] = signals
            criteria = criteria_agreement(file.rows, file.judgments)
            if criteria is not None:
                entries[file.name]["criteria"] = criteria
        pairs += rows
    return {
        **run,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "limit": limit,
        "skip": skip,
        "files": entries,
        "groups": group_table(pairs),
    }


def write_report(report: dict[str, Any], out: Path) -> str:
    """Write report.json and report.md into `out`; return the markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    markdown = render_markdown(report)
    (out / "report.md").write_text(markdown, encoding="utf-8")
    return markdown


def _calibrated(
    judgments: Sequence[Judgment], calibration: ConfidenceCalibration
) -> list[Judgment]:
    return [j.model_copy(update={"calibrated_confidence": calibration.of(j)}) for j in judgments]


def _saved_run(judgments: Sequence[Judgment], path: Path) -> dict[str, Any]:
    first = judgments[0] if judgments else None
    return {
        "model": first.model if first else None,
        "template": first.template if first else None,
        "judgments": str(path),
        "rescored": True,
    }


def _slug(model: str | None) -> str:
    name = Path(model).name if model else "default"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "model"


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        report = evaluate_files(
            args.files,
            args.model,
            args.limit,
            args.out,
            skip=args.skip,
            judgments=args.judgments,
            threads=args.n_threads or None,
            n_ctx=args.n_ctx,
            quiet=args.quiet,
            fresh=args.fresh,
            overrides=Overrides(judging_overrides(args), args.mode),
            second_judgments=args.second_judgments,
            base_judgments=args.base_judgments,
            calibration=args.calibration,
            reading_cache=args.reading_cache,
            score_cache=args.score_cache,
            state_cache=args.state_cache,
        )
    except (PocketJudgeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(render_markdown(report))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluation.evaluate",
        description="Meta-evaluate a judge against human or teacher labels.",
    )
    parser.add_argument("files", nargs="+", type=Path, help="labelled .jsonl/.json files")
    parser.add_argument("--model", help="registry name, .gguf file or safetensors folder")
    parser.add_argument("--limit", type=int, help="use only the first N rows of each file")
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N rows of each file (--limit counts after them); two "
        "processes with their own --out can judge two parts, then --judgments re-scores both",
    )
    add_run_arguments(parser, "n_threads")
    parser.add_argument(
        "--out", type=Path, help="output folder (default: training/runs/eval-<model>)"
    )
    parser.add_argument(
        "--judgments",
        type=Path,
        help="re-score this saved judgments.jsonl instead of judging (no model needed)",
    )
    add_judging_arguments(parser)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="judge every row again (default: go on from the judgments already in --out)",
    )
    parser.add_argument(
        "--second-judgments",
        type=Path,
        help="a saved judgments.jsonl of a second judge on the same files: adds the cascade "
        "curve (agreement when the least confident 0/10/30/50/100 %% go to it)",
    )
    parser.add_argument(
        "--base-judgments",
        type=Path,
        help="a saved judgments.jsonl of the judge's base model on the same files (score "
        "mode): adds 'entropy minus base' to the confidence indicators",
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        help="with --judgments: apply this calibration file to the saved judgments first "
        "(the ECE of the calibrated confidence, for a map fitted after the run)",
    )
    parser.add_argument(
        "--reading-cache",
        type=Path,
        help="a folder where a likelihood head's answer reads are kept by (request, answer): "
        "another head on the same model judges the same rows again without reading them",
    )
    parser.add_argument(
        "--score-cache",
        type=Path,
        help="a folder where score-mode replies (a head's criterion reads) are kept by prompt: "
        "replies read before, or on a GPU (training.device.gpu_levels), are not read again",
    )
    parser.add_argument(
        "--state-cache",
        type=Path,
        help="a folder where the request states a judge's own scenario classifier reads are "
        "kept by text (training.device.state_cache)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


if __name__ == "__main__":
    sys.exit(main())
