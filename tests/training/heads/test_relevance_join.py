"""Joining the judge's margin with request relevance: the fitting set and the head."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.records import JudgeItem, Label
from training.heads.relevance_join import (
    fit_head,
    labelled_items,
    margins,
    verdicts_of,
    write_items,
)


def test_the_head_has_no_position_preference_and_weighs_both_parts():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    winners = ["A" if 2 * a + b > 0 else "B" for a, b in x]
    head, scale = fit_head(x, winners)
    weights = head.coef_[0] / scale
    assert weights[0] > weights[1] > 0
    scores = x @ weights
    assert verdicts_of(scores) == ["B" if v == "A" else "A" for v in verdicts_of(-scores)]


def test_the_fitting_set_is_written_in_our_layout_and_read_back(tmp_path: Path):
    items = [
        JudgeItem(id="p1", question="Name a prime.", answers=("7", "8"), label=Label(winner="A")),
        JudgeItem(
            id="p1-counter",
            question="Name a prime.",
            answers=("A long answer about squares.", "7"),
            label=Label(winner="B"),
            metadata={"counterexample": True},
        ),
    ]
    path = tmp_path / "fit.jsonl"
    write_items(items, path)
    read = labelled_items(path)
    assert [(i.answers, i.label.winner) for i in read.values()] == [
        (("7", "8"), "A"),
        (("A long answer about squares.", "7"), "B"),
    ]


def test_margins_are_read_from_saved_judgments_of_one_file(tmp_path: Path):
    rows = [
        {
            "line": 1,
            "status": "ok",
            "verdict_probs": {"A": 0.6, "B": 0.3, "tie": 0.1},
            "metadata": {"eval_file": "fit.jsonl"},
        },
        {"line": 2, "status": "error", "metadata": {"eval_file": "fit.jsonl"}},
        {
            "line": 1,
            "status": "ok",
            "verdict_probs": {"A": 0.1, "B": 0.9},
            "metadata": {"eval_file": "other.json"},
        },
    ]
    path = tmp_path / "judgments.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert margins(path, "fit.jsonl") == {1: 0.6 - 0.3}
