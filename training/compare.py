"""One table of every judge variant's evaluation, beside the length heuristic.

Reads <run>/eval/<variant>/report.json (written by training/evaluate.py) and
renders the headline numbers: per pairwise file the both-orders agreement (the
Auto-J / JudgeLM number), the combined verdict (position-calibrated when the
run used it) and swap consistency; per single-score file Pearson and Spearman.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEURISTIC = "longer answer wins"


def load_reports(eval_dir: Path) -> dict[str, dict[str, Any]]:
    reports = {}
    for path in sorted(eval_dir.glob("*/report.json")):
        reports[path.parent.name] = json.loads(path.read_text(encoding="utf-8"))
    return reports


def _num(value: Any, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def comparison_table(reports: dict[str, dict[str, Any]]) -> str:
    """Markdown: one row per variant, then the heuristic, columns per file."""
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
    heuristic: list[str] = [HEURISTIC, ""]
    for variant, report in reports.items():
        row = [f"{variant} ({report.get('pair_combine')}, tie ≤ {report.get('tie_margin')})"]
        row.append(str(report.get("limit") or "all"))
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
                ]
                heuristic_cells.append("–")
            else:
                row += [_num(judge.get("pearson"), 3), _num(judge.get("spearman"), 3)]
                h = judge.get("heuristic", {})
                heuristic_cells += [_num(h.get("pearson"), 3), _num(h.get("spearman"), 3)]
        lines.append("| " + " | ".join(row) + " |")
        heuristic = [HEURISTIC, row[1], *heuristic_cells]
    lines.append("| " + " | ".join(heuristic) + " |")
    return "\n".join(lines) + "\n"


def write_comparison(eval_dir: Path) -> Path:
    out = eval_dir / "summary.md"
    text = (
        "# Judge variants side by side\n\n"
        "Agreement in %. 'both': both answer orders give the label; 'combined': the one "
        "verdict the engine reports (position-calibrated when so configured); the heuristic "
        "row is 'the longer answer wins' on the same rows (its row count is that of the last "
        "variant). Single-score files: correlation with the teacher's 1-10 rating.\n\n"
        + comparison_table(load_reports(eval_dir))
    )
    out.write_text(text, encoding="utf-8")
    return out
