"""Render a meta-evaluation report (the dict `training.evaluation.evaluate` builds) as markdown.

Every file shows the judge next to the 'longer answer wins' heuristic on the
same rows (answer length for single-score files), then one table per scenario
group, then how many rows were ok, unparsed or failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEURISTIC = "longer answer wins"
DASH = "–"

PAIR_LINES = (
    ("agreement, both orders", "agreement_both"),
    ("agreement, single order", "agreement_single"),
    ("agreement, combined verdict", "agreement_combined"),
    ("macro precision", "macro_precision"),
    ("macro recall", "macro_recall"),
    ("macro F1", "macro_f1"),
)
BIAS_LINES = (
    ("swap consistency", "consistency"),
    ("bias toward first position", "bias_first"),
    ("bias toward second position", "bias_second"),
    ("delta bias", "delta_bias"),
)
SINGLE_LINES = (("Pearson", "pearson"), ("Spearman", "spearman"), ("Kendall tau", "kendall"))


def render_markdown(report: Mapping[str, Any]) -> str:
    lines = [f"# Meta-evaluation of {report.get('model') or 'the judge'}", ""]
    lines += _run_lines(report)
    for name, entry in report["files"].items():
        lines += ["", f"## {name}", ""]
        lines += _pairwise(entry) if entry["kind"] == "pairwise" else _single(entry)
    if report.get("groups"):
        lines += ["", "## Per scenario group", ""]
        lines += ["Agreement, both orders, over the pairwise rows of all files.", ""]
        lines += _groups(report["groups"])
    lines += ["", "## Status", ""]
    lines += _status(report["files"])
    return "\n".join(lines) + "\n"


def _run_lines(report: Mapping[str, Any]) -> list[str]:
    facts = [f"template `{report.get('template') or DASH}`"]
    if report.get("pair_combine"):
        facts.append(f"pair combine `{report['pair_combine']}`")
    if report.get("skip"):
        count = f"{report['limit']} rows" if report.get("limit") else "the rows"
        facts.append(f"{count} after the first {report['skip']} of each file")
    elif report.get("limit"):
        facts.append(f"first {report['limit']} rows per file")
    if report.get("rescored"):
        facts.append(f"re-scored from `{report.get('judgments')}`")
    return [
        ", ".join(facts) + ".",
        "",
        "Agreement in %. 'Both orders' counts a pair only when the verdicts of both answer "
        "orders give the label (the Auto-J / JudgeLM number). A row whose judgment is not ok "
        "(unparsed or error) counts as wrong; the status table at the end counts them.",
    ]


def _pairwise(entry: Mapping[str, Any]) -> list[str]:
    judge, heuristic = entry["judge"], entry["heuristic"]
    lines = [
        f"Pairwise, {judge['n']} labelled rows. Judge {_num(judge['agreement_both'])} vs "
        f"{HEURISTIC} {_num(heuristic['agreement_both'])} (agreement, both orders).",
        "",
        f"| metric | judge | {HEURISTIC} |",
        "|---|---:|---:|",
    ]
    for title, key in PAIR_LINES:
        lines.append(f"| {title} | {_num(judge[key])} | {_num(heuristic[key])} |")
    for title, key in BIAS_LINES:
        lines.append(f"| {title} | {_num(judge[key])} | {DASH} |")
    verbosity = f"verbosity bias (n={judge['verbosity_n']})"
    lines.append(f"| {verbosity} | {_num(judge['verbosity_bias'])} | {DASH} |")
    lines.append(f"| verdicts A / B / tie / not ok | {_shares(judge['verdicts'])} | {DASH} |")
    lines.append(f"| labels A / B / tie | {_shares(judge['labels'])} | {DASH} |")
    lines += _confidence(judge) + _indicators(entry) + _cascade(entry)
    if entry.get("signals"):
        from training.evaluation.signal_parts import render

        lines += render(entry["signals"])
    if entry.get("criteria"):
        from training.evaluation import criteria_agreement

        lines += criteria_agreement.render(entry["criteria"])
    return lines


def _indicators(entry: Mapping[str, Any]) -> list[str]:
    """Agreement on the surer half of the rows by each confidence indicator."""
    table = entry.get("indicators") or entry["judge"].get("indicators") or []
    if len(table) < 2:
        return []
    base = entry.get("base_model")
    lines = [
        "",
        "Confidence indicators: agreement on the surer half of the ok rows by each"
        + (f" (base model `{base}`)." if base else "."),
        "",
        "| indicator | rows | agreement |",
        "|---|---:|---:|",
    ]
    for row in table:
        lines.append(f"| {row['indicator']} | {row['n']} | {_num(row['agreement'])} |")
    return lines


def _cascade(entry: Mapping[str, Any]) -> list[str]:
    points = entry.get("cascade")
    if not points:
        return []
    lines = [
        "",
        f"Cascade: the least confident rows go to `{entry.get('cascade_model')}` "
        "(its saved verdicts); agreement of the combined verdicts.",
        "",
        "| share sent | rows sent | agreement |",
        "|---:|---:|---:|",
    ]
    for point in points:
        lines.append(f"| {point['share']:.0%} | {point['sent']} | {_num(point['agreement'])} |")
    return lines


def _confidence(judge: Mapping[str, Any]) -> list[str]:
    """Agreement by confidence bucket (least confident fifth first) and the ECE."""
    buckets = judge.get("confidence_buckets") or []
    if not buckets:
        return ["", "No verdict carried a confidence: no calibration table."]
    lines = [
        "",
        f"Confidence: agreement by fifth of the rows, least confident first; expected "
        f"calibration error {_num(judge.get('ece'))} % (10 bins)"
        + (
            f", {_num(judge['ece_calibrated'])} % for the calibrated confidence."
            if judge.get("ece_calibrated") is not None
            else "."
        ),
        "",
        "| bucket | rows | confidence range | mean confidence | agreement |",
        "|---:|---:|---|---:|---:|",
    ]
    for b in buckets:
        lines.append(
            f"| {b['bucket']} | {b['n']} | {b['low']:.3f}-{b['high']:.3f} | "
            f"{b['mean_confidence']:.3f} | {_num(b['agreement'])} |"
        )
    return lines


def _single(entry: Mapping[str, Any]) -> list[str]:
    judge, heuristic = entry["judge"], entry["judge"]["heuristic"]
    lines = [
        f"Single grading, {judge['n']} rows with both scores ({judge['skipped']} skipped). "
        f"Judge Spearman {_num(judge['spearman'], 3)} vs answer length "
        f"{_num(heuristic['spearman'], 3)} (the longer, the better).",
        "",
        "| metric | judge | answer length |",
        "|---|---:|---:|",
    ]
    for title, key in SINGLE_LINES:
        lines.append(f"| {title} | {_num(judge[key], 3)} | {_num(heuristic[key], 3)} |")
    lines.append(f"| mean absolute error (0-1) | {_num(judge['mae'], 3)} | {DASH} |")
    lines.append(f"| n | {judge['n']} | {heuristic['n']} |")
    return lines


def _groups(groups: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [f"| group | n | judge | {HEURISTIC} |", "|---|---:|---:|---:|"]
    for name, row in groups.items():
        judge, heuristic = _num(row["agreement_both"]), _num(row["heuristic"])
        lines.append(f"| {name} | {row['n']} | {judge} | {heuristic} |")
    return lines


def _status(files: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [
        "| file | labelled | ok | unparsed | error | missing | unreadable | unlabelled |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, entry in files.items():
        status = entry["judge"]["status"]
        lines.append(
            f"| {name} | {entry['labelled']} | {status['ok']} | {status['unparsed']} | "
            f"{status['error']} | {entry['missing']} | {entry['unreadable']} | "
            f"{entry['unlabelled']} |"
        )
    lines += [
        "",
        "unparsed and error rows count as wrong in the agreement numbers; missing rows "
        "(no saved judgment), unreadable rows and rows without a label are left out.",
    ]
    return lines


def _num(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{value:.{digits}f}"


def _shares(shares: Mapping[str, float | None]) -> str:
    return " / ".join(_num(value) for value in shares.values())
