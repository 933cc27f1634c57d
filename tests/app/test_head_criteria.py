"""Criterion scores beside a state head's decision, read on the tiny real model: a
decision-last reply scored from the model's probabilities, apart from the head's verdict,
so the two can disagree (and the judgment keeps both)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.criteria_resolution import CriteriaChoice
from app.records import JudgeItem, Protocol, Status
from app.rubrics import load_rubric
from app.service import JudgeConfig, JudgeService, criteria_template
from app.state_head import StateHead
from models.backends.base import BackendOptions

PAIR = JudgeItem(
    id="p",
    question="Which planet is closest to the sun?",
    answers=("Mercury.", "Venus is the hottest planet, but the closest one is Mercury."),
)
CONTEXT = 4096  # the full decision-last prompt, criteria described, fits
RUBRIC = Path(__file__).parents[2] / "scenarios" / "rubrics" / "helpfulness_1to5.yaml"


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=CONTEXT, n_threads=1))
    yield JudgeService(backend, "tiny-head"), backend
    backend.close()


@pytest.fixture(scope="module")
def head(tiny) -> StateHead:
    _, backend = tiny
    size = backend.read_answers("q", ["a"])[0].states.shape[0]
    rng = np.random.default_rng(2)
    return StateHead(
        base_file="tiny.gguf",
        reads="reply",
        weights=tuple((0.05 * rng.normal(size=size)).tolist()),
        likelihood={"pmi_mean": 1.0},
        grade_weights=(),
        grade_likelihood={"pmi_mean": 0.5},
        grade_intercept=5.0,
    )


def _config(head: StateHead | None, protocol: Protocol, **more) -> JudgeConfig:
    return JudgeConfig(
        protocol=protocol,
        state_head=head,
        template="pocketjudge-decision",
        context_tokens=CONTEXT,
        **more,
    )


def test_the_criteria_are_read_apart_from_the_heads_verdict(tiny, head):
    service, _ = tiny
    alone = service.judge(PAIR, _config(head, Protocol.PAIRWISE, criteria=False))
    both = service.judge(PAIR, _config(head, Protocol.PAIRWISE))
    assert alone.answers == () and alone.raw_output is None and alone.criteria == ()
    assert both.status is Status.OK
    # the head's verdict is the same with or without the criteria
    assert both.verdict_probs == alone.verdict_probs and both.winner == alone.winner
    keys = both.criteria
    assert keys and all(set(a.criteria) == set(keys) for a in both.answers)
    assert both.criteria_verdict in ("A", "B", "tie")
    # the scores are the ones a decision-last judge reads from the same prompts
    plain = service.judge(
        PAIR,
        JudgeConfig(
            protocol=Protocol.PAIRWISE,
            template="pocketjudge",
            pair_combine="calibrated",
            context_tokens=CONTEXT,
        ),
    )
    assert [a.criteria for a in both.answers] == [a.criteria for a in plain.answers]
    assert both.criteria_verdict == plain.winner
    assert both.raw_output == plain.raw_output and both.raw_output_swapped


def test_a_grade_keeps_the_heads_value_beside_the_criteria(tiny, head):
    service, _ = tiny
    single = JudgeItem(id="s", question=PAIR.question, answers=(PAIR.answers[0],))
    alone = service.judge(single, _config(head, Protocol.SINGLE, criteria=False))
    both = service.judge(single, _config(head, Protocol.SINGLE))
    assert both.answers[0].overall == alone.answers[0].overall
    assert both.answers[0].expected_overall == alone.answers[0].expected_overall
    assert set(both.answers[0].criteria) == set(both.criteria) != set()


def test_a_rubric_gives_its_own_criterion_and_scale(tiny, head):
    service, _ = tiny
    rubric = load_rubric(RUBRIC)
    config = _config(head, Protocol.PAIRWISE, choice=CriteriaChoice(rubric=rubric))
    judged = service.judge(PAIR, config)
    keys = tuple(c.id for c in rubric.criteria)
    assert judged.criteria == keys
    low, high = rubric.criteria[0].scale_min, rubric.criteria[0].scale_max
    for answer in judged.answers:
        assert all(low <= value <= high for value in answer.criteria.values())


def test_a_ranking_keeps_the_heads_order_and_the_criteria_order_apart(tiny, head):
    service, _ = tiny
    three = PAIR.model_copy(update={"answers": (*PAIR.answers, "It is Mars, I think.")})
    alone = service.judge(three, _config(head, Protocol.MULTI, criteria=False))
    both = service.judge(three, _config(head, Protocol.MULTI))
    assert both.ranking == alone.ranking
    assert sorted(both.criteria_ranking) == [1, 2, 3] and len(both.answers) == 3


def test_the_criteria_template_is_the_decision_last_twin():
    assert criteria_template("pocketjudge-decision") == "pocketjudge"
    assert criteria_template("pocketjudge-decision-compact") == "pocketjudge-compact"
    assert criteria_template("pocketjudge") == "pocketjudge"
    assert criteria_template("autoj") == "pocketjudge"
