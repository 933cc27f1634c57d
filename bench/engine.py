"""`make bench`, part 4: the engine's build and the engine worker, each against its
baseline in the same run.

    python -m bench.engine [--pairs 3] [--rounds 2] [--results bench/engine.md]

1. **Portable against native**: the default judge's model reads the first PAIRS pairs of
   Auto-J dev as the default judge does (each answer after its request, `read_answers`) at
   one thread, with the portable build (models/llama_cpp_flags/cpu.txt: AVX2), with its
   AVX-512 variant where this CPU runs it (what `make setup` gives such a machine:
   models/engine_library.py), and with a native build of the same version
   (bench/engine_builds.py: -march=native with AMX masked, compiled once into
   build/engines/). Rounds alternate the builds; each build's best round counts. The
   ratio is prompt tokens/s over the native build's.
2. **The engine worker's cost**: the default judge (verdicts only) on the same pairs,
   opened in this process and in an engine worker (the app's and the CLI's way): seconds
   a pair, load time, one call's round trip, and peak RSS of the process and its worker.

Every measurement runs in a process of its own (`--cell`), so its memory is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

from bench.cell import DEV, N_CTX, REPO
from bench.engine_builds import BUILDS, ensure_built
from models.engine_library import LIB_ENV, choose, portable_lib

RESULTS = REPO / "bench" / "engine.md"
BUILD_LABELS = {
    "portable": "portable (`models/llama_cpp_flags/cpu.txt`)",
    "portable, avx512 variant": "portable, AVX-512 variant (`avx512.txt`; chosen on this CPU)",
    "native": "native (-march=native, AMX masked)",
}
ROUND_TRIPS = 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engine", description=__doc__)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--cell", nargs=2, metavar=("KIND", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cell:
        return run_cell(args.cell[0], args.pairs, Path(args.cell[1]))
    if not DEV.is_file():
        parser.error(f"{DEV} is missing: the benchmark reads ../shared/data beside the repo")
    libraries = {"portable": portable_lib()}
    loaded = choose(environ={})  # the variant this machine loads, by the rule every process uses
    if loaded.lib is not None:
        libraries[f"portable, {loaded.name} variant"] = loaded.lib
    libraries["native"] = ensure_built(BUILDS["native"])
    builds: dict[str, list[dict]] = {name: [] for name in libraries}
    for _ in range(args.rounds):
        for name, lib in libraries.items():
            builds[name].append(cell("reads", args.pairs, {LIB_ENV: str(lib)}))
    worker = {kind: cell(kind, args.pairs) for kind in ("in-process", "worker")}
    text = render(builds, worker, args.pairs)
    args.results.write_text(text, encoding="utf-8")
    print(text)
    return 0


def cell(kind: str, pairs: int, env: dict[str, str] | None = None) -> dict:
    """One measurement in a fresh process (its own memory, its own library)."""
    out = REPO / "build" / f"bench-engine-{kind}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "bench.engine", "--pairs", str(pairs), "--cell", kind, str(out)],
        check=True,
        cwd=REPO,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
    )
    return json.loads(out.read_text(encoding="utf-8"))


def dev_pairs(pairs: int) -> list:
    from app.io.reader import read_rows

    return [row.item for row in islice(read_rows(DEV), pairs) if row.item is not None]


def run_cell(kind: str, pairs: int, out: Path) -> int:
    result = reads_cell(pairs) if kind == "reads" else judge_cell(kind == "worker", pairs)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result.setdefault("worker_peak_rss_mb", 0.0)
    out.write_text(json.dumps(result), encoding="utf-8")
    return 0


def reads_cell(pairs: int) -> dict:
    """Prompt tokens/s of the default judge's reads with the library this process loaded."""
    from models.backends.base import BackendOptions
    from models.backends.engine_info import engine_build_info
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from models.registry import load_registry

    entry = load_registry().get()
    backend = LlamaCppBackend(str(entry.path()), BackendOptions(n_ctx=N_CTX, n_threads=1))
    items = dev_pairs(pairs)
    tokens = 0
    for item in items:  # what read_answers reads: each answer after its request and alone
        for answer in item.answers:
            prompt, reply = backend.reply_tokens(item.question, answer)
            tokens += len(prompt) + 2 * len(reply)
    backend.read_answers(items[0].question, list(items[0].answers))  # warm-up: pages in memory
    began = time.perf_counter()
    for item in items:
        backend.read_answers(item.question, list(item.answers))
    seconds = time.perf_counter() - began
    build = engine_build_info()
    backend.close()
    return {
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        "cpu": build.cpu_features,
        "forbidden": build.forbidden,
    }


