"""Summary figures of a batch of judgments, for the dashboard page (pure, no UI).

    dash = summarize(items, judgments, catalog)
    dash.status_counts   # {"ok": 40, "unparsed": 2, "error": 1}
    dash.by_group["Code"].mean_overall

`items[i]` is the input item of `judgments[i]` (None for a row that could not
be read). `items` may be longer than `judgments` (a batch still running): the
extra items are ignored. Everything is computed over ok judgments except the
status counts, the problem rows and the row counts per group. An empty input
gives zero counts, empty lists and None for every mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import NamedTuple

from app.catalog.scenarios import Catalog, load_catalog
from app.records import JudgeItem, Judgment, Protocol, Status
from models.foundation.errors import UnknownNameError

OTHER_GROUP = "other"
VERDICTS = ("A", "B", "tie", "uncertain")


class ProblemRow(NamedTuple):
    """A row that is not ok, for a table of what to look at."""

    line: int | None
    id: str
    status: str  # "unparsed" or "error"
    error: str | None


@dataclass(frozen=True)
class GroupSummary:
    """The judgments of one scenario group."""

    count: int  # rows in the group, any status
    ok: int
    mean_overall: float | None  # over every answer of the ok rows
    verdicts: dict[str, int]  # pairwise ok rows: {"A": n, "B": n, "tie": n}


@dataclass(frozen=True)
class Dashboard:
    status_counts: dict[str, int]  # {"ok": n, "unparsed": n, "error": n}
    problem_rows: list[ProblemRow]  # in row order
    overall_scores: list[float]  # every answer's overall, ok rows
    verdicts: dict[str, int]  # pairwise ok rows: {"A": n, "B": n, "tie": n}
    by_group: dict[str, GroupSummary]  # catalog group order, "other" last
    criterion_means: dict[str, float]  # criteria in order of first appearance
    position_consistency: float | None  # share of swapped pairwise ok rows that agreed
    mean_confidence: float | None  # over ok rows that have a confidence
    total: int  # rows judged

    @property
    def ok_share(self) -> float | None:
        return self.status_counts[Status.OK.value] / self.total if self.total else None


def summarize(
    items: Sequence[JudgeItem | None],
    judgments: Sequence[Judgment],
    catalog: Catalog | None = None,
) -> Dashboard:
    """Summarize judgments; `catalog` (default: the built-in one) maps scenarios to groups.

    A judgment's group is its scenario's group in the catalog, else that of
    its item's scenario; a rubric, an unknown or a missing scenario is "other".
    """
    catalog = catalog or load_catalog()
    ok = [j for j in judgments if j.status is Status.OK]
    groups: dict[str, list[Judgment]] = {}
    for index, judgment in enumerate(judgments):
        item = items[index] if index < len(items) else None
        groups.setdefault(group_of(judgment, item, catalog), []).append(judgment)
    order = [*catalog.groups, OTHER_GROUP]
    by_group = {
        name: _group_summary(groups[name])
        for name in sorted(groups, key=lambda g: order.index(g) if g in order else len(order))
    }
    return Dashboard(
        status_counts=status_counts(judgments),
        problem_rows=[
            ProblemRow(j.line, j.id, j.status.value, j.error)
            for j in judgments
            if j.status is not Status.OK
        ],
        overall_scores=_overall_scores(ok),
        verdicts=_verdicts(ok),
        by_group=by_group,
        criterion_means=_criterion_means(ok),
        position_consistency=_position_consistency(ok),
        mean_confidence=_mean([j.confidence for j in ok if j.confidence is not None]),
        total=len(judgments),
    )


def group_of(judgment: Judgment, item: JudgeItem | None, catalog: Catalog) -> str:
    """The catalog group of the judgment's scenario (or its item's), else "other"."""
    for scenario in (judgment.scenario, item.scenario if item is not None else None):
        if scenario:
            try:
                return catalog.get_scenario(scenario).group
            except UnknownNameError:
                continue
    return OTHER_GROUP


def status_counts(judgments: Iterable[Judgment]) -> dict[str, int]:
    """How many judgments have each status (every status named, zeros included)."""
    counts = {status.value: 0 for status in Status}
    for judgment in judgments:
        counts[judgment.status.value] += 1
    return counts


def _overall_scores(ok: Iterable[Judgment]) -> list[float]:
    return [scores.overall for judgment in ok for scores in judgment.answers]


def _verdicts(ok: Iterable[Judgment]) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for judgment in ok:
        if judgment.protocol is Protocol.PAIRWISE and judgment.winner is not None:
            counts[judgment.winner] += 1
    return counts


def _group_summary(judgments: Sequence[Judgment]) -> GroupSummary:
    ok = [j for j in judgments if j.status is Status.OK]
    return GroupSummary(
        count=len(judgments),
        ok=len(ok),
        mean_overall=_mean(_overall_scores(ok)),
        verdicts=_verdicts(ok),
    )


def _criterion_means(ok: Iterable[Judgment]) -> dict[str, float]:
    values: dict[str, list[float]] = {}
    for judgment in ok:
        for scores in judgment.answers:
            for criterion, score in scores.criteria.items():
                values.setdefault(criterion, []).append(score)
    return {criterion: fmean(scores) for criterion, scores in values.items()}


def _position_consistency(ok: Iterable[Judgment]) -> float | None:
    swapped = [j for j in ok if j.protocol is Protocol.PAIRWISE and j.swapped]
    if not swapped:
        return None
    return sum(1 for j in swapped if j.consistent is True) / len(swapped)


def _mean(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None
