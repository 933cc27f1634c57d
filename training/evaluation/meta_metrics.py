"""Meta-evaluation metrics: how well a judge agrees with human or teacher labels.

Pure functions over small records, no model. Percentages are 0-100; a value
that cannot be computed (no rows, no swap data, constant scores) is None.

Pairwise (labels A / B / tie; definitions of JudgeLM and Auto-J):

- agreement, single order: the verdict of the original order equals the label;
- agreement, both orders: BOTH order verdicts equal the label (the number the
  Auto-J paper reports); without swap data the combined verdict is used;
- agreement, combined: the judge's final verdict equals the label;
- swap consistency: both order verdicts are the same;
- bias toward the first (second) position: the first (second) slot won in both
  orders, i.e. order verdicts (A, B) or (B, A) once mapped back to the original
  labels; delta bias = |first - second|. All three are % of all rows;
- verbosity bias: among rows whose label does not pick the longer answer (it
  picks the shorter one, or a tie), how often the judge picks the longer one;
- the "longer answer wins" heuristic on the same rows (longer by characters,
  equal length gives A, never a tie), so a judge that learned length shows.

A row whose judgment is not ok (unparsed, error) counts as wrong for every
agreement number and is reported in the status counts.

Single grading (a label score per row): Pearson, Spearman and Kendall between
label and judge overall, and the mean absolute error once both are mapped onto
0-1 by their scales. Rows without a label score or a judge score are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import stats
from sklearn.metrics import precision_recall_fscore_support

from app.catalog.scenarios import Catalog
from app.records import Status, Winner
from models.foundation.errors import UnknownNameError

CLASSES: tuple[Winner, ...] = ("A", "B", "tie")
CONFIDENCE_BUCKETS = 5  # equal-count buckets of rows, least confident first
ECE_BINS = 10  # equal-width bins of confidence over 0-1 for the expected calibration error
OTHER_GROUP = "other"
JUDGE_SCALE = (1.0, 10.0)  # the overall of the library criteria


@dataclass(frozen=True)
class PairRow:
    """One labelled pair and what the judge said about it."""

    label: Winner
    verdict: Winner | None = None  # combined verdict; None when the judgment is not ok
    # verdicts of the original and the swapped order, both in the original answer labels
    orders: tuple[Winner | None, Winner | None] | None = None
    lengths: tuple[int, int] = (0, 0)  # characters of answer A and answer B
    status: Status = Status.OK
    group: str = OTHER_GROUP
    confidence: float | None = None  # the judge's probability of its verdict (leaning)
    calibrated: float | None = None  # its calibrated confidence, where the judge has a map
    # mean full-vocabulary entropy where it decided (app.deciding.judgment_builder.decision_entropy)
    entropy: float | None = None


@dataclass(frozen=True)
class ScoreRow:
    """One labelled single answer and the judge's overall score for it."""

    label: float | None
    judge: float | None = None  # None when the judgment is not ok
    label_scale: tuple[float, float] = JUDGE_SCALE
    judge_scale: tuple[float, float] = JUDGE_SCALE
    length: int = 0  # characters of the answer (for the length heuristic)
    status: Status = Status.OK
    group: str = OTHER_GROUP


# --------------------------------------------------------------------------- helpers


def percent(count: int, total: int) -> float | None:
    """100 * count / total, or None when there is nothing to count."""
    return 100.0 * count / total if total else None


def longer_answer(lengths: tuple[int, int]) -> Winner:
    """The 'longer answer wins' heuristic (by characters); equal lengths are a tie.

    With ties on equal length it scores what ../shared/data/README.md states:
    53.4 on autoj/pairwise_dev, 56.0 on LLMBar natural, 11.9 on adversarial neighbor.
    """
    if lengths[0] == lengths[1]:
        return "tie"
    return "A" if lengths[0] > lengths[1] else "B"


def status_counts(rows: Iterable[PairRow | ScoreRow]) -> dict[str, int]:
    """How many rows have each judgment status (ok, unparsed, error)."""
    counts = {status.value: 0 for status in Status}
    for row in rows:
        counts[row.status.value] += 1
    return counts


def scenario_group(scenario: str | None, catalog: Catalog) -> str:
    """The catalog group of a scenario name or alias; unknown or missing gives 'other'."""
    if not scenario:
        return OTHER_GROUP
    try:
        return catalog.get_scenario(scenario).group
    except UnknownNameError:
        return OTHER_GROUP


