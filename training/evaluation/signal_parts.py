"""What each signal of a head judge says alone, from the engine's saved judgments.

A head's pairwise judgment keeps its score's parts (`verdict_parts`: states, fit,
fluency, length, relevance) and, for a head that reads likelihoods, each raw
feature's difference between the two answers. From those, on the same rows:

- the reported verdict (its leaning, as every other figure of the report);
- each part alone, and the score without the states;
- the likelihood rules that need no fitting: PMI per token, PMI summed, cond per token;
- the longer answer wins.

Agreement in %, a tie label counting as a miss for a signal that never says tie.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.records import Judgment
from training.evaluation.meta_metrics import longer_answer

PARTS = ("states", "fit", "fluency", "likelihood", "relevance", "length")
RULES = {"PMI per token": "pmi_mean", "PMI summed": "pmi_sum", "cond per token": "cond_mean"}


def signal_agreement(rows: Sequence[Any], judgments: Sequence[Judgment]) -> dict[str, Any] | None:
    """Agreement of each signal on the rows whose judgment has parts; None without any.
    `rows` are the file's labelled InputRows, matched to judgments by line."""
    by_line = {j.line: j for j in judgments if j.verdict_parts}
    said: dict[str, list[bool]] = {}
    for row in rows:
        judgment = by_line.get(row.line)
        if judgment is None or row.item is None or row.item.label is None:
            continue
        label = row.item.label.winner
        parts = judgment.verdict_parts or {}
        votes = {"reported verdict": judgment.leaning}
        for name in PARTS:
            if parts.get(name):
                votes[f"{name} alone"] = _sign(parts[name])
        if parts.get("states") and any(parts.get(p) for p in PARTS if p != "states"):
            votes["all but the states"] = _sign(parts["score"] - parts["states"])
        for rule, feature in RULES.items():
            if f"{feature}_difference" in parts:
                votes[rule] = _sign(parts[f"{feature}_difference"])
        answers = row.item.answers
        votes["the longer answer wins"] = longer_answer((len(answers[0]), len(answers[1])))
        for name, vote in votes.items():
            said.setdefault(name, []).append(vote == label)
    if not said:
        return None
    return {
        "rows": len(said["reported verdict"]),
        "agreement": {name: round(100 * sum(h) / len(h), 1) for name, h in said.items()},
    }


def render(entry: Mapping[str, Any]) -> list[str]:
    """The report's lines for one file's signal table."""
    lines = [
        "",
        f"Each signal alone, on the {entry['rows']} rows with the head's parts (agreement %):",
        "",
        "| signal | agreement |",
        "|---|---|",
    ]
    lines += [f"| {name} | {value:.1f} |" for name, value in entry["agreement"].items()]
    return lines


def _sign(value: float) -> str:
    return "A" if value > 0 else "B" if value < 0 else "tie"
