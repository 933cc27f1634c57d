"""The default judge's state head on its real model (`make models` builds it) and real rows.

The head was fitted on the states of exactly this GGUF file: its size must match the
model's features, and a verdict must come out the same whatever order the answers are in.
The criterion scores read beside it take the reference: one that names the right answer
moves the criteria's decision, and through them the verdict, toward it.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import islice

import pytest

from app.catalog.criteria_resolution import CriteriaChoice
from app.deciding.state_head import PART_WORDS
from app.io.reader import read_rows
from app.judging.service import JudgeService
from app.judging.settings import judge_config, with_changes
from app.records import JudgeItem, Protocol, Status
from bench.cell import DEV
from models.backends.base import BackendOptions
from models.loader import open_judge
from models.registry import load_registry
from tests.support.needs import need_model, shared_file

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judged():
    entry = load_registry().get()
    if entry.judging.state_head is None:
        pytest.skip(f"the default judge {entry.name} has no state head")
    shared_file("autoj/pairwise_dev.jsonl")
    need_model(entry.path(), entry.name)
    settings = judge_config(entry, protocol=Protocol.PAIRWISE)
    judge = open_judge(entry.name, BackendOptions(n_ctx=entry.context, n_threads=1))
    try:
        service = JudgeService(judge.backend, entry.name)
        row = next(islice(read_rows(DEV), 2, None))  # the third pair: short, a real label
        # the head alone (criteria: below)
        config = with_changes(settings, {"criterion_scores": False})
        swapped = row.item.model_copy(update={"answers": row.item.answers[::-1]})
        yield (
            entry,
            settings,
            judge,
            service.judge(row.item, config),
            service.judge(swapped, config),
        )
    finally:
        judge.close()


def test_the_head_reads_this_models_states(judged):
    entry, settings, judge, _, _ = judged
    head = settings.parts.head
    assert head.base_file == entry.file
    assert judge.backend.state_features("Request: x\n\nAnswer: y").shape == (len(head.weights),)


def test_a_real_pair_gets_one_verdict_in_either_order(judged):
    _, settings, _, first, second = judged
    assert first.status is Status.OK and second.status is Status.OK, first.error
    assert first.verdict_probs["A"] == pytest.approx(second.verdict_probs["B"], abs=1e-3)
    mirrored = {"A": "B", "B": "A", "tie": "tie"}
    assert second.leaning == mirrored[first.leaning]
    parts = first.verdict_parts
    signals = [name for name in PART_WORDS if name in parts]  # the raw differences are not parts
    assert "states" in signals
    assert parts["score"] == pytest.approx(sum(parts[name] for name in signals), abs=1e-3)
    # a verdict below the judge's threshold is shown as uncertain, never as a decision
    assert (first.winner == "uncertain") is (first.confidence < settings.judge.uncertain_below)


def test_a_reference_naming_the_right_answer_moves_the_criteria_and_the_verdict_toward_it(
    judged,
):
    entry, settings, judge, _, _ = judged
    service = JudgeService(judge.backend, entry.name)
    pair = JudgeItem(
        id="canberra",
        question="What is the capital of Australia?",
        answers=(
            "Canberra.",
            "Sydney is the capital of Australia. It is the largest city in the country, home "
            "to the Opera House and the Harbour Bridge, and its main financial centre.",
        ),
        reference="Canberra.",
    )
    config = settings
    # two criteria keep it short: four criterion reads a judgment
    config = replace(config, choice=CriteriaChoice(criteria=("accuracy", "relevance")))
    given = service.judge(pair, config)
    without = service.judge(pair, replace(config, use_reference=False))
    # the head reads no reference; the verdict adds the criteria's lead read with it
    assert given.verdict_parts["reference"] > 0
    assert given.verdict_probs["A"] > without.verdict_probs["A"], (given, without)
    assert "reference" not in without.verdict_parts

    def lead_of_a(judgment) -> float:
        first, second = judgment.answers
        return first.expected_criteria["accuracy"] - second.expected_criteria["accuracy"]

    assert lead_of_a(given) > lead_of_a(without) + 1.0, (lead_of_a(given), lead_of_a(without))
    assert given.criteria_verdict == "A"


def test_a_single_answers_grade_is_the_records_grade_rule_on_its_read(judged):
    """The default judge grades one answer by its decision record's grade rule, on the same
    read of the answer a verdict makes (its states and likelihood features)."""
    import numpy as np

    from app.deciding.decision import grade_of

    entry, _, judge, _, _ = judged
    config = with_changes(
        judge_config(entry, protocol=Protocol.SINGLE), {"criterion_scores": False}
    )
    item = JudgeItem(id="g", question="What is 7 times 8?", answers=("7 times 8 is 56.",))
    graded = JudgeService(judge.backend, entry.name).judge(item, config)
    head, rule = config.parts.head, config.parts.decision.grade
    assert graded.status is Status.OK and rule is not None
    reading = judge.backend.read_answers(item.question, list(item.answers), True)[0]
    values = reading.features() | {
        "grade_states": float(np.dot(head.grade_weights, reading.states))
    }
    assert graded.answers[0].expected_overall == pytest.approx(grade_of(rule, values), abs=1e-4)
    assert graded.overall_scale == (1, 10)
