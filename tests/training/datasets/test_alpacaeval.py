"""AlpacaEval preferences as labelled pairs: decisive rows, length balance, no slot habit."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from training.datasets.alpacaeval import AlpacaEvalError, length_balanced, longer_won, read_decisive


def _write(path: Path, rows: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        for row in rows:
            stream.write(json.dumps(row) + "\n")
    return path


def _row(preference: float, first: str = "ref", second: str = "other answer") -> dict:
    return {
        "instruction": "Say something.",
        "output_1": first,
        "output_2": second,
        "generator_1": "gpt4_1106_preview",
        "generator_2": "some-model",
        "preference": preference,
        "dataset": "oasst",
    }


def test_decisive_rows_only_reference_in_slot_a(tmp_path: Path) -> None:
    rows = [_row(1.0), _row(1.5), _row(1.55), _row(1.9), _row(2.0, " ")]
    path = _write(tmp_path / "p.jsonl.gz", rows)
    items = list(read_decisive(path))
    assert [i.label.winner for i in items] == ["A", "B"]
    assert [i.id for i in items] == ["alpacaeval-1", "alpacaeval-4"]
    assert items[0].answer_models == ("gpt4_1106_preview", "some-model")


def test_a_malformed_row_names_line_and_field(tmp_path: Path) -> None:
    bad = _row(1.0)
    del bad["output_2"]
    path = _write(tmp_path / "p.jsonl.gz", [_row(1.0), bad])
    with pytest.raises(AlpacaEvalError, match="line 2: missing output_2"):
        list(read_decisive(path))
    with pytest.raises(AlpacaEvalError, match="not found"):
        list(read_decisive(tmp_path / "none.jsonl.gz"))


def test_length_balanced_halves_and_both_slots(tmp_path: Path) -> None:
    rows = [_row(2.0, "short", "a much longer answer") for _ in range(40)]  # longer wins
    rows += [_row(1.0, "tiny", "a much longer answer") for _ in range(10)]  # shorter wins
    items = list(read_decisive(_write(tmp_path / "p.jsonl.gz", rows)))
    chosen = length_balanced(items, 30, seed=1)
    assert len(chosen) == 20  # only 10 shorter-wins pairs: 10 + 10
    assert sum(longer_won(i) for i in chosen) == 10
    assert {i.label.winner for i in chosen} == {"A", "B"}
    for item in chosen:  # a swap moves the label with the answer
        winner = item.answers[0 if item.label.winner == "A" else 1]
        assert winner in ("a much longer answer", "tiny")
        assert (winner == "tiny") != longer_won(item)
    assert length_balanced(items, 30, seed=1) == chosen  # the same draw every time
