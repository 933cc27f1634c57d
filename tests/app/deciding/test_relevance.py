"""Pairwise verdicts joined with request relevance: real MiniLM embeddings, the join rule,
the service and the settings that turn it on and off."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from app.deciding.relevance import join_relevance, relevance_differences
from app.judging.settings import SettingsLayer, judge_settings, with_changes
from app.records import JudgeItem, Judgment, Protocol, Status
from models.registry import ModelEntry, load_registry
from models.verdict_settings import RelevanceJoin
from tests.app.test_score_mode import DECISION, service, verdict_reply

OFF_TOPIC = JudgeItem(
    id="n",
    question="How do I boil an egg?",
    answers=(
        "The Eiffel Tower was completed in 1889 for the World's Fair in Paris and is 330 "
        "metres tall; it was the tallest structure in the world for four decades.",
        "Put the egg in boiling water for about nine minutes, then cool it in cold water.",
    ),
)
WEIGHTS = RelevanceJoin(margin=1.7, relevance=5.7)


def judged(probs: dict[str, float]) -> Judgment:
    return Judgment(
        id="n", protocol=Protocol.PAIRWISE, status=Status.OK, winner="A", leaning="A",
        confidence=max(probs.values()), verdict_probs=probs,
    )  # fmt: skip


def test_the_answer_to_the_request_is_the_more_relevant_one():
    [difference] = relevance_differences([OFF_TOPIC])
    assert difference < -0.2  # B answers the request, A does not


def test_relevance_overrules_a_judge_that_prefers_the_off_topic_answer():
    own = {"A": 0.55, "B": 0.43, "tie": 0.02}
    joined = join_relevance(judged(own), OFF_TOPIC, WEIGHTS)
    relevance = joined.relevance["relevance_difference"]
    score = 1.7 * (0.55 - 0.43) + 5.7 * relevance
    assert joined.winner == joined.leaning == "B" and score < 0
    assert joined.verdict_probs["A"] == pytest.approx(1 / (1 + math.exp(-score)), abs=1e-4)
    assert joined.confidence == pytest.approx(joined.verdict_probs["B"], abs=1e-4)
    assert joined.relevance["judge_probs"] == own
    assert joined.relevance["judge_margin"] == pytest.approx(0.12)


def test_without_a_relevance_weight_the_judge_decides():
    joined = join_relevance(
        judged({"A": 0.7, "B": 0.3}), OFF_TOPIC, RelevanceJoin(margin=2.0, relevance=0.0)
    )
    assert joined.winner == "A"
    assert joined.confidence == pytest.approx(1 / (1 + math.exp(-0.8)), abs=1e-4)


def test_other_judgments_pass_unchanged():
    failed = Judgment(id="x", protocol=Protocol.PAIRWISE, status=Status.ERROR, error="boom")
    assert join_relevance(failed, OFF_TOPIC, WEIGHTS) is failed
    text_only = Judgment(id="t", protocol=Protocol.PAIRWISE, status=Status.OK, winner="A")
    assert join_relevance(text_only, OFF_TOPIC, WEIGHTS) is text_only  # no probabilities


def test_the_service_joins_before_it_marks_uncertain():
    first = verdict_reply("A", {"A": 0.6, "B": 0.35, "tie": 0.05})
    second = verdict_reply("B", {"A": 0.35, "B": 0.6, "tie": 0.05}, 4, 7)
    svc, _ = service(first, second)
    item = OFF_TOPIC.model_copy(update={"id": "p"})
    config = with_changes(DECISION, {"relevance_join": WEIGHTS, "uncertain_below": 0.55})
    judgment = svc.judge(item, config)
    assert judgment.relevance is not None and judgment.leaning == "B"
    assert judgment.uncertain is (judgment.confidence < 0.55)
    svc, _ = service(first, second)
    plain = svc.judge(item, DECISION)
    assert plain.relevance is None and plain.leaning == "A"


def test_the_registry_turns_it_on_and_the_flag_off():
    entry = ModelEntry(
        name="j",
        backend="llama-cpp",
        file="j.gguf",
        judging={"relevance_join": {"margin": 1, "relevance": 2}},
    )
    assert judge_settings(entry).relevance_join == RelevanceJoin(margin=1, relevance=2)
    off = judge_settings(entry, SettingsLayer(relevance_join=False))
    assert off.relevance_join is None
    assert judge_settings(None).relevance_join is None
    from app.judging.arguments import judging_overrides
    from training.evaluation.evaluate import _parser

    args = _parser().parse_args(["x.jsonl", "--no-relevance-join"])
    assert judging_overrides(args).relevance_join is False


def test_the_decision_judge_joins_its_verdicts_with_relevance():
    entry = load_registry().get("pj-qwen05-decision")
    fitted = RelevanceJoin(margin=1.75, relevance=7.292)  # training.heads.relevance_join's fit
    assert entry.judging.relevance_join == fitted
    assert judge_settings(entry).relevance_join == fitted  # what a judge runs with


def test_a_real_model_judgment_carries_the_join(tiny_gguf_model: Path):
    from app.api import load_judge

    with load_judge(
        str(tiny_gguf_model), threads=1, template="pocketjudge-decision-compact",
        criterion_scores=False, relevance_join=WEIGHTS,
    ) as judge:  # fmt: skip
        judgment = judge.judge(OFF_TOPIC)
    assert judgment.status is Status.OK, judgment.error
    assert judgment.relevance["relevance_difference"] < -0.2
    assert judgment.verdict_probs["tie"] == 0.0


def test_the_app_says_how_relevance_moved_the_verdict():
    from app.ui.views import relevance_note

    note = relevance_note(
        {"judge_probs": {"A": 0.55, "B": 0.43, "tie": 0.02}, "relevance_difference": -0.31}
    )
    assert "the judge alone leaned to answer A (P(A) 55%, P(B) 43%)" in note
    assert "answer B is closer to the request (cosine difference -0.31)" in note