def judge_cell(isolated: bool, pairs: int) -> dict:
    """The default judge's verdicts on `pairs` pairs, in this process or in a worker."""
    from app.api import load_judge
    from models.backends.base import Message

    began = time.perf_counter()
    judge = load_judge(threads=1, n_ctx=N_CTX, isolated=isolated, criterion_scores=False)
    load_s = time.perf_counter() - began
    message = [Message("user", "How are you?")]
    began = time.perf_counter()
    for _ in range(ROUND_TRIPS):
        judge.backend.count_tokens(message)
    round_trip_ms = (time.perf_counter() - began) / ROUND_TRIPS * 1000
    items = dev_pairs(pairs)
    began = time.perf_counter()
    verdicts = [judge.judge(item).winner for item in items]
    seconds = time.perf_counter() - began
    workers = [getattr(judge.backend, "pid", None), encoder_worker_pid()]
    worker_peak_mb = sum(peak_rss_mb(pid) for pid in workers if pid is not None)
    judge.close()
    return {
        "load_s": load_s,
        "round_trip_ms": round_trip_ms,
        "s_per_pair": seconds / len(items),
        "verdicts": [str(v) for v in verdicts],
        "worker_peak_rss_mb": worker_peak_mb,
    }


def encoder_worker_pid() -> int | None:
    """The MiniLM encoder's engine worker, when embeddings run in one (models.sentence_encoder)."""
    from models import sentence_encoder

    engine = sentence_encoder._WORKER.get("engine")
    return engine.pid if engine is not None else None


def peak_rss_mb(pid: int) -> float:
    """A running process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def render(builds: dict[str, list[dict]], worker: dict[str, dict], pairs: int) -> str:
    best = {name: max(rounds, key=lambda r: r["tokens_per_s"]) for name, rounds in builds.items()}
    native = best["native"]["tokens_per_s"]
    home, away = worker["in-process"], worker["worker"]
    home_rss = home["peak_rss_mb"]
    away_rss = away["peak_rss_mb"] + away["worker_peak_rss_mb"]
    same = home["verdicts"] == away["verdicts"]
    lines = [
        "# Benchmark: the engine's build and the engine worker",
        "",
        f"`make bench` (`bench/engine.py`) on {datetime.now(UTC):%Y-%m-%d}, this machine "
        f"({os.cpu_count()} cores), the default judge's model, the first {pairs} pairs of Auto-J "
        "dev, one llama.cpp thread, each measurement in a process of its own.",
        "",
        "## Portable build against a native one",
        "",
        "Prompt tokens/s of the default judge's reads (each answer after its request and "
        f"alone), best of {len(builds['portable'])} alternating rounds per build.",
        "",
        "| build | CPU code | prompt tokens/s | x native |",
        "|---|---|---|---|",
        *(
            f"| {BUILD_LABELS.get(name, name)} | {', '.join(top['cpu'])} | "
            f"{top['tokens_per_s']:.1f} | {top['tokens_per_s'] / native:.2f} |"
            for name, top in best.items()
        ),
        "",
        "Every round: "
        + "; ".join(
            f"{name} " + ", ".join(f"{r['tokens_per_s']:.1f}" for r in rounds)
            for name, rounds in builds.items()
        )
        + " tokens/s.",
        "",
        "## The engine worker's cost",
        "",
        "The default judge's verdicts (no criterion scores) opened in the calling process, "
        "and in an engine worker as the app and the CLI open it, with the build this machine "
        "chooses. RSS: the peak of the process, plus the peaks of its workers (the judge's "
        "and the MiniLM encoder's) where there are some.",
        "",
        "| where the model runs | load s | a small call (count_tokens) ms | s/pair | "
        "x in-process | peak RSS MB | x in-process |",
        "|---|---|---|---|---|---|---|",
        f"| in the process | {home['load_s']:.1f} | {home['round_trip_ms']:.2f} | "
        f"{home['s_per_pair']:.2f} | 1.00 | {home_rss:.0f} | 1.00 |",
        f"| engine worker | {away['load_s']:.1f} | {away['round_trip_ms']:.2f} | "
        f"{away['s_per_pair']:.2f} | {away['s_per_pair'] / home['s_per_pair']:.2f} | "
        f"{away_rss:.0f} ({away['peak_rss_mb']:.0f} + {away['worker_peak_rss_mb']:.0f}) | "
        f"{away_rss / home_rss:.2f} |",
        "",
        f"Same verdicts both ways: {'yes' if same else 'no'} ({', '.join(home['verdicts'])}).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
