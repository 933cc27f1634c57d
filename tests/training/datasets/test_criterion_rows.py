"""The order criterion reads of training pairs are taken in: every scenario early."""

from __future__ import annotations

import json

from training.datasets.criterion_rows import dealt_rows, write_parts


def _rows() -> list[dict]:
    return [{"scenario": s, "id": f"{s}-{n}"} for s in ("a", "b", "c") for n in range(4)]


def test_the_first_rows_hold_one_pair_of_every_scenario():
    order = dealt_rows(_rows())
    assert [r["scenario"] for r in order[:3]] == ["a", "b", "c"]
    assert [r["scenario"] for r in order[3:6]] == ["a", "b", "c"]
    assert sorted(r["id"] for r in order) == sorted(r["id"] for r in _rows())  # each once


def test_the_order_is_shuffled_within_a_scenario_and_fixed_by_the_seed():
    first, again, other = dealt_rows(_rows()), dealt_rows(_rows()), dealt_rows(_rows(), seed=5)
    assert first == again
    assert [r["id"] for r in first] != [r["id"] for r in other]


def test_parts_deal_the_order_between_processes(tmp_path, monkeypatch):
    source = tmp_path / "autoj"
    source.mkdir()
    rows = _rows()
    (source / "pairwise_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr("training.datasets.criterion_rows.resolve_path", lambda _: source)
    paths = write_parts(tmp_path / "out", parts=2)
    parts = [[json.loads(x) for x in p.read_text().splitlines()] for p in paths]
    order = dealt_rows(rows)
    assert parts[0] == order[0::2] and parts[1] == order[1::2]
