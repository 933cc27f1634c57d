"""Judged rows turned into the metrics' rows and a file's report entry."""

from __future__ import annotations

from typing import Any

from app.catalog.scenarios import Catalog
from app.records import JudgeItem, Judgment, Status
from training.datasets.labelled_files import LabelledFile
from training.evaluation.meta_metrics import (
    JUDGE_SCALE,
    PairRow,
    ScoreRow,
    group_table,
    pairwise_metrics,
    scenario_group,
    single_metrics,
)


def pair_row(item: JudgeItem, judgment: Judgment, catalog: Catalog) -> PairRow:
    """The metrics' view of one judged pair (verdicts only from an ok judgment)."""
    ok = judgment.status is Status.OK
    # The leaning: the judge's own choice, also where it is reported uncertain (the length
    # heuristic it is compared with always decides too).
    return PairRow(
        label=item.label.winner,
        verdict=(judgment.leaning or judgment.winner) if ok else None,
        orders=judgment.order_winners if ok else None,
        lengths=(len(item.answers[0]), len(item.answers[1])),
        status=judgment.status,
        group=scenario_group(item.scenario, catalog),
        confidence=judgment.confidence if ok else None,
        calibrated=judgment.calibrated_confidence if ok else None,
        entropy=judgment.entropy if ok else None,
    )


def score_row(item: JudgeItem, judgment: Judgment, catalog: Catalog) -> ScoreRow:
    """Label scales start at 1 (1..scale_max; 0..1 for a scale_max of 1); no scale_max: 1-10."""
    ok = judgment.status is Status.OK and bool(judgment.answers)
    top = item.label.scale_max or JUDGE_SCALE[1]
    return ScoreRow(
        label=item.label.score,
        judge=judgment.answers[0].overall if ok else None,
        label_scale=(1.0 if top > 1 else 0.0, top),
        length=len(item.answers[0]),
        status=judgment.status,
        group=scenario_group(item.scenario, catalog),
    )


def score_file(file: LabelledFile, catalog: Catalog) -> tuple[dict[str, Any], list[PairRow]]:
    """The report entry of one file, and its pair rows (for the group table)."""
    pairs = zip((row.item for row in file.rows), file.judgments)
    counts = {
        "kind": file.kind,
        "path": str(file.path),
        "rows_read": file.read,
        "labelled": len(file.rows) + file.missing,
        "unreadable": file.unreadable,
        "unlabelled": file.unlabelled,
        "missing": file.missing,
    }
    if file.kind == "single":
        return {**counts, "judge": single_metrics([score_row(i, j, catalog) for i, j in pairs])}, []
    rows = [pair_row(i, j, catalog) for i, j in pairs]
    judge = pairwise_metrics(rows)
    heuristic = judge.pop("heuristic")
    return {**counts, "judge": judge, "heuristic": heuristic, "groups": group_table(rows)}, rows
