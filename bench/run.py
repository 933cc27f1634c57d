"""`make bench`: the judging modes side by side on the first 50 pairs of Auto-J dev.

    python -m bench.run [--pairs 50] [--threads 1,2] [--modes a,b,c,d,e,f] [--fresh]
                        [--runs bench/runs] [--results bench/results.md]

Each (mode, threads) cell runs in its own process (bench/cell.py) and is saved in
bench/runs/<default judge>/ as it finishes, so an interrupted benchmark goes on where it stopped
(--fresh runs everything again). In the same run the prompt-evaluation bound is
measured: the item tokens of both orders of every pair (the prompt after the
shared instructions) divided by the speed at which llama.cpp reads a prompt on
this machine. Every mode is given as a ratio to that bound and to mode (a).
The table goes to bench/results.md and to the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

from bench.cell import DEV, N_CTX, REPO

RUNS = REPO / "bench" / "runs"
RESULTS = REPO / "bench" / "results.md"
NOTES_MARKER = "<!-- notes: kept by make bench -->"  # what follows is written by hand
MODES = {
    "a": "transformers fp32, plain generate",
    "b": "llama.cpp, full generation",
    "c": "llama.cpp, score mode",
    "d": "score mode + prefix reuse",
    "e": "(d), decision-first template, verdict token only",
    "f": "state head: the verdict from the model's hidden states",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument(
        "--modes",
        help="default: b,c,d,e, with a for a judge built from an adapter and f for one with a "
        "state head",
    )
    parser.add_argument(
        "--pairs-a",
        type=int,
        default=10,
        help="pairs for mode (a), the slow baseline (its rate is per pair, so it compares)",
    )
    parser.add_argument("--fresh", action="store_true", help="ignore saved cells")
    parser.add_argument(
        "--saved-only", action="store_true", help="run nothing: the table of the saved cells"
    )
    parser.add_argument(
        "--runs", type=Path, help="where cells are saved (default: bench/runs/<default judge>)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the table goes")
    args = parser.parse_args(argv)
    from models.registry import load_registry

    entry = load_registry().get()  # what the cells judge with: saved cells are its own
    model = entry.name
    runs: Path = args.runs or RUNS / model
    threads = [int(t) for t in args.threads.split(",")]
    chosen = args.modes or default_modes(entry)
    modes = [m for m in chosen.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; valid: {', '.join(MODES)}")
    if not DEV.is_file():
        parser.error(f"{DEV} is missing: the benchmark reads ../shared/data beside the repo")
    cells = {}
    for count in threads:
        if args.saved_only:
            for name in ("bound", *modes):
                n = args.pairs_a if name == "a" else args.pairs
                saved = runs / f"{name}-t{count}-n{n}.json"
                if saved.is_file():
                    cells[(name, count)] = _load_cell(saved)
            continue
        bound = prompt_bound(runs, args.pairs, count, args.fresh)
        for mode in modes:
            n = args.pairs_a if mode == "a" else args.pairs
            cells[(mode, count)] = run_cell(runs, mode, count, n, args.fresh)
        cells[("bound", count)] = bound
    table = render(cells, modes, threads, args.pairs, model)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(table + kept_notes(args.results), encoding="utf-8")
    print(table)
    return 0


def kept_notes(results: Path) -> str:
    """What stands below NOTES_MARKER in `results` (notes written by hand about the
    table), kept when the table above it is written again; "" where there is none."""
    if not results.is_file():
        return ""
    text = results.read_text(encoding="utf-8")
    at = text.find(NOTES_MARKER)
    return "" if at < 0 else "\n" + text[at:]


def default_modes(entry) -> str:  # type: ignore[no-untyped-def]
    """Every mode the judge has: (a) needs an adapter build (base + adapter in transformers),
    (f) a state head."""
    modes = "b,c,d,e"
    if (entry.build or "").startswith("adapter"):
        modes += ",a"
    return modes + (",f" if entry.judging.state_head else "")


def run_cell(runs: Path, mode: str, threads: int, pairs: int, fresh: bool) -> dict:
    out = runs / f"{mode}-t{threads}-n{pairs}.json"
    if out.is_file() and not fresh:
        print(f"({mode}, {threads} thread(s)): saved in {out}", file=sys.stderr)
        return _load_cell(out)
    print(f"({mode}, {threads} thread(s)): {MODES[mode]} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [sys.executable, "-m", "bench.cell", mode, str(threads), str(pairs), str(out)],
        check=True,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    print(f"  done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return _load_cell(out)


def _load_cell(path: Path) -> dict:
    """A saved cell, with the path of its judgments (saved beside it by bench/cell.py)."""
    cell = json.loads(path.read_text(encoding="utf-8"))
    cell["judgments"] = str(path.with_suffix(".jsonl"))
    return cell


def prompt_bound(runs: Path, pairs: int, threads: int, fresh: bool) -> dict:
    """Item tokens of both orders, and llama.cpp's prompt-reading speed, measured now."""
    out = runs / f"bound-t{threads}-n{pairs}.json"
    if out.is_file() and not fresh:
        return json.loads(out.read_text(encoding="utf-8"))
    from app.api import load_judge
    from app.io.reader import read_rows
    from app.judging.settings import SettingsLayer
    from app.records import Protocol
    from models.backends.base import BackendOptions, Message

    # the LLM's prompts: a state head would plan none
    judge = load_judge(
        options=BackendOptions(n_ctx=N_CTX, n_threads=threads),
        overrides=SettingsLayer(state_head=False),
        protocol=Protocol.PAIRWISE,
    )
    backend, config = judge.backend, judge.config
    item_tokens = 0
    prompts: list[tuple[list[int], int]] = []  # (prompt tokens, where the item starts)
    for row in islice(read_rows(DEV), pairs):
        for call in judge.score_requests(row.item, config):
            tokens = backend.prompt_tokens(call.messages)
            system = [m for m in call.messages if m.role == "system"]
            bare = backend.prompt_tokens([*system, Message("user", "")])
            shared = next((i for i, (a, b) in enumerate(zip(tokens, bare)) if a != b), 0)
            item_tokens += len(tokens) - shared
            prompts.append((tokens, shared))
    speed = read_speed(backend.llama, prompts[:SPEED_PROMPTS])
    judge.close()
    result = {"item_tokens": item_tokens, "tokens_per_s": speed, "seconds": item_tokens / speed}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


