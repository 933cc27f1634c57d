"""`make bench` (second part): the scale-out engines side by side on this machine.

    python -m bench.scale_out [--pairs 16] [--model pj-smollm2-135m] [--results bench/scale_out.md]

The same pairs (the first of Auto-J dev) are judged through the real CLI, each cell
in its own process, one thread per judge:

- local: the baseline, one process;
- Ray, 1 and 2 workers (`--engine ray`, a local Ray instance on 127.0.0.1);
- an OpenAI-compatible server (llama-cpp-python's, started here on 127.0.0.1) with
  1 and 4 requests in flight (`--backend openai --parallel N`).

Each cell's wall time includes its start (Ray's start and the workers' model loads; the
client's start); the Ray rows also give Ray's fixed cost, measured as a 1-pair run. Every
cell must give the local cell's verdicts. Ratios are against the local cell of the same
run. The table goes to bench/scale_out.md and to the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from bench.cell import DEV, REPO

RESULTS = REPO / "bench" / "scale_out.md"
SERVER_START_S = 120


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--model", default="pj-smollm2-135m")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from models.registry import load_registry

    entry = load_registry().get(args.model)
    model_path = entry.path()
    if model_path is None or not model_path.exists():
        print(f"error: {args.model} is not built (make models)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pj-scale-") as tmp:
        folder = Path(tmp)
        source = folder / "pairs.jsonl"
        lines = DEV.read_text(encoding="utf-8").splitlines(keepends=True)[: args.pairs]
        source.write_text("".join(lines), encoding="utf-8")
        one = folder / "one.jsonl"
        one.write_text(lines[0], encoding="utf-8")
        base = ["--model", args.model, "--threads", "1"]
        cells = [
            ("local", "1 process", source, base),
            ("Ray", "1 worker", source, [*base, "--engine", "ray", "--workers", "1"]),
            ("Ray", "2 workers", source, [*base, "--engine", "ray", "--workers", "2"]),
            ("Ray, 1 pair (fixed cost)", "2 workers", one,
             [*base, "--engine", "ray", "--workers", "2"]),
        ]  # fmt: skip
        results = [_cell(folder, name, shape, data, extra) for name, shape, data, extra in cells]
        with _server(model_path, folder) as url:
            template = entry.judging.template
            remote = ["--backend", "openai", "--model", args.model, "--base-url", url,
                      "--schema-form", "json_object", "--template", template]  # fmt: skip
            for parallel in (1, 4):
                extra = [*remote, "--parallel", str(parallel)]
                results.append(_cell(folder, "server", f"{parallel} in flight", source, extra))
    table = _render(results, args.pairs, args.model)
    args.results.write_text(table, encoding="utf-8")
    print(table)
    return 0


def _cell(folder: Path, name: str, shape: str, source: Path, extra: list[str]) -> dict:
    out = folder / f"{name}-{shape}.jsonl".replace(" ", "_").replace(",", "")
    command = [sys.executable, "-m", "app", "judge", str(source), "--out", str(out), "--quiet",
               "--no-history", "--restart", *extra]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "k"}
    print(f"{name}, {shape}...", file=sys.stderr)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}, {shape} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return {
        "name": name,
        "shape": shape,
        "rows": len(rows),
        "wall_s": wall,
        "leanings": [r.get("leaning") or r.get("winner") for r in rows],
    }


class _server:
    """llama-cpp-python's OpenAI-compatible server with the model, on 127.0.0.1."""

    def __init__(self, model: Path, folder: Path) -> None:
        self.model, self.folder = model, folder

    def __enter__(self) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
                   "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
                   "--n_threads", "1", "--n_threads_batch", "1"]  # fmt: skip
        log = (self.folder / "server.log").open("wb")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2):
                    return url
            except OSError:
                time.sleep(0.2)
        self.process.kill()
        raise SystemExit("the llama-cpp-python server did not start (see its log)")

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _render(results: list[dict], pairs: int, model: str) -> str:
    """Ray cells against the local cell; server cells against the server with 1 in flight
    (a server has no token probabilities, so its verdicts are its own, not the local ones)."""
    day = datetime.now(UTC).date().isoformat()
    local = results[0]
    server_one = next(c for c in results if c["name"] == "server")
    lines = [
        "# Benchmark: scale-out engines on this machine",
        "",
        f"`python -m bench.scale_out` (part of `make bench`) on {day}: the first {pairs} pairs "
        f"of Auto-J dev, both orders, `{model}`, one thread per judge, on this machine "
        f"({os.cpu_count()} cores). Wall time of the whole command, start included. Each cell "
        "is compared with its baseline in the same run: the local run for Ray, the server with "
        "one request in flight for the server.",
        "",
        "| engine | shape | rows | wall s | pairs/s | baseline | x baseline | same verdicts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell in results:
        ref = server_one if cell["name"] == "server" else local
        ref_name = "server, 1 in flight" if ref is server_one else "local"
        same = "-"
        if cell["rows"] == ref["rows"]:
            agree = sum(a == b for a, b in zip(cell["leanings"], ref["leanings"]))
            same = f"{agree}/{cell['rows']}"
        ratio = ref["wall_s"] / cell["wall_s"] if cell["rows"] == ref["rows"] else None
        lines.append(
            f"| {cell['name']} | {cell['shape']} | {cell['rows']} | {cell['wall_s']:.1f} | "
            f"{cell['rows'] / cell['wall_s']:.3f} | {ref_name} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | {same} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
