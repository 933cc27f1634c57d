"""How often a head judge's criterion scores agree with its verdict, from saved judgments.

A head's pairwise judgment with criteria keeps the decision their weighted means give on
their own (`criteria_verdict`, app/deciding/criterion_reads.py). On the pairs the head decided (A
or B, not uncertain): the share where the criteria favour the same answer, and how often
the verdict is right when they agree and when they do not (what a user who is told of a
disagreement should make of it). The criteria's decision alone is scored against the
labels too, beside "the longer answer wins".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.records import Judgment
from training.evaluation.meta_metrics import longer_answer


def criteria_agreement(rows: Sequence[Any], judgments: Sequence[Judgment]) -> dict[str, Any] | None:
    """The figures above; None when no judgment carries a criteria verdict."""
    by_line = {j.line: j for j in judgments if j.criteria_verdict is not None}
    decided, agree, right_when_agree, right_when_not = 0, 0, [], []
    criteria_right, longer_right, labelled = 0, 0, 0
    for row in rows:
        judgment = by_line.get(row.line)
        if judgment is None or row.item is None:
            continue
        label = row.item.label.winner if row.item.label is not None else None
        if label is not None:
            labelled += 1
            criteria_right += judgment.criteria_verdict == label
            lengths = (len(row.item.answers[0]), len(row.item.answers[1]))
            longer_right += longer_answer(lengths) == label
        if judgment.winner not in ("A", "B"):
            continue
        decided += 1
        same = judgment.criteria_verdict == judgment.winner
        agree += same
        if label is not None:
            (right_when_agree if same else right_when_not).append(judgment.winner == label)
    if not by_line:
        return None
    return {
        "decided": decided,
        "agree": _share(agree, decided),
        "right_when_agree": _mean(right_when_agree),
        "agree_n": len(right_when_agree),
        "right_when_not": _mean(right_when_not),
        "not_n": len(right_when_not),
        "labelled": labelled,
        "criteria_right": _share(criteria_right, labelled),
        "longer_right": _share(longer_right, labelled),
        "by_head": sum(bool(j.criteria_by_head) for j in by_line.values()),
        "with_criteria": len(by_line),
    }


def render(entry: Mapping[str, Any]) -> list[str]:
    """The report's lines for one file's criteria/verdict agreement."""
    by_head, total = entry.get("by_head", 0), entry.get("with_criteria", 0)
    source = f" ({by_head} given by the criterion head, the rest read apart)" if by_head else ""
    if by_head and by_head == total:
        source = " (all given by the criterion head)"
    return [
        "",
        f"Criterion scores{source} against the verdict, on the {entry['decided']} pairs the head "
        f"decided: they favour the same answer on {_num(entry['agree'])} %. The verdict is "
        f"right on {_num(entry['right_when_agree'])} % of the {entry['agree_n']} pairs where "
        f"they agree and {_num(entry['right_when_not'])} % of the {entry['not_n']} where they "
        f"do not. The criteria's own decision alone: {_num(entry['criteria_right'])} % of "
        f"{entry['labelled']} labelled rows (the longer answer wins: "
        f"{_num(entry['longer_right'])} %).",
    ]


def _share(count: int, total: int) -> float | None:
    return round(100 * count / total, 1) if total else None


def _mean(values: Sequence[bool]) -> float | None:
    return _share(sum(values), len(values))


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
