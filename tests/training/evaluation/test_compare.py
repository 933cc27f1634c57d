"""The side-by-side table: each judge row has the heuristic on its own rows."""

import json
from pathlib import Path

from training.evaluation.compare import comparison_table, main


def _report(limit: int | None, judge_both: float, heuristic_both: float) -> dict:
    return {
        "limit": limit,
        "pair_combine": "calibrated",
        "tie_margin": 0.1,
        "files": {
            "pairwise_dev.jsonl": {
                "kind": "pairwise",
                "judge": {"agreement_both": judge_both, "agreement_combined": 50.0},
                "heuristic": {"agreement_both": heuristic_both, "agreement_combined": 1.0},
            }
        },
    }


def test_one_heuristic_row_per_row_count():
    table = comparison_table(
        {"a": _report(None, 40.0, 53.4), "b": _report(50, 30.0, 48.0), "c": _report(50, 20.0, 48.0)}
    )
    heuristic_rows = [line for line in table.splitlines() if "longer answer wins" in line]
    assert heuristic_rows == [
        "| longer answer wins | all | 53.4 | 1.0 | – |",
        "| longer answer wins | first 50 | 48.0 | 1.0 | – |",
    ]
    assert "| a (calibrated, tie ≤ 0.1) | all | 40.0 | 50.0 | – |" in table


def test_the_command_spans_runs(tmp_path: Path, capsys):
    for run, limit in (("base-one", None), ("base-two", 50)):
        out = tmp_path / run / "eval" / "dare_ties"
        out.mkdir(parents=True)
        (out / "report.json").write_text(json.dumps(_report(limit, 10.0, 20.0)))
    assert main([str(tmp_path / "base-one"), str(tmp_path / "base-two")]) == 0
    printed = capsys.readouterr().out
    assert "base-one/dare_ties" in printed and "base-two/dare_ties" in printed
