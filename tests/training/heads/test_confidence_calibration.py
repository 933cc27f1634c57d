"""Fitting an LLM judge's calibration from its saved judgments, and the pairs it is
fitted on (training.heads.confidence_calibration judge, training.datasets.calibration_pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.deciding.calibration import load_calibration
from app.io.writer import write_jsonl
from app.records import Judgment, Protocol, Status
from tests.support.needs import shared_file
from training.datasets import calibration_pairs
from training.datasets.labelled_files import load_labelled
from training.heads import confidence_calibration


def labelled_and_judged(tmp_path: Path, n: int = 200) -> tuple[Path, Path]:
    """`n` labelled pairs and a judge whose entropy says when it is wrong: right on
    rows below entropy 1.5, wrong above it, nearly always."""
    rng = np.random.default_rng(0)
    labelled, judged = tmp_path / "pairs.jsonl", []
    with open(labelled, "w", encoding="utf-8") as stream:
        for line in range(1, n + 1):
            label = "A" if line % 2 else "B"
            stream.write(json.dumps({"id": f"r{line}", "question": "Q?", "answers": ["x", "y"],
                                     "label": {"winner": label}}) + "\n")  # fmt: skip
            entropy = float(rng.uniform(0.1, 3.0))
            right = (entropy < 1.5) != (rng.uniform() < 0.05)
            verdict = label if right else {"A": "B", "B": "A"}[label]
            judged.append(
                Judgment(
                    id=f"r{line}",
                    protocol=Protocol.PAIRWISE,
                    status=Status.OK,
                    winner=verdict,
                    leaning=verdict,
                    confidence=0.6,
                    entropy=round(entropy, 4),
                    model="judge",
                    line=line,
                )
            )
    judged[3] = judged[3].model_copy(update={"status": Status.UNPARSED, "winner": None})
    write_jsonl(judged, tmp_path / "judgments.jsonl")
    return labelled, tmp_path / "judgments.jsonl"


def fit(labelled: Path, judgments: Path, out: Path, indicator: str) -> int:
    return confidence_calibration.main(
        ["judge", "--labelled", str(labelled), "--judgments", str(judgments),
         "--indicator", indicator, "--out", str(out)]
    )  # fmt: skip


def test_an_entropy_calibration_falls_and_is_right_where_the_judge_is(tmp_path: Path) -> None:
    labelled, judgments = labelled_and_judged(tmp_path)
    out = tmp_path / "calibration.json"
    assert fit(labelled, judgments, out, "entropy") == 0
    calibration = load_calibration(out)
    assert calibration.indicator == "entropy"
    assert calibration(0.5) > 0.9 and calibration(2.5) < 0.1
    assert calibration.fitted_on["pairs"] == 199  # the unparsed row is left out
    assert calibration.fitted_on["out_of_fold_ece"] < 10


def test_a_confidence_calibration_reports_its_error_before(tmp_path: Path) -> None:
    labelled, judgments = labelled_and_judged(tmp_path)
    out = tmp_path / "calibration.json"
    fit(labelled, judgments, out, "confidence")
    calibration = load_calibration(out)
    # one confidence for every row: the map is flat at the share right (about half)
    assert calibration.indicator == "confidence"
    assert 0.4 < calibration(0.6) < 0.6 and calibration.fitted_on["ece_before"] > 0


def test_too_few_judgments_with_the_indicator_say_so(tmp_path: Path) -> None:
    labelled, judgments = labelled_and_judged(tmp_path, n=10)
    with pytest.raises(SystemExit, match="needs at least 20"):
        fit(labelled, judgments, tmp_path / "c.json", "entropy")


def test_calibration_pairs_are_labelled_pocketjudge_rows(tmp_path: Path) -> None:
    shared_file("alpacaeval/pairs.jsonl.gz")
    out = tmp_path / "pairs.jsonl"
    assert calibration_pairs.main(["--out", str(out), "--pairs", "40", "--seed", "3"]) == 0
    file = load_labelled(out, out.name)
    assert len(file.rows) == 40 and file.kind == "pairwise"
    winners = [row.item.label.winner for row in file.rows]
    assert set(winners) == {"A", "B"}  # the reference is put in either slot
    again = tmp_path / "again.jsonl"
    calibration_pairs.main(["--out", str(again), "--pairs", "40", "--seed", "3"])
    assert again.read_bytes() == out.read_bytes()


def test_a_judge_at_chance_gets_a_flat_map_not_0_or_100_percent_at_its_ends() -> None:
    """Fitted row by row, the ends of the map rest on a few rows and say 0 % or 100 %; in
    bins of 30 they stay near the share right."""
    rng = np.random.default_rng(1)
    values = rng.uniform(0.2, 0.9, 300)
    right = (rng.uniform(size=300) < 0.5).astype(float)
    xs, ys = confidence_calibration.fit_indicator(values, right, "confidence")
    assert len(xs) == 10 and ys == sorted(ys)
    assert min(ys) > 0.3 and max(ys) < 0.7
    row_by_row = confidence_calibration.isotonic_points(values, right)[1]
    assert min(row_by_row) == 0.0 or max(row_by_row) == 1.0  # what the bins prevent