SPEED_PROMPTS = 20


def read_speed(llama, prompts: list[tuple[list[int], int]]) -> float:
    """Tokens per second at which llama.cpp reads the items of real prompts: the
    instructions are evaluated first (not timed), then the item after them (timed), so
    the attention over the tokens before it is paid as in a real call. The first prompt
    is read once untimed, so the model's pages are in memory as in a running judge."""
    tokens = seconds = 0.0
    for index, (prompt, start) in enumerate([prompts[0], *prompts]):
        llama.n_tokens = 0
        llama._ctx.kv_cache_clear()
        llama.eval(prompt[:start])
        began = time.perf_counter()
        llama.eval(prompt[start:])
        if index == 0:  # the warm-up
            continue
        seconds += time.perf_counter() - began
        tokens += len(prompt) - start
    llama.n_tokens = 0
    llama._ctx.kv_cache_clear()
    return tokens / seconds


def render(cells: dict, modes: list[str], threads: list[int], pairs: int, model: str) -> str:
    lines = [
        "# Benchmark: judging modes on Auto-J dev",
        "",
        f"`make bench` on {datetime.now(UTC):%Y-%m-%d}: the first {pairs} pairs of "
        "`../shared/data/autoj/pairwise_dev.jsonl`, both orders, the default judge "
        f"(`{model}`) with its registry settings but no relevance join, each item fitted to a "
        f"{N_CTX}-token "
        "context (the same input cut in every mode), on this machine "
        f"({os.cpu_count()} cores). Agreement: the judge's leaning against the human label "
        "(ties count; no verdict withheld).",
        "",
        "| mode | threads | pairs/s | s/pair | x bound | x faster than (a) | "
        "x faster than (b) | peak RSS MB | agreement % | same leaning as (b) | uncertain | "
        "rows cut |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for count in threads:
        if ("bound", count) not in cells:
            continue
        bound = cells[("bound", count)]
        a = cells.get(("a", count))
        b = cells.get(("b", count))
        for mode in sorted(modes):
            cell = cells.get((mode, count))
            if cell is None:
                lines.append(f"| ({mode}) {MODES[mode]} | {count} | not run |{' |' * 9}")
                continue
            per_pair = cell["seconds"] / cell["pairs"]
            label = MODES[mode] + (
                f" (first {cell['pairs']} pairs)" if cell["pairs"] != pairs else ""
            )
            lines.append(
                f"| ({mode}) {label} | {count} | {cell['pairs_per_s']:.3f} | "
                f"{per_pair:.2f} | {per_pair / (bound['seconds'] / pairs):.2f} | "
                f"{_ratio(a, cell)} | {_ratio(b, cell)} | {cell['peak_rss_mb']:.0f} | "
                f"{cell['agreement']:.1f} | {same_leaning(cell, b)} | "
                f"{cell.get('uncertain', '')} | {cell['truncated']} |"
            )
        lines.append(
            f"| prompt-evaluation bound | {count} | {pairs / bound['seconds']:.3f} | "
            f"{bound['seconds'] / pairs:.2f} | 1.00 |{' |' * 7}"
        )
    heuristic = length_heuristic(pairs)
    lines += ["", f"The longer answer wins on the same {pairs} pairs: {heuristic:.1f} %."]
    lines += [
        "",
        f"Prompt-evaluation bound, measured in the same run (reading speed: the items of the "
        f"first {SPEED_PROMPTS} prompts, after one untimed warm-up read):",
        "",
    ]
    for count in threads:
        if ("bound", count) not in cells:
            continue
        bound = cells[("bound", count)]
        lines.append(
            f"- {count} thread(s): {bound['item_tokens']} item tokens (both orders, after the "
            f"shared instructions) at {bound['tokens_per_s']:.0f} tokens/s = "
            f"{bound['seconds']:.1f} s"
        )
    return "\n".join(lines) + "\n"


def length_heuristic(pairs: int) -> float:
    """Agreement of "the longer answer wins" with the labels of the first `pairs` pairs."""
    from app.io.reader import read_rows
    from training.evaluation.meta_metrics import longer_answer

    rows = [row.item for row in islice(read_rows(DEV), pairs)]
    right = sum(
        longer_answer((len(i.answers[0]), len(i.answers[1]))) == i.label.winner for i in rows
    )
    return 100 * right / len(rows)


def same_leaning(cell: dict, reference: dict | None) -> str:
    """On how many pairs `cell` leans the same way as `reference` (both saved judgments)."""
    if reference is None:
        return ""
    ours, theirs = _leanings(Path(cell["judgments"])), _leanings(Path(reference["judgments"]))
    common = [key for key in ours if key in theirs]
    if not common:
        return ""
    same = sum(ours[key] == theirs[key] for key in common)
    return f"{same}/{len(common)}"


def _leanings(path: Path) -> dict[str, str | None]:
    """Each saved judgment's leaning (its verdict when it is not uncertain), by row id."""
    from app.io.judgments import read_judgments

    if not path.is_file():
        return {}
    return {j.id: j.leaning or j.winner for j in read_judgments(path)}


def _ratio(reference: dict | None, cell: dict) -> str:
    """How many times faster per pair `cell` is than `reference`."""
    if reference is None:
        return ""
    return f"{cell['pairs_per_s'] / reference['pairs_per_s']:.2f}"


if __name__ == "__main__":
    sys.exit(main())
