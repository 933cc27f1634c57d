"""`make bench`, part 3: head judges against a reference head, in one run.

    python -m bench.heads [--pairs 10] [--models pj-qwen15-reward,pj-qwen15-head]
                          [--reference pj-qwen15-likelihood] [--fresh]

Each judge decides the same first PAIRS pairs of Auto-J dev through its head (bench/cell.py
mode f, one llama.cpp thread, each in its own process so its peak memory is its own), the
reference first; then the default judge's verdict without its own answer (mode n), against
which its own answer as its record asks for it (mode f) and one written for every pair (mode
s) are costed, and (where its record weighs a reward model) without the reward model's read
either (mode v: the verdict alone), against which the reward model and both are costed; its
whole result page (mode g: the verdict, the criterion scores and, where a pair has a
reference, the reference metrics) on the same pairs, and the default's verdict
alone and whole page on PAIRS pairs with a reference answer (Prometheus vicuna_eval), on
their scenario's criteria and on their own rubric. The table
gives seconds per pair and peak RSS, each as a ratio to the verdict alone of the same judge
on the same rows measured in the same run (by default the registry's default judge), and
the model file's size with its LoRA adapter, if any (a head judge's memory goal is the file
plus what it reads with). Cells are saved in bench/runs/heads/ as they finish.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench.cell import REPO
from bench.run import _load_cell

RUNS = REPO / "bench" / "runs" / "heads"
RESULTS = REPO / "bench" / "heads.md"
WHOLE_PAGE = "whole page"
WITH_REFERENCE = "(pairs with a reference)"
APART = "criteria read apart"
WITH_RUBRIC = "(pairs with a reference and their rubric)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.heads", description=__doc__)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--models", default=None, help="judges beside the reference")
    parser.add_argument("--reference", default=None, help="default: the registry's default")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from models.registry import load_registry

    registry = load_registry()
    reference = args.reference or registry.default
    names = [reference, *(args.models.split(",") if args.models else [])]
    cells = {name: run(name, args.pairs, args.fresh) for name in dict.fromkeys(names)}
    bases = dict.fromkeys(cells, reference)
    default = registry.default
    # the judge's own answer: none at all (n), as its record asks for it (f: where a program
    # computes it), and written for every pair (s); each against none
    bare = f"{default} without its own answer"
    cells[bare] = run(default, args.pairs, args.fresh, "n")
    bases[bare] = default
    if default in cells:
        cells[f"{default} with its own answer as its record asks, against none"] = cells[default]
        bases[f"{default} with its own answer as its record asks, against none"] = bare
    own = f"{default} with its own answer written for every pair, against none"
    cells[own] = run(default, args.pairs, args.fresh, "s")
    bases[own] = bare
    if registry.get(default).judging.reward_model:  # the reward model's read (v: none)
        verdict = f"{default} without its own answer or the reward model: the verdict alone"
        cells[verdict] = run(default, args.pairs, args.fresh, "v")
        bases[verdict] = verdict
        rewarded = f"{default} without its own answer, with the reward model, against neither"
        cells[rewarded], bases[rewarded] = cells[bare], verdict
        whole = f"{default} as shipped (its own answer and the reward model), against neither"
        cells[whole], bases[whole] = cells[default], verdict
    if registry.get(default).judging.criterion_scores:  # the whole page, beside the verdict
        alone = f"{default} {WITH_REFERENCE}"
        cells[alone] = run(default, args.pairs, args.fresh, "f", "reference")
        bases[alone] = alone
        for mode, how in (("g", ""), ("i", f", {APART}")):
            page = f"{default} {WHOLE_PAGE}{how}"
            cells[page] = run(default, args.pairs, args.fresh, mode)
            bases[page] = default
            if mode != "i":  # criteria read apart cost the same with a reference (a rubric)
                cells[f"{page} {WITH_REFERENCE}"] = run(
                    default, args.pairs, args.fresh, mode, "reference"
                )
                bases[f"{page} {WITH_REFERENCE}"] = alone
        rubric = f"{default} {WHOLE_PAGE} {WITH_RUBRIC}"  # its level texts: read apart
        cells[rubric] = run(default, args.pairs, args.fresh, "g", "reference-rubric")
        bases[rubric] = alone
    table = render(cells, bases, reference, args.pairs, registry)
    args.results.write_text(table, encoding="utf-8")
    print(table)
    return 0


def run(name: str, pairs: int, fresh: bool, mode: str = "f", rows: str = "autoj") -> dict:
    import os
    import subprocess

    suffix = ("" if mode == "f" else "-" + mode) + ("" if rows == "autoj" else "-" + rows)
    out = RUNS / f"{name}-n{pairs}{suffix}.json"
    if out.is_file() and not fresh:
        return _load_cell(out)
    print(f"{name}: {pairs} pairs ...", file=sys.stderr, flush=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [sys.executable, "-m", "bench.cell", mode, "1", str(pairs), str(out), name, rows],
        check=True,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return _load_cell(out)


def render(cells: dict, bases: dict, reference: str, pairs: int, registry) -> str:  # type: ignore[no-untyped-def]
    lines = [
        "# Benchmark: head judges against the default",
        "",
        f"`python -m bench.heads` on {datetime.now(UTC).date()}: the first {pairs} pairs of "
        "Auto-J dev, each judge through its head (no reply), one llama.cpp thread, each in its "
        f"own process; ratios against `{reference}`'s verdict alone measured in the same run. "
        f"A row named '{WHOLE_PAGE}' is the same judge's whole result page: its verdict, its "
        "criterion scores (as the judge reads them: its criterion head where it has one, "
        "app/deciding/criterion_head.py; "
        f"'{APART}': each criterion of "
        "each answer a read of its own, app/deciding/criterion_reads.py) "
        f"and, where a pair has a reference, the reference metrics. Rows '{WITH_REFERENCE}' "
        f"judge {pairs} pairs of answers to one request with its reference answer (Prometheus "
        "vicuna_eval) on their scenario's criteria, as a user's pair with a reference is, the "
        "whole page's ratio against the verdict alone on those pairs; the row "
        f"'{WITH_RUBRIC}' judges them on their own rubric, whose level texts are read apart. "
        "Rows 'against none' give the cost of the judge's own answer (app/deciding/own_answer.py) "
        "beside the same judge without one.",
        "",
        "| judge | s/pair | x verdict alone | peak RSS MB | x verdict alone RSS | model file MB "
        "| RSS above the file MB | agreement % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, cell in cells.items():
        seconds = cell["seconds"] / cell["pairs"]
        base = cells[bases[name]]
        entry = registry.get(name.split(" ")[0])
        files = [p for p in (entry.path(), entry.lora_path()) if p is not None and p.is_file()]
        size = sum(p.stat().st_size for p in files) / 2**20
        lines.append(
            f"| {name} | {seconds:.2f} | {seconds / (base['seconds'] / base['pairs']):.2f} | "
            f"{cell['peak_rss_mb']:.0f} | {cell['peak_rss_mb'] / base['peak_rss_mb']:.2f} | "
            f"{size:.0f} | {cell['peak_rss_mb'] - size:.0f} | {cell['agreement']:.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