def _ok(row: PairRow) -> bool:
    return row.status is Status.OK and row.verdict is not None


def _order(row: PairRow, index: int) -> Winner | None:
    """The verdict of one order; the combined verdict when there is no swap data."""
    if not _ok(row):
        return None
    if row.orders is None:
        return row.verdict
    return row.orders[index]


# --------------------------------------------------------------------------- pairwise


def agreement(rows: Sequence[PairRow]) -> dict[str, float | None]:
    """Agreement with the label in %: single order, both orders, combined verdict."""
    single = sum(_order(r, 0) == r.label for r in rows)
    both = sum(_order(r, 0) == r.label and _order(r, 1) == r.label for r in rows)
    combined = sum(_ok(r) and r.verdict == r.label for r in rows)
    return {
        "agreement_single": percent(single, len(rows)),
        "agreement_both": percent(both, len(rows)),
        "agreement_combined": percent(combined, len(rows)),
    }


def macro_prf(rows: Sequence[PairRow]) -> dict[str, float | None]:
    """Macro precision / recall / F1 (in %) of the combined verdict over A, B and tie.

    The classes averaged are those among A, B and tie that occur as a label or
    a verdict (scikit-learn's convention), so a data set without ties is not
    scored on a tie class nobody used. A row that is not ok predicts no class.
    """
    truth = [r.label for r in rows]
    predicted = [r.verdict if _ok(r) else "none" for r in rows]
    classes = [c for c in CLASSES if c in truth or c in predicted]
    if not rows or not classes:
        return {"macro_precision": None, "macro_recall": None, "macro_f1": None}
    precision, recall, f1, _ = precision_recall_fscore_support(
        truth, predicted, labels=classes, average="macro", zero_division=0
    )
    return {
        "macro_precision": 100.0 * float(precision),
        "macro_recall": 100.0 * float(recall),
        "macro_f1": 100.0 * float(f1),
    }


def position_bias(rows: Sequence[PairRow]) -> dict[str, float | None]:
    """Swap consistency and position bias in % of all rows (None without swap data).

    A row that is not ok, or has no swap data, counts as neither consistent nor biased.
    """
    swapped = [r.orders for r in rows if _ok(r) and r.orders is not None]
    if not swapped:
        return {"consistency": None, "bias_first": None, "bias_second": None, "delta_bias": None}
    consistent = sum(one is not None and one == two for one, two in swapped)
    first = sum((one, two) == ("A", "B") for one, two in swapped)
    second = sum((one, two) == ("B", "A") for one, two in swapped)
    bias_first = percent(first, len(rows))
    bias_second = percent(second, len(rows))
    return {
        "consistency": percent(consistent, len(rows)),
        "bias_first": bias_first,
        "bias_second": bias_second,
        "delta_bias": abs(bias_first - bias_second),
    }


def verbosity_bias(rows: Sequence[PairRow]) -> dict[str, float | int | None]:
    """% of ok rows whose label does not pick the longer answer where the judge does.

    Rows with answers of equal length have no longer answer and are left out.
    """
    eligible = [
        r
        for r in rows
        if _ok(r) and r.lengths[0] != r.lengths[1] and r.label != longer_answer(r.lengths)
    ]
    picked = sum(r.verdict == longer_answer(r.lengths) for r in eligible)
    return {"verbosity_bias": percent(picked, len(eligible)), "verbosity_n": len(eligible)}


def verdict_distribution(rows: Sequence[PairRow]) -> dict[str, float | None]:
    """% of rows with each combined verdict; 'none' is a row that is not ok."""
    verdicts = [r.verdict if _ok(r) else "none" for r in rows]
    return {name: percent(verdicts.count(name), len(rows)) for name in (*CLASSES, "none")}


def label_distribution(rows: Sequence[PairRow]) -> dict[str, float | None]:
    """% of rows with each label."""
    labels = [r.label for r in rows]
    return {name: percent(labels.count(name), len(rows)) for name in CLASSES}


