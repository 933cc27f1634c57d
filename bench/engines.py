"""`make bench` (engines): a batch of the default judge with one engine and with one per core.

    python -m bench.engines [--rows 16] [--models NAME,...] [--results bench/engines.md]

For each judge (the default judge, and the 135M reply judge whose replies are decoded), the
same rows (the first of Auto-J dev) are judged through the real CLI (`python -m app judge`),
each cell in its own process: `--workers 1` (one engine, with llama.cpp's own threads: one
to decode, every core to read a prompt), then `--workers 0` (the default: one engine per
usable core, each with one thread). Wall time
includes the start and every engine's model load. Each engine worker's peak resident
memory is sampled from /proc while the cell runs. The ratio is against the one-engine cell
of the same run, and both cells must give the same verdicts; the table goes to the results
file and to the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from app.batches.engine_pool import usable_cores
from bench.cell import DEV, REPO
from tests.support.processes import engine_workers

RESULTS = REPO / "bench" / "engines.md"
SAMPLE_S = 0.2


def peak_rss(pid: int) -> int:
    """A process's peak resident memory in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def cell(command: list[str], label: str) -> tuple[float, dict[int, int]]:
    """Run `command`; its wall time and each engine worker's peak memory (by pid)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    peaks: dict[int, int] = {}
    while process.poll() is None:
        for pid in engine_workers(process.pid, label):
            peaks[pid] = max(peaks.get(pid, 0), peak_rss(pid))
        time.sleep(SAMPLE_S)
    wall = time.perf_counter() - started
    _, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{stderr}")
    return wall, peaks


def verdicts(path: Path) -> list[str | None]:
    return [json.loads(line).get("winner") for line in path.read_text().splitlines()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.engines", description=__doc__)
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument(
        "--models",
        help="registry names, comma-separated (default: the default judge and pj-smollm2-135m)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from models.registry import load_registry

    registry = load_registry()
    names = args.models.split(",") if args.models else [registry.default, "pj-smollm2-135m"]
    measured = {}
    with tempfile.TemporaryDirectory(prefix="pj-engines-") as tmp:
        folder = Path(tmp)
        source = folder / "rows.jsonl"
        lines = DEV.read_text(encoding="utf-8").splitlines(keepends=True)[: args.rows]
        source.write_text("".join(lines), encoding="utf-8")
        for name in names:
            path = registry.get(name).path()
            if path is None or not path.exists():
                print(f"error: {name} is not built (make models)", file=sys.stderr)
                return 2
            measured[name] = [
                (workers, *measure(name, path.name, source, folder, workers)) for workers in (1, 0)
            ]
    text = render(args.rows, measured)
    args.results.write_text(text, encoding="utf-8")
    print(text)
    return 0


def measure(
    model: str, label: str, source: Path, folder: Path, workers: int
) -> tuple[float, dict[int, int], list[str | None]]:
    """One cell: its wall time, each engine's peak memory and the verdicts."""
    out = folder / f"{model}-{workers}.jsonl"
    command = [sys.executable, "-m", "app", "judge", str(source), "--out", str(out),
               "--model", model, "--workers", str(workers), "--quiet", "--no-history"]  # fmt: skip
    wall, peaks = cell(command, label)
    return wall, peaks, verdicts(out)


Cell = tuple[int, float, dict[int, int], list]


def render(count: int, measured: dict[str, list[Cell]]) -> str:
    day = datetime.now(UTC).date().isoformat()
    cores = usable_cores()
    lines = [
        "# Benchmark: a batch with one engine and with one per core",
        "",
        f"`python -m bench.engines` (part of `make bench`) on {day}: the first {count} rows of "
        f"Auto-J dev through `python -m app judge`, on this machine ({cores} usable cores). "
        "One engine runs with llama.cpp's own threads (one to decode, every core to read a "
        "prompt); the default runs one engine per core with one thread each. Wall time of the "
        "whole command, start and model loads included; peak memory is each engine worker's "
        "resident peak. Each ratio is against the one-engine cell of the same judge in this run.",
        "",
        "| judge | engines | rows | wall s | rows/s | time / one engine | peak MiB per engine | "
        "same verdicts |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for model, cells in measured.items():
        base_wall, base_verdicts = cells[0][1], cells[0][3]
        for workers, wall, peaks, found in cells:
            label = "1 (`--workers 1`)" if workers == 1 else f"{len(peaks)} (default)"
            memory = ", ".join(f"{peak / 1024**2:.0f}" for peak in peaks.values()) or "-"
            same = sum(a == b for a, b in zip(found, base_verdicts))
            lines.append(
                f"| `{model}` | {label} | {count} | {wall:.1f} | {count / wall:.3f} | "
                f"{wall / base_wall:.2f} | {memory} | {same}/{len(base_verdicts)} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
