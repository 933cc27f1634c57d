"""What a criterion head is fitted on: each answer's features from the verdict's own read,
and the criterion levels the reads apart gave it.

`training.evaluation.evaluate --reading-cache DIR` over labelled pairs keeps, per answer,
the read the verdict's head makes (the answer as the model's reply to its request: pooled
states and token log-probabilities), and its judgments hold each answer's criterion levels
read apart (`expected_criteria`, the probability-weighted level). This module joins the
two by the request and answer texts as the head cuts them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.catalog.criteria_types import default_weight
from app.deciding.state_head import StateHead
from app.io.reader import read_rows
from app.records import JudgeItem
from models.readings import FEATURES


@dataclass
class AnswerTable:
    """Answers (rows of `states` and `likelihood`), their pairs, and the criterion levels
    read apart for them (`target[k]` for answer `answer[k]` on criterion `criterion[k]`)."""

    states: np.ndarray  # answers x pooled states (mean, last)
    likelihood: np.ndarray  # answers x FEATURES
    characters: np.ndarray  # answers: length of the answer in characters
    pair: np.ndarray  # answers: index of their pair
    answer: list[int] = field(default_factory=list)
    criterion: list[str] = field(default_factory=list)
    target: list[float] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)  # the criterion's weight in the overall
    label: list[str | None] = field(default_factory=list)  # per pair: A, B, tie or None
    verdict: list[str | None] = field(default_factory=list)  # per pair: the head's winner
    scenario: list[str | None] = field(default_factory=list)  # per pair
    ids: list[str] = field(default_factory=list)  # per pair: the row's id
    missing: int = 0  # judged pairs without a cached read of both answers
    # answers: cos(request, answer) of MiniLM's vectors (app/deciding/relevance.py)
    relevance: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # (a scenario's first two criteria count double, as in the page's overall)

    @property
    def targets(self) -> np.ndarray:
        return np.asarray(self.target, dtype=np.float64)


def items_by_id(paths: Sequence[Path]) -> dict[str, JudgeItem]:
    """Every readable item of the input files, by its id."""
    items: dict[str, JudgeItem] = {}
    for path in paths:
        for row in read_rows(path):
            if row.item is not None:
                items[row.item.id] = row.item
    return items


def judged_rows(paths: Sequence[Path], levels: bool = True) -> list[dict]:
    """Saved judgments (judgments.jsonl) that hold criterion levels read apart for every
    answer (or, without `levels`, every judgment made)."""
    rows = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("status") == "ok" and (read_apart(row) or not levels):
                rows.append(row)
    return rows


def read_apart(row: dict) -> bool:
    """Whether a saved judgment holds every answer's criterion levels, read (not a head's)."""
    answers = row.get("answers") or []
    read = bool(answers) and all(a.get("expected_criteria") for a in answers)
    return read and not row.get("criteria_by_head")


def scenario_levels(row: dict, answers: int) -> list[dict[str, float]]:
    """What a judgment read apart, or (judged without criteria, or by a criterion head) its
    criteria with no level (NaN): the rows a head is asked for."""
    if read_apart(row):
        return [a["expected_criteria"] for a in row["answers"]]
    keys = row.get("criteria") or ()
    if not keys:
        from app.catalog.scenarios import load_catalog

        keys = load_catalog().get_scenario(row.get("scenario") or "default").criteria
    return [dict.fromkeys(keys, float("nan")) for _ in range(answers)]


def cached_readings(item: JudgeItem, head: StateHead, caches: Sequence) -> list | None:
    """Each answer's reading from one of `caches` (ReadingCache), as the engine reads it: the
    request and the answer cut to the verdict head's lengths; None where one is missing."""
    question = item.question[: head.question_chars]
    found = []
    for answer in item.answers:
        text = answer[: head.answer_chars]
        cache = next((c for c in caches if c.has(question, text)), None)
        if cache is None:
            return None
        found.append(cache.get(question, text))
    return found


def answer_table(
    judgments: Sequence[dict], items: dict[str, JudgeItem], caches: Sequence, head: StateHead
) -> AnswerTable:
    """The answers of `judgments` whose reads are in one of `caches` (ReadingCache)."""
    from app.deciding.relevance import request_similarities

    states, likelihood, characters, pairs, relevance = [], [], [], [], []
    table = AnswerTable(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    for row in judgments:
        item = items.get(row["id"])
        if item is None:
            table.missing += 1
            continue
        readings = cached_readings(item, head, caches)
        if readings is None:
            table.missing += 1
            continue
        number = len(table.label)
        levels = scenario_levels(row, len(readings))
        relevance.extend(request_similarities(item.question, item.answers).tolist())
        for reading, answer, judged in zip(readings, item.answers, levels):
            feats = reading.features()
            for index, (name, level) in enumerate(judged.items()):
                table.answer.append(len(states))
                table.criterion.append(name)
                table.target.append(float(level))
                table.weight.append(default_weight(index))
            states.append(np.asarray(reading.states, dtype=np.float64))
            likelihood.append([feats[f] for f in FEATURES])
            characters.append(len(answer))
            pairs.append(number)
        table.label.append(item.label.winner if item.label else None)
        table.verdict.append(row.get("winner"))
        table.scenario.append(row.get("scenario"))
        table.ids.append(row["id"])
    table.states = np.asarray(states)
    table.likelihood = np.asarray(likelihood, dtype=np.float64)
    table.characters = np.asarray(characters, dtype=np.float64)
    table.pair = np.asarray(pairs)
    table.relevance = np.asarray(relevance, dtype=np.float64)
    return table


def with_levels_of(table: AnswerTable, judgments: Sequence[dict]) -> AnswerTable:
    """`table` with the levels another run read apart on the same rows as its targets
    (rows that run did not read keep theirs)."""
    apart = {row["id"]: row["answers"] for row in judgments if read_apart(row)}
    target = list(table.target)
    for k, (answer, name) in enumerate(zip(table.answer, table.criterion)):
        pair = int(table.pair[answer])
        read = apart.get(table.ids[pair])
        if read is not None:
            number = answer - int(np.flatnonzero(table.pair == pair)[0])
            target[k] = float(read[number]["expected_criteria"].get(name, float("nan")))
    table.target = target
    return table


def load_table(
    run_dir: Path, head: StateHead, inputs: Sequence[Path] = (), levels: bool = True
) -> AnswerTable:
    """The table of a criterion-head run folder: pairs-part*.jsonl (or `inputs`) judged into
    eval-part*/judgments.jsonl with reads kept in readings-part*; without `levels`, rows
    judged without criteria too (their scenario's criteria, levels NaN)."""
    from training.device.reading_cache import ReadingCache

    judgments = judged_rows(sorted(run_dir.glob("eval-part*/judgments.jsonl")), levels)
    items = items_by_id(list(inputs) or sorted(run_dir.glob("pairs-part*.jsonl")))
    caches = [ReadingCache(folder) for folder in sorted(run_dir.glob("readings-part*"))]
    return answer_table(judgments, items, caches, head)
