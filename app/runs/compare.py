"""Two runs over the same inputs, side by side: where they agree, which rows flipped,
how the scores moved by criterion and by scenario group, and both leaderboards.

Rows are matched by their id. A row counts in the comparison when both runs judged
it ok. The decision compared is the one each protocol reports:

- pairwise: the winner (A, B, tie or uncertain); a flip is any change;
- multi: the ranking; a flip is another answer ranked first (a reshuffle below the
  top counts as a disagreement, not a flip);
- single: the overall grade; the runs agree when the grades are at most
  `SINGLE_AGREE_POINTS` apart, and a larger gap is a flip.

Score deltas are run B minus run A, answer by answer, over the common rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from app.catalog.scenarios import Catalog, load_catalog
from app.records import JudgeItem, Judgment, Protocol, Status
from app.reports.dashboard import group_of
from app.reports.leaderboard import ModelStanding, leaderboard
from app.runs.store import RunInfo, StoredRow

SINGLE_AGREE_POINTS = 1.0


@dataclass(frozen=True)
class Flip:
    """A row whose decision changed between the runs, with both judges' words."""

    id: str
    question: str | None
    decision_a: str
    decision_b: str
    feedback_a: str | None
    feedback_b: str | None


@dataclass(frozen=True)
class RunComparison:
    run_a: RunInfo
    run_b: RunInfo
    common: int  # rows judged ok by both runs
    only_a: int  # ids run A judged (any status) that run B did not judge ok, or at all
    only_b: int
    agreement: float | None  # % of the common rows with the same decision
    flips: list[Flip] = field(default_factory=list)
    # mean score change (B - A) per criterion key, and of the overall grade per scenario group
    criterion_deltas: dict[str, float] = field(default_factory=dict)
    group_deltas: dict[str, float] = field(default_factory=dict)
    overall_delta: float | None = None
    leaderboard_a: list[ModelStanding] = field(default_factory=list)
    leaderboard_b: list[ModelStanding] = field(default_factory=list)

    @property
    def same_inputs(self) -> bool:
        """Whether both runs read the same input file bytes."""
        return bool(self.run_a.input_hash) and self.run_a.input_hash == self.run_b.input_hash


def compare_runs(
    run_a: RunInfo,
    rows_a: Sequence[StoredRow],
    run_b: RunInfo,
    rows_b: Sequence[StoredRow],
    catalog: Catalog | None = None,
) -> RunComparison:
    """Compare two stored runs (see the module docstring for what counts)."""
    catalog = catalog or load_catalog()
    ok_a = {r.judgment.id: r for r in rows_a if r.judgment.status is Status.OK}
    ok_b = {r.judgment.id: r for r in rows_b if r.judgment.status is Status.OK}
    common = [key for key in ok_a if key in ok_b]
    agree, flips = 0, []
    criterion: dict[str, list[float]] = {}
    groups: dict[str, list[float]] = {}
    overall: list[float] = []
    for key in common:
        a, b = ok_a[key], ok_b[key]
        same, flipped = _agreement(a.judgment, b.judgment)
        agree += same
        if flipped:
            flips.append(_flip(a, b))
        item = a.item or b.item
        for delta_key, delta in _criterion_deltas(a.judgment, b.judgment):
            criterion.setdefault(delta_key, []).append(delta)
        for delta in _overall_deltas(a.judgment, b.judgment):
            overall.append(delta)
            groups.setdefault(group_of(a.judgment, item, catalog), []).append(delta)
    return RunComparison(
        run_a=run_a,
        run_b=run_b,
        common=len(common),
        only_a=len({r.judgment.id for r in rows_a} - set(common)),
        only_b=len({r.judgment.id for r in rows_b} - set(common)),
        agreement=round(100 * agree / len(common), 1) if common else None,
        flips=flips,
        criterion_deltas={k: _mean(v) for k, v in sorted(criterion.items())},
        group_deltas={k: _mean(v) for k, v in sorted(groups.items())},
        overall_delta=_mean(overall) if overall else None,
        leaderboard_a=_standings(rows_a),
        leaderboard_b=_standings(rows_b),
    )


def decision_text(judgment: Judgment) -> str:
    """The decision a comparison looks at, as shown to people."""
    if judgment.protocol is Protocol.PAIRWISE:
        return str(judgment.winner)
    if judgment.protocol is Protocol.MULTI:
        return " > ".join(str(n) for n in judgment.ranking or ())
    grade = judgment.answers[0].overall if judgment.answers else None
    return "-" if grade is None else f"{grade:g}"


def _agreement(a: Judgment, b: Judgment) -> tuple[bool, bool]:
    """(same decision, flipped) for one common row."""
    if a.protocol is Protocol.PAIRWISE:
        same = a.winner == b.winner
        return same, not same
    if a.protocol is Protocol.MULTI:
        first = (a.ranking or (None,))[0] == (b.ranking or (None,))[0]
        return a.ranking == b.ranking, not first
    grade_a = a.answers[0].overall if a.answers else None
    grade_b = b.answers[0].overall if b.answers else None
    if grade_a is None or grade_b is None:
        return grade_a == grade_b, False
    close = abs(grade_b - grade_a) <= SINGLE_AGREE_POINTS
    return close, not close


def _flip(a: StoredRow, b: StoredRow) -> Flip:
    item = a.item or b.item
    return Flip(
        id=a.judgment.id,
        question=item.question if item is not None else None,
        decision_a=decision_text(a.judgment),
        decision_b=decision_text(b.judgment),
        feedback_a=a.judgment.feedback,
        feedback_b=b.judgment.feedback,
    )


def _criterion_deltas(a: Judgment, b: Judgment) -> list[tuple[str, float]]:
    deltas = []
    for scores_a, scores_b in zip(a.answers, b.answers):
        for key, value in scores_a.criteria.items():
            other = scores_b.criteria.get(key)
            if value is not None and other is not None:
                deltas.append((key, other - value))
    return deltas


def _overall_deltas(a: Judgment, b: Judgment) -> list[float]:
    return [
        y.overall - x.overall
        for x, y in zip(a.answers, b.answers)
        if x.overall is not None and y.overall is not None
    ]


def _standings(rows: Sequence[StoredRow]) -> list[ModelStanding]:
    """The run's leaderboard, where its items name the models that wrote the answers."""
    items: list[JudgeItem | None] = [r.item for r in rows]
    if not any(item is not None and item.answer_models for item in items):
        return []
    return leaderboard(items, [r.judgment for r in rows])


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 3)