def confidence_buckets(rows: Sequence[PairRow]) -> list[dict[str, Any]]:
    """Agreement (combined verdict) per bucket of equally many rows, least confident first.

    Only ok rows with a confidence count; each bucket gives its confidence range, its
    mean confidence and how often the verdict matched the label (%). A judge whose
    confidence means something is right more often in the later buckets.
    """
    scored = sorted((r for r in rows if _ok(r) and r.confidence is not None), key=_confidence)
    buckets = []
    for number in range(CONFIDENCE_BUCKETS):
        start = number * len(scored) // CONFIDENCE_BUCKETS
        end = (number + 1) * len(scored) // CONFIDENCE_BUCKETS
        members = scored[start:end]
        if not members:
            continue
        confidences = [_confidence(r) for r in members]
        buckets.append(
            {
                "bucket": number + 1,
                "n": len(members),
                "low": round(confidences[0], 4),
                "high": round(confidences[-1], 4),
                "mean_confidence": round(sum(confidences) / len(members), 4),
                "agreement": percent(sum(r.verdict == r.label for r in members), len(members)),
            }
        )
    return buckets


def expected_calibration_error(
    rows: Sequence[PairRow], *, calibrated: bool = False
) -> float | None:
    """ECE in % of the ok rows with a confidence (None when there are none); `calibrated`:
    of the calibrated confidence instead."""
    scored = [
        (c, r.verdict == r.label)
        for r in rows
        if _ok(r) and (c := r.calibrated if calibrated else r.confidence) is not None
    ]
    if not scored:
        return None
    return calibration_error([c for c, _ in scored], [right for _, right in scored])


def calibration_error(confidence: Sequence[float], right: Sequence[bool | float]) -> float:
    """ECE in %: the row-weighted mean |share right - mean confidence| over ten equal-width
    confidence bins."""
    bins: dict[int, list[tuple[float, float]]] = {}
    for value, hit in zip(confidence, right, strict=True):
        bins.setdefault(min(int(value * ECE_BINS), ECE_BINS - 1), []).append((value, float(hit)))
    gap = 0.0
    for members in bins.values():
        share = sum(hit for _, hit in members) / len(members)
        mean = sum(value for value, _ in members) / len(members)
        gap += len(members) * abs(share - mean)
    return round(100 * gap / len(confidence), 1)


def cascade_curve(
    rows: Sequence[PairRow],
    second: Sequence[Winner | None],
    shares: Sequence[float] = (0.0, 0.1, 0.3, 0.5, 1.0),
) -> list[dict[str, Any]]:
    """Agreement when the least confident share of rows goes to a second judge.

    `second[i]` is the second judge's verdict on `rows[i]` (None: it failed). Rows the
    first judge could not judge, or judged without a confidence, go to the second judge
    first. Each point gives the share asked for, the rows sent and the agreement (%).
    """
    if len(second) != len(rows):
        raise ValueError(f"{len(second)} second-judge verdicts for {len(rows)} rows")
    order = sorted(
        range(len(rows)),
        key=lambda i: (
            _confidence(rows[i]) if _ok(rows[i]) and rows[i].confidence is not None else -1.0
        ),
    )
    points = []
    for share in shares:
        sent = set(order[: round(share * len(rows))])
        right = sum(
            (second[i] if i in sent else rows[i].verdict if _ok(rows[i]) else None) == rows[i].label
            for i in range(len(rows))
        )
        points.append({"share": share, "sent": len(sent), "agreement": percent(right, len(rows))})
    return points


