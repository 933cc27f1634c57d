"""JudgeService with a scripted backend: every row in gives exactly one judgment out."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import pytest

from app.batches.tally import Tally
from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule, ranking_from_overall, verdict_from_overall
from app.io.reader import InputRow, read_rows
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.item_checks import infer_protocol
from app.judging.service import JudgeService
from app.judging.settings import config_of, with_changes
from app.records import JudgeItem, Judgment, Protocol, Status
from models.backends import create_backend
from models.backends.base import Backend, BackendOptions, SamplingParams
from models.foundation.errors import BackendError
from tests.support.fake_backend import FakeBackend, reply

CATALOG = load_catalog()
TWO = ("accuracy", "clarity")  # custom criteria, weights 2 and 2: the overall is their mean
TWO_RULE = ScoringRule(CATALOG.specs_for(None, list(TWO)))
DEFAULT_RULE = ScoringRule(CATALOG.specs_for("default"))
# The full-reply path (mode "generate"), where the fake backend's replies are whole
# judgments with feedback; score mode has its own tests (test_score_mode.py).
# The scenario classifier is tested on its own below; here "auto" falls back to default.
# No confidence threshold: these tests read the verdicts themselves.
GenConfig = partial(config_of, mode="generate", detect_scenario=False, uncertain_below=0.0)
TWO_CONFIG = GenConfig(choice=CriteriaChoice(criteria=TWO))


# --------------------------------------------------------------------------- reply builders


def block(rule: ScoringRule, values: int | Sequence[int]) -> dict[str, int]:
    if isinstance(values, int):
        values = [values] * len(rule.keys)
    assert len(values) == len(rule.keys)
    return dict(zip(rule.keys, values))


def single_json(rule: ScoringRule, scores: int | Sequence[int], feedback: str = "Fine.") -> str:
    scores_ = block(rule, scores)
    data = {"scores": scores_, "overall": rule.rounded_overall(scores_), "feedback": feedback}
    return json.dumps(data)


def pair_json(
    rule: ScoringRule,
    a: int | Sequence[int],
    b: int | Sequence[int],
    feedback: str = "Compared.",
) -> str:
    blocks = {"A": block(rule, a), "B": block(rule, b)}
    overall = {key: rule.rounded_overall(scores) for key, scores in blocks.items()}
    verdict = verdict_from_overall(overall["A"], overall["B"])
    data = {"scores": blocks, "overall": overall, "verdict": verdict, "feedback": feedback}
    return json.dumps(data)


def multi_json(rule: ScoringRule, *answers: int | Sequence[int]) -> str:
    blocks = {str(i): block(rule, v) for i, v in enumerate(answers, start=1)}
    overall = [rule.rounded_overall(scores) for scores in blocks.values()]
    ranking = [n for group in ranking_from_overall(overall) for n in group]
    data = {
        "scores": blocks,
        "overall": {str(i): v for i, v in enumerate(overall, start=1)},
        "ranking": ranking,
        "feedback": "Ranked.",
    }
    return json.dumps(data)


def item(*answers: str, **fields: Any) -> JudgeItem:
    fields.setdefault("id", "item-1")
    fields.setdefault("question", "What is the capital of France?")
    return JudgeItem(answers=answers, **fields)


def service(*replies: Any) -> tuple[JudgeService, FakeBackend]:
    backend = FakeBackend(replies)
    return JudgeService(backend, "fake-model", CATALOG), backend


def fence_body(prompt: str, tag: str) -> str:
    match = re.search(rf"\[\[{tag} ([0-9a-f]{{8}})\]\]\n(.*?)\n\[\[/{tag} \1\]\]", prompt, re.S)
    assert match, f"no {tag} fence in the prompt"
    return match.group(2)


# --------------------------------------------------------------------------- the fake itself


def test_fake_backend_registers_and_implements_the_protocol() -> None:
    backend = create_backend("fake", "tiny", BackendOptions())
    assert isinstance(backend, FakeBackend)
    assert isinstance(backend, Backend)
    assert backend.model == "tiny"
    backend.close()
    assert backend.closed


def test_fake_backend_without_replies_raises_backend_error() -> None:
    svc, backend = service()
    judgment = svc.judge(item("Paris."), TWO_CONFIG)
    assert judgment.status is Status.ERROR
    assert "no reply queued" in judgment.error
    assert len(backend.calls) == 1


# --------------------------------------------------------------------------- rows


def test_rows_in_equal_rows_out_with_error_rows() -> None:
    data = b"\n".join(
        [
            b'{"id": "r1", "question": "Q1?", "answers": ["a1"]}',
            b"not json",
            b'{"id": "r3", "question": "Q3?", "answers": [""]}',
            b'{"id": "r4", "question": "Q4?", "answers": ["a4"]}',
            b'{"id": "r5", "question": "", "answers": ["a5"]}',
        ]
    )
    rows = list(read_rows(data, name="rows.jsonl"))
    svc, backend = service(single_json(TWO_RULE, 8), single_json(TWO_RULE, 4))
    judgments = list(svc.judge_rows(rows, TWO_CONFIG))
    assert len(judgments) == len(rows) == 5
    assert [j.line for j in judgments] == [1, 2, 3, 4, 5]
    assert [j.status for j in judgments] == [
        Status.OK,
        Status.ERROR,
        Status.ERROR,
        Status.OK,
        Status.ERROR,
    ]
    assert judgments[0].id == "r1" and judgments[3].id == "r4"
    assert judgments[0].answers[0].overall == 8.0
    assert judgments[3].answers[0].overall == 4.0
    assert "invalid JSON" in judgments[1].error
    assert "answers[0]" in judgments[2].error
    assert all(j.answers == () for j in judgments if j.status is Status.ERROR)
    assert all(j.model == "fake-model" for j in judgments)
    assert len(backend.calls) == 2
    assert "Q1?" in backend.prompts[0] and "Q4?" in backend.prompts[1]


def test_input_rows_built_directly() -> None:
    rows = [
        InputRow(line=7, item=item("Paris.", id="a"), error=None, raw=None),
        InputRow(line=8, item=item("Lyon.", id="b"), error=None, raw=None),
    ]
    svc, _ = service(single_json(TWO_RULE, 9), single_json(TWO_RULE, 2))
    judgments = list(svc.judge_rows(rows, TWO_CONFIG))
    assert [(j.id, j.line, j.status) for j in judgments] == [
        ("a", 7, Status.OK),
        ("b", 8, Status.OK),
    ]


# --------------------------------------------------------------------------- protocols


def test_protocol_inferred_from_answer_count() -> None:
    assert infer_protocol(item("x")) is Protocol.SINGLE
    assert infer_protocol(item("x", "y")) is Protocol.PAIRWISE
    assert infer_protocol(item("x", "y", "z")) is Protocol.MULTI
    assert infer_protocol(item(*"uvwxyz")) is Protocol.MULTI

    config = GenConfig(choice=CriteriaChoice(criteria=TWO), swap=False)
    svc, backend = service(
        single_json(TWO_RULE, 7),
        pair_json(TWO_RULE, 8, 5),
        multi_json(TWO_RULE, 4, 9, 6),
    )
    one = svc.judge(item("Paris."), config)
    two = svc.judge(item("Paris.", "Lyon."), config)
    three = svc.judge(item("Paris.", "Lyon.", "Nice."), config)
    assert [j.protocol for j in (one, two, three)] == [
        Protocol.SINGLE,
        Protocol.PAIRWISE,
        Protocol.MULTI,
    ]
    assert all(j.status is Status.OK for j in (one, two, three))
    assert "Your task: grade one answer" in backend.instructions[0]
    assert "Your task: compare two answers, A and B" in backend.instructions[1]
    assert "Your task: compare several answers" in backend.instructions[2]
    assert backend.prompts[2].endswith("Rank the 3 answers now, as JSON.")
    required = [call.output.json_schema["required"] for call in backend.calls]
    assert required == [
        ["scores", "overall", "feedback"],
        ["scores", "overall", "verdict", "feedback"],
        ["scores", "overall", "ranking", "feedback"],
    ]
    assert backend.calls[2].output.value_rules.keys == ("1", "2", "3")
    assert (one.winner, two.winner, three.winner) == (None, "A", None)
    assert three.ranking == (2, 3, 1)


def test_explicit_single_grades_each_answer_on_its_own() -> None:
    config = GenConfig(protocol=Protocol.SINGLE, choice=CriteriaChoice(criteria=TWO))
    svc, backend = service(single_json(TWO_RULE, 9), single_json(TWO_RULE, 3))
    judgment = svc.judge(item("Paris.", "Lyon."), config)
    assert judgment.status is Status.OK
    assert [a.overall for a in judgment.answers] == [9.0, 3.0]
    assert len(backend.calls) == 2
    assert fence_body(backend.prompts[0], "ANSWER") == "Paris."
    assert fence_body(backend.prompts[1], "ANSWER") == "Lyon."
    assert judgment.winner is None and judgment.ranking is None


def test_wrong_answer_count_for_protocol() -> None:
    svc, backend = service()
    pairwise = svc.judge(item("a", "b", "c"), GenConfig(protocol=Protocol.PAIRWISE))
    multi = svc.judge(item("a"), GenConfig(protocol=Protocol.MULTI))
    assert pairwise.status is Status.ERROR and "exactly 2 answers" in pairwise.error
    assert multi.status is Status.ERROR and "2 to 6 answers" in multi.error
    assert backend.calls == []


# --------------------------------------------------------------------------- pairwise with swap

GOOD, BAD = "Paris is the capital of France.", "Lyon, probably."


def test_swap_consistent_verdicts_give_the_winner() -> None:
    first = pair_json(TWO_RULE, 9, 3)  # A (= GOOD) wins
    second = pair_json(TWO_RULE, 4, 8)  # swapped: A is BAD, B is GOOD; "B" means GOOD
    svc, backend = service(first, second)
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert judgment.status is Status.OK
    assert judgment.winner == "A"
    assert judgment.consistent is True
    assert judgment.swapped is True
    assert judgment.raw_output == first
    assert judgment.raw_output_swapped == second
    # scores of each input answer averaged over both orders
    assert judgment.answers[0].criteria == {"accuracy": 8.5, "clarity": 8.5}
    assert judgment.answers[0].overall == 8.5
    assert judgment.answers[1].criteria == {"accuracy": 3.5, "clarity": 3.5}
    assert len(backend.calls) == 2
    assert fence_body(backend.prompts[0], "ANSWER A") == GOOD
    assert fence_body(backend.prompts[0], "ANSWER B") == BAD
    assert fence_body(backend.prompts[1], "ANSWER A") == BAD
    assert fence_body(backend.prompts[1], "ANSWER B") == GOOD


def test_swapped_run_saying_a_means_the_original_b() -> None:
    first = pair_json(TWO_RULE, 3, 9)  # B (= BAD position 2) wins
    second = pair_json(TWO_RULE, 9, 3)  # swapped: A is the original B, and it wins
    svc, _ = service(first, second)
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert judgment.winner == "B"
    assert judgment.consistent is True
    assert judgment.answers[0].overall == 3.0
    assert judgment.answers[1].overall == 9.0


def test_swap_conflicting_verdicts_become_a_flagged_tie() -> None:
    first = pair_json(TWO_RULE, 9, 3)  # A wins: position bias towards A ...
    second = pair_json(TWO_RULE, 9, 3)  # ... and again A, which is now the other answer
    svc, _ = service(reply(first), reply(second))
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert judgment.status is Status.OK
    assert judgment.winner == "tie"
    assert judgment.consistent is False
    # Without probabilities each order counts as sure of what it wrote: A 0.5, B 0.5, and
    # the tie the orders' conflict makes has no support at all.
    assert judgment.verdict_probs == {"A": 0.5, "B": 0.5, "tie": 0.0}
    assert judgment.confidence == 0.0
    assert judgment.answers[0].overall == judgment.answers[1].overall == 6.0


def test_swap_both_tie_is_consistent() -> None:
    svc, _ = service(pair_json(TWO_RULE, 6, 6), pair_json(TWO_RULE, 7, 7))
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert (judgment.winner, judgment.consistent) == ("tie", True)


def test_swap_off_judges_once() -> None:
    config = GenConfig(choice=CriteriaChoice(criteria=TWO), swap=False)
    svc, backend = service(pair_json(TWO_RULE, 2, 7))
    judgment = svc.judge(item(GOOD, BAD), config)
    assert len(backend.calls) == 1
    assert judgment.winner == "B"
    assert judgment.swapped is False
    assert judgment.consistent is None
    assert judgment.raw_output_swapped is None


def test_swap_with_one_order_unparsed() -> None:
    svc, _ = service(pair_json(TWO_RULE, 9, 3), "Both are fine, I cannot decide.")
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert judgment.status is Status.UNPARSED
    assert judgment.error.startswith("swapped order: no JSON object found")
    assert judgment.answers == ()
    assert judgment.winner is None
    assert judgment.raw_output_swapped == "Both are fine, I cannot decide."
    assert judgment.raw_output == pair_json(TWO_RULE, 9, 3)


def test_tokens_and_latency_add_up_over_both_orders() -> None:
    first = reply(pair_json(TWO_RULE, 9, 3), prompt_tokens=100, completion_tokens=20, latency_s=0.5)
    second = reply(pair_json(TWO_RULE, 3, 9), prompt_tokens=110, completion_tokens=25, latency_s=1)
    svc, _ = service(first, second)
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert (judgment.prompt_tokens, judgment.completion_tokens) == (210, 45)
    assert judgment.latency_s == pytest.approx(1.5)


# --------------------------------------------------------------------------- failures


def test_unparsed_keeps_raw_text_and_has_no_scores() -> None:
    raw = 'I would give it {"score": "eight"} out of ten.'
    svc, _ = service(raw)
    judgment = svc.judge(item("Paris."), TWO_CONFIG)
    assert judgment.status is Status.UNPARSED
    assert judgment.raw_output == raw
    assert judgment.answers == ()
    assert judgment.confidence is None
    assert "missing field 'scores'" in judgment.error
    assert judgment.criteria == TWO  # what it was asked, even though it failed


def test_inconsistent_output_is_unparsed_not_repaired() -> None:
    text = json.dumps({"scores": {"accuracy": 9, "clarity": 9}, "overall": 3, "feedback": "x"})
    svc, _ = service(text)
    judgment = svc.judge(item("Paris."), TWO_CONFIG)
    assert judgment.status is Status.UNPARSED
    assert "does not agree with the scores" in judgment.error


def test_one_of_several_single_answers_unparsed() -> None:
    config = GenConfig(protocol=Protocol.SINGLE, choice=CriteriaChoice(criteria=TWO))
    svc, _ = service(single_json(TWO_RULE, 9), "no idea")
    judgment = svc.judge(item("Paris.", "Lyon."), config)
    assert judgment.status is Status.UNPARSED
    assert judgment.error == "answer 2: no JSON object found in the output"
    assert judgment.answers == ()
    assert "no idea" in judgment.raw_output


def test_backend_error_marks_the_row_and_the_run_goes_on() -> None:
    rows = [
        InputRow(1, item("Paris.", id="a"), None, None),
        InputRow(2, item("Lyon.", id="b"), None, None),
        InputRow(3, item("Nice.", id="c"), None, None),
    ]
    svc, backend = service(
        single_json(TWO_RULE, 8), BackendError("out of memory"), single_json(TWO_RULE, 5)
    )
    judgments = list(svc.judge_rows(rows, TWO_CONFIG))
    assert [j.status for j in judgments] == [Status.OK, Status.ERROR, Status.OK]
    assert judgments[1].error == "backend failed: out of memory"
    assert judgments[1].answers == ()
    assert judgments[1].scenario == "default"
    assert judgments[2].answers[0].overall == 5.0
    assert len(backend.calls) == 3


def test_backend_error_in_swapped_order() -> None:
    svc, _ = service(pair_json(TWO_RULE, 9, 3), BackendError("timeout"))
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert judgment.status is Status.ERROR
    assert "timeout" in judgment.error


def test_anchored_without_reference_is_an_error_row() -> None:
    config = GenConfig(protocol=Protocol.ANCHORED, choice=CriteriaChoice(criteria=TWO))
    svc, backend = service()
    judgment = svc.judge(item("Paris."), config)
    assert judgment.status is Status.ERROR
    assert "'reference'" in judgment.error
    assert judgment.protocol is Protocol.ANCHORED
    assert backend.calls == []


def test_anchored_with_reference() -> None:
    config = GenConfig(protocol=Protocol.ANCHORED, choice=CriteriaChoice(criteria=TWO))
    svc, backend = service(single_json(TWO_RULE, 6))
    judgment = svc.judge(item("Paris.", reference="Paris"), config)
    assert judgment.status is Status.OK
    assert fence_body(backend.prompts[0], "REFERENCE") == "Paris"
    assert fence_body(backend.prompts[0], "CANDIDATE") == "Paris."


# --------------------------------------------------------------------------- multi


def test_multi_ranking_in_input_numbering() -> None:
    answers = ("Lyon.", "Paris.", "Paris, on the Seine.", "Marseille.")
    svc, backend = service(multi_json(TWO_RULE, 2, 9, 7, 4))
    judgment = svc.judge(item(*answers), TWO_CONFIG)
    assert judgment.status is Status.OK
    assert judgment.protocol is Protocol.MULTI
    assert judgment.ranking == (2, 3, 4, 1)
    assert [a.overall for a in judgment.answers] == [2.0, 9.0, 7.0, 4.0]
    for number, answer in enumerate(answers, start=1):
        assert fence_body(backend.prompts[0], f"ANSWER {number}") == answer


# --------------------------------------------------------------------------- criteria


def test_unknown_scenario_in_a_row_lists_valid_names() -> None:
    rows = [
        InputRow(1, item("Paris.", id="a", scenario="underwater_basket_weaving"), None, None),
        InputRow(2, item("Paris.", id="b"), None, None),
    ]
    svc, backend = service(single_json(DEFAULT_RULE, 7))
    judgments = list(svc.judge_rows(rows, GenConfig()))
    assert judgments[0].status is Status.ERROR
    assert "unknown scenario 'underwater_basket_weaving'" in judgments[0].error
    assert "default" in judgments[0].error and "math_reasoning" in judgments[0].error
    assert judgments[1].status is Status.OK
    assert judgments[1].scenario == "default"
    assert len(backend.calls) == 1


def test_unknown_criterion_is_an_error_row() -> None:
    svc, backend = service()
    judgment = svc.judge(item("x"), GenConfig(choice=CriteriaChoice(criteria=("vibes",))))
    assert judgment.status is Status.ERROR
    assert "unknown criterion 'vibes'" in judgment.error
    assert "accuracy" in judgment.error
    assert backend.calls == []


def test_default_scenario_when_none_given() -> None:
    svc, backend = service(single_json(DEFAULT_RULE, [8, 9, 7, 7, 7, 7, 7, 7, 7, 7]))
    judgment = svc.judge(item("Paris."), GenConfig())
    assert judgment.scenario == "default"
    assert judgment.criteria == DEFAULT_RULE.keys
    assert judgment.answers[0].overall == 7.5
    assert "Task type: General:" in backend.instructions[0]


def test_auto_scenario_is_detected_when_the_row_names_none() -> None:
    """The classifier picks the scenario of a request that names none; its top guesses are
    kept with their probabilities, and its pick sets the criteria and the task type."""
    rule = ScoringRule(CATALOG.specs_for("code_generation"))
    svc, backend = service(single_json(rule, 7))
    request = "Write a Python function that returns the n-th Fibonacci number."
    config = JudgeConfig(mode="generate")  # detection is on by default
    judgment = svc.judge(item("def fib(n): ...", question=request), config)
    assert judgment.status is Status.OK, judgment.error
    assert judgment.scenario == "code_generation"
    guesses = judgment.scenario_guesses
    assert next(iter(guesses)) == "code_generation" and len(guesses) == 3
    assert list(guesses.values()) == sorted(guesses.values(), reverse=True)
    assert judgment.criteria == rule.keys
    assert f"Task type: {CATALOG.scenarios['code_generation'].name}:" in backend.instructions[0]


def test_detection_leaves_a_rows_own_scenario_and_a_chosen_one_alone() -> None:
    rule = ScoringRule(CATALOG.specs_for("math_reasoning"))
    svc, _ = service(single_json(rule, 6), single_json(rule, 6))
    request = "Write a Python function that returns the n-th Fibonacci number."
    own = svc.judge(item("x", question=request, scenario="math_reasoning"), JudgeConfig(
        mode="generate"))  # fmt: skip
    chosen = svc.judge(item("x", question=request), JudgeConfig(
        mode="generate", choice=CriteriaChoice(scenario="math_reasoning")))  # fmt: skip
    for judgment in (own, chosen):
        assert judgment.scenario == "math_reasoning" and judgment.scenario_guesses is None


def test_item_scenario_is_used() -> None:
    rule = ScoringRule(CATALOG.specs_for("math_reasoning"))
    svc, backend = service(single_json(rule, 6))
    judgment = svc.judge(item("4", question="2 + 2?", scenario="math_reasoning"), GenConfig())
    assert judgment.status is Status.OK
    assert judgment.scenario == "math_reasoning"
    assert judgment.criteria == rule.keys
    assert "Task type: Math reasoning:" in backend.instructions[0]


def test_run_scenario_overrides_the_item_scenario() -> None:
    rule = ScoringRule(CATALOG.specs_for("math_reasoning"))
    svc, _ = service(single_json(rule, 6))
    config = GenConfig(choice=CriteriaChoice(scenario="math_reasoning"))
    judgment = svc.judge(item("4", scenario="default"), config)
    assert judgment.scenario == "math_reasoning"


def test_custom_criteria_replace_the_scenarios() -> None:
    config = GenConfig(choice=CriteriaChoice(scenario="math_reasoning", criteria=TWO))
    svc, backend = service(single_json(TWO_RULE, 7))
    judgment = svc.judge(item("4"), config)
    assert judgment.criteria == TWO
    assert set(judgment.answers[0].criteria) == set(TWO)
    prompt = backend.instructions[0]
    assert "- accuracy (1-10): Accuracy." in prompt
    assert "- clarity (1-10): Clarity." in prompt
    assert "final_answer_correct" not in prompt
    assert judgment.scenario == "math_reasoning"  # still the task type shown


def test_item_criteria_used_unless_the_run_sets_its_own() -> None:
    own = ("clarity", "conciseness")
    own_rule = ScoringRule(CATALOG.specs_for(None, list(own)))
    svc, _ = service(single_json(own_rule, 5), single_json(TWO_RULE, 5))
    from_item = svc.judge(item("x", criteria=own), GenConfig())
    assert from_item.criteria == own
    overridden = svc.judge(item("x", criteria=own), TWO_CONFIG)
    assert overridden.criteria == TWO


def test_rubric_choice() -> None:
    rubric = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")
    rule = ScoringRule(rubric.specs(), rubric.aggregate)
    config = GenConfig(
        protocol=Protocol.ANCHORED, choice=CriteriaChoice(criteria=TWO, rubric=rubric)
    )
    svc, backend = service(single_json(rule, [2, 3, 5, 1, 2]))
    judgment = svc.judge(
        item("A red fox.", question="Which animal?", reference="Red fox", scenario="default"),
        config,
    )
    assert judgment.status is Status.OK
    assert judgment.scenario == "rubric:vqa_animal_identification"
    assert judgment.criteria == rule.keys
    assert judgment.answers[0].overall == 13.0
    prompt = backend.instructions[0]
    assert "between 0 and 15" in prompt
    assert "- animal_family (0-3): Family." in prompt
    assert "Task type" not in prompt
    assert backend.calls[0].output.json_schema["properties"]["overall"]["enum"] == list(range(16))


# --------------------------------------------------------------------------- prompt inputs


def test_use_reference_false_removes_the_reference() -> None:
    svc, backend = service(single_json(TWO_RULE, 7), single_json(TWO_RULE, 7))
    with_ref = item("Paris.", reference="SECRET-REFERENCE-TEXT")
    svc.judge(with_ref, TWO_CONFIG)
    svc.judge(with_ref, GenConfig(choice=CriteriaChoice(criteria=TWO), use_reference=False))
    assert "SECRET-REFERENCE-TEXT" in backend.prompts[0]
    assert "SECRET-REFERENCE-TEXT" not in backend.prompts[1]
    assert "[[REFERENCE" not in backend.prompts[1]


def test_long_texts_are_cut_from_the_middle() -> None:
    long_answer = "HEAD-START " + "filler " * 1000 + " TAIL-END"
    config = GenConfig(choice=CriteriaChoice(criteria=TWO), max_input_chars=1000)
    svc, backend = service(single_json(TWO_RULE, 5), single_json(TWO_RULE, 5))
    question = "Summarise this."
    cut = svc.judge(item(long_answer, question=question), config)
    assert cut.truncated
    shown = fence_body(backend.prompts[0], "ANSWER")
    assert shown.startswith("HEAD-START")
    assert shown.endswith("TAIL-END")
    assert "characters cut" in shown
    assert len(question) + len(shown) <= 1000
    assert fence_body(backend.prompts[0], "REQUEST") == question  # short texts untouched
    # No cap: what the context holds (this backend counts no tokens: about 3 characters a
    # token, room kept for the reply).
    no_limit = replace(
        GenConfig(choice=CriteriaChoice(criteria=TWO), max_input_chars=None),
        parts=JudgeParts(context_tokens=32768),
    )
    whole = svc.judge(item(long_answer, question=question), no_limit)
    assert fence_body(backend.prompts[1], "ANSWER") == long_answer.strip()
    assert not whole.truncated


def test_sampling_and_template_are_passed_on() -> None:
    sampling = SamplingParams(temperature=0.3, max_tokens=123, seed=7)
    config = GenConfig(choice=CriteriaChoice(criteria=TWO), sampling=sampling)
    svc, backend = service(single_json(TWO_RULE, 5))
    judgment = svc.judge(item("x", metadata={"source": "unit"}), config, line=12)
    assert backend.calls[0].params is sampling
    assert backend.calls[0].system.startswith("You are PocketJudge")
    assert judgment.template == "pocketjudge"
    assert judgment.model == "fake-model"
    assert judgment.line == 12
    assert judgment.metadata == {"source": "unit"}


# --------------------------------------------------------------------------- confidence


def test_confidence_single_hand_checked() -> None:
    # accuracy {6: .5, 8: .5}, clarity {8: .6, 9: .4}; mean of the two, rounded half up:
    # 7 (.3), 7.5 -> 8 (.2), 8 (.3), 8.5 -> 9 (.2). Written 8 and 8 -> 8: P = .5
    text = single_json(TWO_RULE, [8, 8])
    dists = {("scores", "accuracy"): {6: 0.5, 8: 0.5}, ("scores", "clarity"): {8: 0.6, 9: 0.4}}
    svc, _ = service(reply(text, dists))
    judgment = svc.judge(item("Paris."), TWO_CONFIG)
    assert judgment.confidence == pytest.approx(0.5)
    scores = judgment.answers[0]
    assert scores.expected_criteria == pytest.approx({"accuracy": 7.0, "clarity": 8.4})
    assert scores.expected_overall == pytest.approx(7.7)
    assert scores.criteria == {"accuracy": 8.0, "clarity": 8.0}


def test_confidence_pairwise_hand_checked() -> None:
    # A: accuracy 8, clarity {8: .5, 9: .5} -> overall 8 or 9; B: 8 and 8 -> 8.
    # Written A = (8, 9) -> 9 beats B = 8; P(A wins) = P(A = 9) = .5
    text = pair_json(TWO_RULE, [8, 9], [8, 8])
    dists = {
        ("scores", "A", "accuracy"): {8: 1.0},
        ("scores", "A", "clarity"): {8: 0.5, 9: 0.5},
        ("scores", "B", "accuracy"): {8: 1.0},
        ("scores", "B", "clarity"): {8: 1.0},
    }
    config = GenConfig(choice=CriteriaChoice(criteria=TWO), swap=False)
    svc, _ = service(reply(text, dists))
    judgment = svc.judge(item(GOOD, BAD), config)
    assert judgment.winner == "A"
    assert judgment.confidence == pytest.approx(0.5)


def test_confidence_pairwise_swap_is_the_mean_of_both_orders() -> None:
    first = reply(
        pair_json(TWO_RULE, [8, 9], [8, 8]),
        {
            ("scores", "A", "accuracy"): {8: 1.0},
            ("scores", "A", "clarity"): {8: 0.5, 9: 0.5},
            ("scores", "B", "accuracy"): {8: 1.0},
            ("scores", "B", "clarity"): {8: 1.0},
        },
    )  # P(GOOD wins) = .5
    second = reply(
        pair_json(TWO_RULE, [8, 8], [8, 9]),
        {
            ("scores", "A", "accuracy"): {8: 1.0},
            ("scores", "A", "clarity"): {8: 1.0},
            ("scores", "B", "accuracy"): {8: 1.0},
            ("scores", "B", "clarity"): {9: 0.9, 8: 0.1},
        },
    )  # swapped: B is GOOD; P(GOOD wins) = .9
    svc, _ = service(first, second)
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert (judgment.winner, judgment.consistent) == ("A", True)
    assert judgment.confidence == pytest.approx(0.7)
    assert judgment.answers[0].expected_criteria == pytest.approx(
        {"accuracy": 8.0, "clarity": (8.5 + 8.9) / 2}
    )


def test_confidence_multi_hand_checked() -> None:
    # 1 -> 5; 2 -> 9 (.8) or (9 + 3) / 2 = 6 (.2); 3 -> 7. Ranking 2, 3, 1.
    # Confidence = 1 - P(3 beats 2) = 1 - P(answer 2 is 6) = .8
    text = multi_json(TWO_RULE, 5, 9, 7)
    dists = {
        ("scores", "1", "accuracy"): {5: 1.0},
        ("scores", "1", "clarity"): {5: 1.0},
        ("scores", "2", "accuracy"): {9: 1.0},
        ("scores", "2", "clarity"): {9: 0.8, 3: 0.2},
        ("scores", "3", "accuracy"): {7: 1.0},
        ("scores", "3", "clarity"): {7: 1.0},
    }
    svc, _ = service(reply(text, dists))
    judgment = svc.judge(item("a", "b", "c"), TWO_CONFIG)
    assert judgment.ranking == (2, 3, 1)
    assert judgment.confidence == pytest.approx(0.8)


def test_without_distributions_a_pair_is_as_sure_as_its_orders_agree() -> None:
    svc, _ = service(single_json(TWO_RULE, 8), pair_json(TWO_RULE, 9, 3), pair_json(TWO_RULE, 3, 9))
    single = svc.judge(item("Paris."), TWO_CONFIG)
    pairwise = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert single.confidence is None  # a grade needs the score probabilities
    assert pairwise.confidence == 1.0  # both orders wrote A
    for judgment in (single, pairwise):
        assert judgment.status is Status.OK
        assert all(a.expected_criteria is None for a in judgment.answers)
        assert all(a.expected_overall is None for a in judgment.answers)


def test_confidence_none_with_partial_distributions() -> None:
    text = single_json(TWO_RULE, [8, 8])
    svc, _ = service(reply(text, {("scores", "accuracy"): {8: 1.0}}))  # clarity missing
    judgment = svc.judge(item("Paris."), TWO_CONFIG)
    assert judgment.confidence is None
    assert judgment.answers[0].expected_criteria is None


# --------------------------------------------------------------------------- progress


def five_rows() -> list[InputRow]:
    return [InputRow(n, item(f"answer {n}", id=f"r{n}"), None, None) for n in range(1, 6)]


def test_should_stop_stops_early() -> None:
    svc, backend = service(*[single_json(TWO_RULE, 5)] * 5)
    seen: list[Judgment] = []
    judgments = list(
        svc.judge_rows(
            five_rows(),
            TWO_CONFIG,
            on_judgment=lambda j, p: seen.append(j),
            should_stop=lambda: len(seen) >= 2,
            window=1,  # asked between windows of rows; one row a window here
        )
    )
    assert [j.id for j in judgments] == ["r1", "r2"]
    assert len(backend.calls) == 2


def test_should_stop_before_the_first_row() -> None:
    svc, backend = service()
    assert list(svc.judge_rows(five_rows(), TWO_CONFIG, should_stop=lambda: True)) == []
    assert backend.calls == []


def test_progress_callback_counts() -> None:
    rows = [
        InputRow(1, item("a", id="ok"), None, None),
        InputRow(2, item("b", id="unparsed"), None, None),
        *read_rows(b"not json\n", name="bad.jsonl"),
        InputRow(4, item("d", id="backend"), None, None),
        InputRow(5, item("e", id="ok2"), None, None),
    ]
    svc, _ = service(
        single_json(TWO_RULE, 7), "garbage", BackendError("down"), single_json(TWO_RULE, 3)
    )
    snapshots: list[tuple[str, int, int, int, int, int | None]] = []

    def on_judgment(judgment: Judgment, progress: Tally) -> None:
        snapshots.append(
            (
                judgment.id,
                progress.done,
                progress.ok,
                progress.unparsed,
                progress.errors,
                progress.total,
            )
        )

    judgments = list(svc.judge_rows(rows, TWO_CONFIG, total=5, on_judgment=on_judgment))
    assert len(judgments) == 5
    assert [s[1:] for s in snapshots] == [
        (1, 1, 0, 0, 5),
        (2, 1, 1, 0, 5),
        (3, 1, 1, 1, 5),
        (4, 1, 1, 2, 5),
        (5, 2, 1, 2, 5),
    ]
    assert [s[0] for s in snapshots] == [j.id for j in judgments]


def test_progress_rate_and_eta() -> None:
    progress = Tally(total=4)
    assert progress.eta_s is None or progress.eta_s >= 0
    judgment = Judgment(id="x", protocol=None, status=Status.ERROR, error="e")
    progress.add(judgment)
    assert progress.done == 1 and progress.errors == 1
    assert progress.rate > 0
    assert progress.eta_s is not None and progress.eta_s >= 0
    assert Tally().eta_s is None


# --------------------------------------------------------------------------- calibrated combine
def _certain(answer_scores: dict[str, tuple[int, int]]) -> dict:
    """Distributions that put all mass on the written scores (keys A/B -> accuracy, clarity)."""
    return {
        ("scores", key, criterion): {value: 1.0}
        for key, values in answer_scores.items()
        for criterion, value in zip(TWO, values)
    }


def _biased_pair() -> tuple[Any, Any]:
    """Both orders prefer slot A, by 4 points when GOOD is there and by 1 when BAD is."""
    first = reply(pair_json(TWO_RULE, 8, 4), _certain({"A": (8, 8), "B": (4, 4)}))
    second = reply(pair_json(TWO_RULE, 6, 5), _certain({"A": (6, 6), "B": (5, 5)}))
    return first, second


def test_calibrated_combine_cancels_position_bias() -> None:
    # GOOD: 8 (slot A) and 5 (slot B) -> 6.5; BAD: 4 and 6 -> 5.0; margin +1.5 -> A
    svc, _ = service(*_biased_pair())
    config = with_changes(TWO_CONFIG, {"pair_combine": "calibrated"})
    judgment = svc.judge(item(GOOD, BAD), config)
    assert judgment.winner == "A"
    assert judgment.consistent is False  # the orders disagree; calibration still decides
    assert judgment.order_winners == ("A", "B")
    assert judgment.margin == pytest.approx(1.5)


def test_calibrated_combine_tie_margin() -> None:
    svc, _ = service(*_biased_pair())
    config = with_changes(TWO_CONFIG, {"pair_combine": "calibrated", "tie_margin": 1.5})
    assert svc.judge(item(GOOD, BAD), config).winner == "tie"


def test_agree_combine_keeps_the_flagged_tie_and_reports_the_margin() -> None:
    svc, _ = service(*_biased_pair())
    judgment = svc.judge(item(GOOD, BAD), TWO_CONFIG)
    assert (judgment.winner, judgment.consistent) == ("tie", False)
    assert judgment.margin == pytest.approx(1.5)


def test_calibrated_combine_without_distributions_falls_back_to_agreement() -> None:
    svc, _ = service(pair_json(TWO_RULE, 8, 4), pair_json(TWO_RULE, 6, 5))
    config = with_changes(TWO_CONFIG, {"pair_combine": "calibrated"})
    judgment = svc.judge(item(GOOD, BAD), config)
    assert (judgment.winner, judgment.margin) == ("tie", None)
