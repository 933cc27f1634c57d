"""The criterion head's table: the verdict's reads of each answer joined with the levels
the reads apart gave it, by the texts as the verdict's head cuts them."""

from __future__ import annotations

import json
import math

import numpy as np

from app.deciding.state_head import StateHead
from app.records import JudgeItem, Label
from models.readings import AnswerReading
from training.datasets.criterion_head_data import answer_table, judged_rows
from training.device.reading_cache import ReadingCache

HEAD = StateHead(base_file="x.gguf", reads="reply", weights=(0.0, 0.0), question_chars=5)
ITEM = JudgeItem(
    id="r1", question="What is two plus two?", answers=("Four.", "Five."), label=Label(winner="A")
)


def _reading(value: float) -> AnswerReading:
    return AnswerReading(
        cond=np.array([-1.0, -2.0]), uncond=np.array([-2.0, -3.0]), states=np.full(2, value)
    )


def _judgment(by_head: bool = False) -> dict:
    levels = [{"accuracy": 9.0, "clarity": 8.0, "depth": 5.0}, {"accuracy": 2.0, "clarity": 7.0}]
    row = {"id": "r1", "status": "ok", "winner": "A", "scenario": "default"}
    row["answers"] = [{"expected_criteria": c} for c in levels]
    row["criteria"] = ["accuracy", "clarity"]
    return {**row, "criteria_by_head": True} if by_head else row


def test_levels_join_the_reads_by_the_cut_texts(tmp_path):
    cache = ReadingCache(tmp_path)
    for n, answer in enumerate(ITEM.answers):
        cache.put(ITEM.question[:5], answer, _reading(float(n)))  # the head reads 5 characters
    table = answer_table([_judgment()], {"r1": ITEM}, [cache], HEAD)
    assert table.states.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert table.criterion == ["accuracy", "clarity", "depth", "accuracy", "clarity"]
    assert table.target == [9.0, 8.0, 5.0, 2.0, 7.0]
    assert table.weight == [2.0, 2.0, 1.0, 2.0, 2.0]  # a scenario's first two count double
    assert table.answer == [0, 0, 0, 1, 1] and table.pair.tolist() == [0, 0]
    assert table.label == ["A"] and table.verdict == ["A"] and table.missing == 0


def test_a_pair_without_reads_is_counted_not_guessed(tmp_path):
    table = answer_table([_judgment()], {"r1": ITEM}, [ReadingCache(tmp_path)], HEAD)
    assert table.missing == 1 and table.target == []


def test_a_heads_levels_are_never_taken_for_reads_apart(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_text(json.dumps(_judgment(by_head=True)) + "\n")
    assert judged_rows([path]) == []  # not fitted on
    cache = ReadingCache(tmp_path / "reads")
    for answer in ITEM.answers:
        cache.put(ITEM.question[:5], answer, _reading(1.0))
    table = answer_table(judged_rows([path], levels=False), {"r1": ITEM}, [cache], HEAD)
    assert table.criterion == ["accuracy", "clarity", "accuracy", "clarity"]
    assert all(math.isnan(t) for t in table.target)