def indicator_halves(
    rows: Sequence[PairRow], base_entropy: Sequence[float | None] | None = None
) -> list[dict[str, Any]]:
    """Agreement (%) on the surer half of the ok rows by each confidence indicator.

    The study behind the cascade (../shared/seeds/) compares indicators this way: an
    indicator worth trusting picks a half that is right more often than all rows are.
    Indicators: the judge's probability of its verdict (higher is surer), its decision
    entropy (lower is surer) and, with `base_entropy[i]` (the same entropy under the
    judge's base model, row by row), the entropy minus the base's (lower is surer).
    Only the indicators every ok row carries are listed; "all rows" is the reference.
    """
    ok = [i for i, r in enumerate(rows) if _ok(r)]
    if not ok:
        return []
    right = {i: rows[i].verdict == rows[i].label for i in ok}
    table = [
        {"indicator": "all rows", "n": len(ok), "agreement": percent(sum(right.values()), len(ok))}
    ]
    surer: dict[str, dict[int, float]] = {
        "confidence": {i: rows[i].confidence for i in ok if rows[i].confidence is not None},
        "entropy": {i: -rows[i].entropy for i in ok if rows[i].entropy is not None},
    }
    if base_entropy is not None:
        if len(base_entropy) != len(rows):
            raise ValueError(f"{len(base_entropy)} base entropies for {len(rows)} rows")
        surer["entropy minus base"] = {
            i: base_entropy[i] - rows[i].entropy  # type: ignore[operator]
            for i in ok
            if rows[i].entropy is not None and base_entropy[i] is not None
        }
    for name, values in surer.items():
        if len(values) < len(ok) or len(ok) < 2:
            continue
        half = sorted(ok, key=lambda i: -values[i])[: len(ok) // 2]
        table.append(
            {
                "indicator": name,
                "n": len(half),
                "agreement": percent(sum(right[i] for i in half), len(half)),
            }
        )
    return table


def _confidence(row: PairRow) -> float:
    return row.confidence if row.confidence is not None else 0.0


def heuristic_rows(rows: Sequence[PairRow]) -> list[PairRow]:
    """The same rows judged by 'the longer answer wins' (always ok, no swap data)."""
    return [
        PairRow(label=r.label, verdict=longer_answer(r.lengths), lengths=r.lengths, group=r.group)
        for r in rows
    ]


def heuristic_metrics(rows: Sequence[PairRow]) -> dict[str, Any]:
    """Agreement and macro F1 of the longer-answer heuristic on the same rows."""
    same = heuristic_rows(rows)
    return {"n": len(rows), **agreement(same), **macro_prf(same)}


def pairwise_metrics(rows: Sequence[PairRow]) -> dict[str, Any]:
    """Every pairwise number for these rows, with the heuristic's under 'heuristic'."""
    return {
        "n": len(rows),
        "status": status_counts(rows),
        **agreement(rows),
        **macro_prf(rows),
        **position_bias(rows),
        **verbosity_bias(rows),
        "verdicts": verdict_distribution(rows),
        "labels": label_distribution(rows),
        "confidence_buckets": confidence_buckets(rows),
        "ece": expected_calibration_error(rows),
        "ece_calibrated": expected_calibration_error(rows, calibrated=True),
        "indicators": indicator_halves(rows),
        "heuristic": heuristic_metrics(rows),
    }


def group_table(rows: Sequence[PairRow]) -> dict[str, dict[str, Any]]:
    """Per scenario group (sorted, 'other' last): n, agreement both orders, heuristic agreement."""
    groups: dict[str, list[PairRow]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    table = {}
    for name in sorted(groups, key=lambda g: (g == OTHER_GROUP, g)):
        members = groups[name]
        table[name] = {
            "n": len(members),
            "agreement_both": agreement(members)["agreement_both"],
            "heuristic": agreement(heuristic_rows(members))["agreement_both"],
        }
    return table


# --------------------------------------------------------------------------- single grading


def to_unit(value: float, scale: tuple[float, float]) -> float:
    """Map a score on scale (low, high) onto 0-1."""
    low, high = scale
    return (value - low) / (high - low)


def correlations(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float | int | None]:
    """Pearson, Spearman and Kendall (tau-b) between two score lists, with n.

    None when there are fewer than two pairs or either list is constant.
    """
    n = len(xs)
    result: dict[str, float | int | None] = {"n": n, "pearson": None, "spearman": None}
    result["kendall"] = None
    if n < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return result
    result["pearson"] = _finite(stats.pearsonr(xs, ys).statistic)
    result["spearman"] = _finite(stats.spearmanr(xs, ys).statistic)
    result["kendall"] = _finite(stats.kendalltau(xs, ys).statistic)
    return result


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def single_metrics(rows: Sequence[ScoreRow]) -> dict[str, Any]:
    """Correlations and 0-1 MAE of the judge's overall vs the label score.

    The heuristic is the answer length, correlated with the label on the rows
    that have a label score (a judge that only tracks length scores alike).
    """
    labelled = [r for r in rows if r.label is not None]
    scored = [r for r in labelled if r.status is Status.OK and r.judge is not None]
    labels = [r.label for r in scored]
    judged = [r.judge for r in scored]
    errors = [
        abs(to_unit(r.label, r.label_scale) - to_unit(r.judge, r.judge_scale)) for r in scored
    ]
    return {
        **correlations(labels, judged),
        "mae": sum(errors) / len(errors) if errors else None,
        "skipped": len(rows) - len(scored),
        "status": status_counts(rows),
        "heuristic": correlations([r.label for r in labelled], [r.length for r in labelled]),
    }
