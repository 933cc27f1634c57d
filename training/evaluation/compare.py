"""One table of every judge variant's evaluation, beside the length heuristic.

Reads <run>/eval/<variant>/report.json (written by training/evaluation/evaluate.py) and
renders the headline numbers: per pairwise file the both-orders agreement (the
Auto-J / JudgeLM number), the combined verdict (position-calibrated when the
run used it) and swap consistency; per single-score file Pearson and Spearman.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HEURISTIC = "longer answer wins"


def load_reports(eval_dir: Path, prefix: str = "") -> dict[str, dict[str, Any]]:
    reports = {}
    for path in sorted(eval_dir.glob("*/report.json")):
        reports[prefix + path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    return reports


def _num(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _rows_label(limit: Any) -> str:
    return f"first {limit}" if limit else "all"


def comparison_table(reports: dict[str, dict[str, Any]]) -> str:
    """Markdown: one row per variant, columns per file, then the heuristic.

    The heuristic gets one row per row count present (all rows, first N), so
    every judge row has the heuristic on exactly its own rows beneath it.
    """
    if not reports:
        return "No evaluation reports yet.\n"
    files: dict[str, str] = {}
    for report in reports.values():
        for name, entry in report["files"].items():
            files.setdefault(name, entry["kind"])
    header = ["judge", "rows"]
    for name, kind in files.items():
        stem = Path(name).stem
        if kind == "pairwise":
            header += [f"{stem} both", f"{stem} combined", f"{stem} consistent"]
        else:
            header += [f"{stem} Pearson", f"{stem} Spearman"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    heuristics: dict[str, list[str]] = {}
    for variant, report in reports.items():
        rows = _rows_label(report.get("limit"))
        row = [f"{variant} ({report.get('pair_combine')}, tie ≤ {report.get('tie_margin')})", rows]
        heuristic_cells = []
        for name, kind in files.items():
            entry = report["files"].get(name)
            judge = entry["judge"] if entry else {}
            if kind == "pairwise":
                row += [
                    _num(judge.get("agreement_both")),
                    _num(judge.get("agreement_combined")),
                    _num(judge.get("consistency")),
                ]
                h = entry["heuristic"] if entry else {}
                heuristic_cells += [
                    _num(h.get("agreement_both")),
                    _num(h.get("agreement_combined")),
                    "–",
                ]
            else:
                row += [_num(judge.get("pearson"), 3), _num(judge.get("spearman"), 3)]
                h = judge.get("heuristic", {})
                heuristic_cells += [_num(h.get("pearson"), 3), _num(h.get("spearman"), 3)]
        lines.append("| " + " | ".join(row) + " |")
        heuristics.setdefault(rows, [HEURISTIC, rows, *heuristic_cells])
    for heuristic in heuristics.values():
        lines.append("| " + " | ".join(heuristic) + " |")
    return "\n".join(lines) + "\n"


INTRO = (
    "Agreement in %. 'both': both answer orders give the label; 'combined': the one "
    "verdict the engine reports (position-calibrated when so configured); the heuristic "
    "rows are 'the longer answer wins' on the same rows (one row per row count). "
    "Single-score files: correlation with the teacher's 1-10 rating.\n\n"
)


def write_comparison(eval_dir: Path) -> Path:
    out = eval_dir / "summary.md"
    text = "# Judge variants side by side\n\n" + INTRO + comparison_table(load_reports(eval_dir))
    out.write_text(text, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluation.compare",
        description="Print one table of every variant of one or more training runs.",
    )
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (training/runs/<name>)")
    args = parser.parse_args(argv)
    reports: dict[str, dict[str, Any]] = {}
    for run in args.runs:
        if not (run / "eval").is_dir():
            parser.error(f"{run}: no eval/ folder; run the pipeline's eval stage first")
        reports |= load_reports(run / "eval", prefix=f"{run.name}/")
    print(INTRO + comparison_table(reports), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
