"""`python -m app runs ...`: list, show, compare and export the runs in the history.

    python -m app runs list [--model M] [--input FILE] [--status incomplete]
    python -m app runs show ID
    python -m app runs compare A B [--html report.html]
    python -m app runs export ID --format jsonl|csv|html --out FILE

An id may be given by its start (`20261125-2210` for `20261125-221003`) when only
one run starts with it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from app.runs.store import RunInfo, RunStore

FLIPS_SHOWN = 20


def add_runs_parser(commands: argparse._SubParsersAction) -> None:
    runs = commands.add_parser(
        "runs",
        help="the run history: list, show, compare and export past runs",
        description="Every `judge` run (and every batch of the app) is kept in a local "
        "SQLite database: $POCKETJUDGE_HOME/runs.sqlite3, else "
        "~/.local/share/pocketjudge/runs.sqlite3.",
    )
    runs.add_argument("--history", type=Path, help="the run history database to read")
    actions = runs.add_subparsers(dest="runs_command", required=True)
    listed = actions.add_parser("list", help="past runs, newest first")
    listed.add_argument("--model", help="only runs of this judge model")
    listed.add_argument("--input", help="only runs whose input file name contains this")
    listed.add_argument("--status", choices=("running", "complete", "incomplete"))
    listed.add_argument("--since", help="only runs started on or after this day (YYYY-MM-DD)")
    listed.set_defaults(handler=_list)
    show = actions.add_parser("show", help="one run: its settings and summary")
    show.add_argument("id")
    show.set_defaults(handler=_show)
    compare = actions.add_parser("compare", help="two runs over the same inputs")
    compare.add_argument("a")
    compare.add_argument("b")
    compare.add_argument("--html", type=Path, help="also write the comparison as an HTML report")
    compare.set_defaults(handler=_compare)
    export = actions.add_parser("export", help="write a run's judgments or its report")
    export.add_argument("id")
    export.add_argument("--format", choices=("jsonl", "csv", "html"), default="jsonl")
    export.add_argument("--out", type=Path, required=True)
    export.set_defaults(handler=_export)
    delete = actions.add_parser("delete", help="remove a run from the history")
    delete.add_argument("id")
    delete.set_defaults(handler=_delete)


def _store(args: argparse.Namespace) -> RunStore:
    return RunStore(args.history)


def _list(args: argparse.Namespace) -> int:
    runs = [r for r in _store(args).runs() if _kept(r, args)]
    if not runs:
        print("no runs recorded (judge a file with `python -m app judge`)", file=sys.stderr)
        return 0
    header = ("id", "started", "status", "source", "model", "input", "scenario", "rows",
              "ok", "unparsed", "error")  # fmt: skip
    table = [header] + [
        (
            r.id, r.started.replace("T", " ")[:16], r.status, r.source, r.model or "-",
            r.input_name or "-", r.scenario or "-", f"{r.rows}/{r.total or '?'}",
            *(str(r.counts.get(key, 0)) for key in ("ok", "unparsed", "error")),
        )
        for r in runs
    ]  # fmt: skip
    _print_table(table)
    return 0


def _kept(run: RunInfo, args: argparse.Namespace) -> bool:
    return (
        (args.model is None or run.model == args.model)
        and (args.input is None or args.input in (run.input_name or ""))
        and (args.status is None or run.status == args.status)
        and (args.since is None or run.day >= args.since)
    )


def _show(args: argparse.Namespace) -> int:
    from app.reports.dashboard import summarize

    store = _store(args)
    run = store.get(args.id)
    rows = store.rows(run.id)
    print(f"run {run.id} ({run.status}, {run.source})")
    for label, value in (
        ("started", run.started),
        ("finished", run.finished or "-"),
        ("input", f"{run.input_name} (sha256 {str(run.input_hash)[:12]})"),
        ("model", run.model),
        ("template", run.template),
        ("protocol", run.protocol),
        ("scenario", run.scenario),
        ("rows", f"{run.rows} of {run.total}"),
        ("versions", ", ".join(f"{k} {v}" for k, v in run.versions.items()) or "-"),
    ):
        print(f"  {label:<9} {value}")
    dash = summarize([r.item for r in rows], [r.judgment for r in rows])
    print("  status    " + ", ".join(f"{k} {v}" for k, v in dash.status_counts.items()))
    if dash.verdicts:
        print("  verdicts  " + ", ".join(f"{k} {v}" for k, v in dash.verdicts.items()))
    if dash.overall_scores:
        mean = sum(dash.overall_scores) / len(dash.overall_scores)
        print(f"  overall   mean {mean:.2f} over {len(dash.overall_scores)} answers")
    if dash.criterion_means:
        print("  criteria  " + ", ".join(f"{k} {v:.2f}" for k, v in dash.criterion_means.items()))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from app.runs.compare import compare_runs

    store = _store(args)
    run_a, run_b = store.get(args.a), store.get(args.b)
    comparison = compare_runs(run_a, store.rows(run_a.id), run_b, store.rows(run_b.id))
    if not comparison.same_inputs:
        print(
            "note: the runs read different input files; rows are matched by their id",
            file=sys.stderr,
        )
    print(f"A {run_a.id}: {run_a.model}, {run_a.input_name}")
    print(f"B {run_b.id}: {run_b.model}, {run_b.input_name}")
    agreement = "-" if comparison.agreement is None else f"{comparison.agreement:.1f} %"
    print(
        f"rows judged ok by both: {comparison.common} (only A: {comparison.only_a}, only B: "
        f"{comparison.only_b}); agreement {agreement}; flipped {len(comparison.flips)}"
    )
    if comparison.overall_delta is not None:
        print(f"overall grade, B - A: {comparison.overall_delta:+.3f}")
    for title, deltas in (
        ("by criterion", comparison.criterion_deltas),
        ("by scenario group", comparison.group_deltas),
    ):
        if deltas:
            print(f"score change {title} (B - A): " + ", ".join(
                f"{k} {v:+.2f}" for k, v in deltas.items()))  # fmt: skip
    for flip in comparison.flips[:FLIPS_SHOWN]:
        print(f"  {flip.id}: {flip.decision_a} -> {flip.decision_b}")
    if len(comparison.flips) > FLIPS_SHOWN:
        print(f"  ... {len(comparison.flips) - FLIPS_SHOWN} more (--html shows them all)")
    for name, standings in (("A", comparison.leaderboard_a), ("B", comparison.leaderboard_b)):
        if standings:
            print(f"leaderboard {name}: " + ", ".join(s.name for s in standings))
    if args.html is not None:
        from app.runs.report import comparison_report

        _write_text(args.html, comparison_report(comparison))
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    from app.io.writer import to_csv, write_jsonl

    store = _store(args)
    run = store.get(args.id)
    rows = store.rows(run.id)
    judgments = [r.judgment for r in rows]
    if args.format == "jsonl":
        write_jsonl(judgments, args.out)
    elif args.format == "csv":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        to_csv(judgments, args.out)
    else:
        from app.runs.report import run_report

        _write_text(args.out, run_report(run, rows))
    print(f"wrote {args.out} ({len(rows)} rows of run {run.id})", file=sys.stderr)
    return 0


def _delete(args: argparse.Namespace) -> int:
    store = _store(args)
    run = store.get(args.id)
    store.delete(run.id)
    print(f"deleted run {run.id}", file=sys.stderr)
    return 0


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _print_table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
