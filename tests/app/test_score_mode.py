"""Score mode and decision-first replies in the service: verdicts and confidence from the
same probabilities, uncertain verdicts, critiques on request. The fake backend stands in
for the model here; tests/models/backends/test_score_mode.py runs the real llama.cpp."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.judging.settings import with_changes
from app.records import JudgeItem, Protocol, Status
from models.judge_settings import JudgeSettings
from tests.support.fake_backend import FakeBackend, reply

CATALOG = load_catalog()
TWO = ("accuracy", "clarity")
RULE = ScoringRule(CATALOG.specs_for(None, list(TWO)))
DECISION = JudgeConfig(
    choice=CriteriaChoice(criteria=TWO),
    mode="score",
    judge=JudgeSettings(template="pocketjudge-decision", uncertain_below=0.0),
)
PAIR = JudgeItem(id="p", question="Capital of France?", answers=("Paris.", "Lyon."))


def verdict_reply(verdict: str, probs: dict[str, float], a: int = 7, b: int = 4) -> object:
    text = json.dumps(
        {"verdict": verdict, "scores": {"A": dict.fromkeys(TWO, a), "B": dict.fromkeys(TWO, b)}}
    )
    return reply(text, {("verdict",): {f'"{k}"': v for k, v in probs.items()}})


def service(*replies: object) -> tuple[JudgeService, FakeBackend]:
    backend = FakeBackend(replies)
    return JudgeService(backend, "fake-model", CATALOG), backend


def test_score_mode_asks_for_no_free_text() -> None:
    svc, backend = service(verdict_reply("A", {"A": 0.8, "B": 0.1, "tie": 0.1}),
                           verdict_reply("B", {"A": 0.1, "B": 0.8, "tie": 0.1}, 4, 7))  # fmt: skip
    judgment = svc.judge(PAIR, DECISION)
    for call in backend.calls:
        schema = call.output.json_schema
        assert schema["required"] == ["verdict", "scores"]  # the decision first, no feedback
    assert judgment.status is Status.OK and judgment.mode == "score"
    assert judgment.feedback is None and judgment.feedback_note is None


def test_both_orders_probabilities_make_the_verdict_and_its_confidence() -> None:
    # Order 1 (A first) leans A; order 2 (B first) says its first slot, i.e. B, a little.
    first = verdict_reply("A", {"A": 0.7, "B": 0.2, "tie": 0.1})
    second = verdict_reply("A", {"A": 0.5, "B": 0.4, "tie": 0.1}, 7, 4)
    svc, _ = service(first, second)
    judgment = svc.judge(PAIR, DECISION)
    # mapped back: order 2 is A 0.4, B 0.5; averaged: A 0.55, B 0.35, tie 0.1
    assert judgment.verdict_probs == pytest.approx({"A": 0.55, "B": 0.35, "tie": 0.1})
    assert judgment.winner == judgment.leaning == "A"
    assert judgment.confidence == pytest.approx(0.55)
    assert judgment.consistent is False  # the orders wrote A and B
    assert judgment.uncertain is False


def test_a_verdict_below_the_threshold_is_uncertain_with_its_leaning() -> None:
    first = verdict_reply("A", {"A": 0.5, "B": 0.3, "tie": 0.2})
    second = verdict_reply("B", {"A": 0.2, "B": 0.5, "tie": 0.3}, 4, 7)
    svc, _ = service(first, second)
    config = with_changes(DECISION, {"uncertain_below": 0.6})
    judgment = svc.judge(PAIR, config)
    assert judgment.confidence == pytest.approx(0.5)
    assert judgment.winner == "uncertain" and judgment.leaning == "A"
    assert judgment.uncertain is True


def test_decision_first_without_criteria_is_a_verdict_alone() -> None:
    text = json.dumps({"verdict": "tie"})
    dists = {("verdict",): {'"A"': 0.2, '"B"': 0.2, '"tie"': 0.6}}
    svc, backend = service(reply(text, dists), reply(text, dists))
    config = with_changes(DECISION, {"criterion_scores": False})
    judgment = svc.judge(PAIR, config)
    assert backend.calls[0].output.json_schema["required"] == ["verdict"]
    assert judgment.status is Status.OK and judgment.answers == ()
    assert judgment.winner == "tie" and judgment.confidence == pytest.approx(0.6)


def test_a_decision_first_grade_keeps_its_distribution() -> None:
    text = json.dumps({"overall": 8, "scores": dict.fromkeys(TWO, 8)})
    dists = {("overall",): {"7": 0.25, "8": 0.75}}
    svc, _ = service(reply(text, dists))
    item = JudgeItem(id="g", question="Capital?", answers=("Paris.",))
    judgment = svc.judge(item, DECISION)
    [answer] = judgment.answers
    assert answer.overall == 8.0 and answer.expected_overall == pytest.approx(7.75)
    assert answer.overall_probs == {7: 0.25, 8: 0.75}
    assert judgment.confidence == pytest.approx(0.75)


def test_explain_fixes_the_decision_and_keeps_the_critique() -> None:
    first = verdict_reply("A", {"A": 0.6, "B": 0.1, "tie": 0.3})
    second = verdict_reply("B", {"A": 0.2, "B": 0.5, "tie": 0.3}, 4, 7)  # B first: leans to A
    critique = json.dumps(
        {
            "verdict": "A",
            "scores": {"A": dict.fromkeys(TWO, 7), "B": dict.fromkeys(TWO, 4)},
            "feedback": "A names the capital.",
        }
    )
    svc, backend = service(first, second, critique)
    config = replace(DECISION, feedback=True)
    judgment = svc.judge(PAIR, config)
    assert judgment.leaning == "A"  # averaged: A 0.55, B 0.15, tie 0.3
    explain_call = backend.calls[2]
    assert "feedback" in explain_call.output.json_schema["required"]
    rule = explain_call.output.value_rules.rule_for(("verdict",), {})
    assert rule.allowed == (f'"{judgment.leaning}"',)  # the critique explains this verdict
    assert judgment.feedback == "A names the capital." and judgment.feedback_note is None


def test_an_empty_critique_is_said_not_shown() -> None:
    empty = json.dumps(
        {
            "verdict": "A",
            "scores": {"A": dict.fromkeys(TWO, 7), "B": dict.fromkeys(TWO, 4)},
            "feedback": "",
        }
    )
    svc, _ = service(verdict_reply("A", {"A": 1.0}), verdict_reply("B", {"B": 1.0}, 4, 7), empty)
    judgment = svc.judge(PAIR, replace(DECISION, feedback=True))
    assert judgment.feedback is None
    assert "wrote no critique" in judgment.feedback_note


def test_a_critique_is_read_for_its_feedback_alone() -> None:
    """The decision was fixed when the critique was asked: scores outside the scale (which
    would make a judgment unparsed) do not lose its feedback; a reply with no JSON gives
    none."""
    odd = json.dumps({"verdict": "A", "scores": {"A": {"x": 99}}, "feedback": " A is right. "})
    svc, _ = service(verdict_reply("A", {"A": 1.0}), verdict_reply("B", {"B": 1.0}, 4, 7), odd)
    judgment = svc.judge(PAIR, replace(DECISION, feedback=True))
    assert judgment.feedback == "A is right." and judgment.feedback_note is None
    svc, _ = service(verdict_reply("A", {"A": 1.0}), verdict_reply("B", {"B": 1.0}, 4, 7), "A.")
    judgment = svc.judge(PAIR, replace(DECISION, feedback=True))
    assert judgment.feedback is None and "wrote no critique" in judgment.feedback_note
    assert judgment.raw_output.endswith("A.")  # what it wrote is kept


def test_a_judge_known_to_write_no_critique_says_so_without_a_call() -> None:
    svc, backend = service(verdict_reply("A", {"A": 1.0}), verdict_reply("B", {"B": 1.0}, 4, 7))
    config = with_changes(replace(DECISION, feedback=True), {"writes_critiques": False})
    judgment = svc.judge(PAIR, config)
    assert len(backend.calls) == 2
    assert judgment.feedback is None and "does not write critiques" in judgment.feedback_note


def test_rows_are_scored_in_one_batch_and_come_back_in_order() -> None:
    replies = [verdict_reply("A", {"A": 1.0}), verdict_reply("B", {"B": 1.0}, 4, 7)] * 3
    svc, backend = service(*replies)
    items = [PAIR.model_copy(update={"id": f"r{n}"}) for n in range(3)]
    from app.io.reader import InputRow

    rows = [InputRow(n + 1, it, None, None) for n, it in enumerate(items)]
    judgments = list(svc.judge_rows(rows, DECISION))
    assert [j.id for j in judgments] == ["r0", "r1", "r2"]
    assert [j.line for j in judgments] == [1, 2, 3]
    assert len(backend.calls) == 6


def test_protocol_multi_decision_first_confidence_is_the_top_answers() -> None:
    text = json.dumps(
        {
            "ranking": [2, 1, 3],
            "scores": {k: dict.fromkeys(TWO, v) for k, v in (("1", 6), ("2", 8), ("3", 3))},
        }
    )
    svc, _ = service(reply(text, {("ranking", 0): {"1": 0.3, "2": 0.6, "3": 0.1}}))
    item = JudgeItem(id="m", question="Capital?", answers=("a", "b", "c"))
    judgment = svc.judge(item, DECISION)
    assert judgment.protocol is Protocol.MULTI and judgment.ranking == (2, 1, 3)
    assert judgment.confidence == pytest.approx(0.6)


@pytest.mark.parametrize(("tie_margin", "winner"), [(0.1, "A"), (0.25, "tie")])
def test_decision_first_calibrated_ties_a_close_probability_gap(tie_margin, winner) -> None:
    first = verdict_reply("A", {"A": 0.7, "B": 0.2, "tie": 0.1})
    second = verdict_reply("A", {"A": 0.5, "B": 0.4, "tie": 0.1}, 7, 4)
    svc, _ = service(first, second)
    config = with_changes(DECISION, {"pair_combine": "calibrated", "tie_margin": tie_margin})
    judgment = svc.judge(PAIR, config)
    # averaged over both orders: A 0.55, B 0.35 -> the gap is 0.2
    assert judgment.margin == pytest.approx(0.2)
    assert judgment.winner == winner
    # re-scoring a saved judgment at another margin gives what judging at it gives
    from training.evaluation.rescore import recombine

    other = 0.25 if tie_margin == 0.1 else 0.1
    assert recombine(judgment, other).winner == {"A": "tie", "tie": "A"}[winner]
    # a judgment saved before decision-first margins were kept: read from its probabilities
    old = judgment.model_copy(update={"margin": None})
    assert recombine(old, tie_margin).winner == winner
