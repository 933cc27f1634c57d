"""Score mode on the tiny random-weight GGUF, through real llama.cpp.

Score mode reads every value from the model's probabilities and writes no free
text; it must give what full generation gives (where the distribution is peaked
enough for float noise not to flip a choice), whether the prompt prefix is
reused or evaluated afresh, and however many replies run side by side.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule, verdict_from_overall
from app.cli import main
from app.formats.output_format import ReplyLayout, output_spec
from app.formats.parsing import parse_output
from app.formats.prompts import AnswerSlot, PromptInput, get_template
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.judging.settings import with_changes
from app.records import JudgeItem, Protocol, Status
from models.backends import create_backend
from models.backends.base import BackendOptions, Generation, SamplingParams, ScoreRequest
from models.judge_settings import JudgeSettings
from tests.support.needs import need_module

need_module("llama_cpp", module_level=True)

CRITERIA = ("accuracy", "relevance", "clarity")
RULE = ScoringRule(load_catalog().specs_for(criteria_ids=list(CRITERIA)))
PEAKED = 0.05  # a choice counts when its probability beats the next one by this much
QUESTIONS = ("What is the capital of France?", "Name a primary colour.", "Is 7 a prime?")
ANSWERS = (("Paris.", "Lyon, I think."), ("Blue.", "Green is one."), ("Yes.", "No, 7 = 1 x 7."))


def backend(model: Path, **options: object):
    return create_backend(
        "llama-cpp", str(model), BackendOptions(n_ctx=4096, n_threads=1, **options)
    )


@pytest.fixture(scope="module")
def plain(tiny_gguf_model: Path) -> Iterator:
    instance = backend(tiny_gguf_model, parallel=1)
    yield instance
    instance.close()


def requests(template: str, layout: ReplyLayout) -> list[ScoreRequest]:
    result = []
    for question, answers in zip(QUESTIONS, ANSWERS):
        for order in (answers, answers[::-1]):
            prompt = PromptInput(
                Protocol.PAIRWISE,
                question,
                (AnswerSlot("A", order[0]), AnswerSlot("B", order[1])),
                RULE,
            )
            messages = tuple(get_template(template).render(prompt))
            result.append(ScoreRequest(messages, output_spec(Protocol.PAIRWISE, RULE, 2, layout)))
    return result


def assert_same_reading(one: Generation, two: Generation, tolerance: float = 1e-3) -> None:
    """Same positions, probabilities within `tolerance`, same choice where peaked."""
    assert [d.path for d in one.distributions] == [d.path for d in two.distributions]
    for a, b in zip(one.distributions, two.distributions):
        assert a.entropy is not None and b.entropy is not None, a.path
        assert a.entropy == pytest.approx(b.entropy, abs=10 * tolerance), a.path
        for value in a.probs:
            assert a.probs[value] == pytest.approx(b.probs[value], abs=tolerance), a.path
        ranked = sorted(a.probs.values(), reverse=True)
        if ranked[0] - ranked[1] > PEAKED:
            assert max(a.probs, key=a.probs.get) == max(b.probs, key=b.probs.get)


@pytest.mark.parametrize(
    ("template", "decision_first"),
    [("pocketjudge", False), ("pocketjudge-decision", True)],
)
def test_score_mode_reads_what_generation_writes(
    plain, template: str, decision_first: bool
) -> None:
    layout = ReplyLayout(decision_first=decision_first, feedback=False)
    batch = requests(template, layout)
    scored = plain.score(batch)
    generated = [
        plain.generate(r.messages, SamplingParams(max_tokens=400), r.output) for r in batch
    ]
    for score, generation in zip(scored, generated):
        assert score.error is None and score.finish_reason == "stop"
        parse_output(score.text, Protocol.PAIRWISE, RULE, 2, layout)  # valid, consistent
        assert_same_reading(score, generation)
        assert json.loads(score.text) == json.loads(generation.text) or any(
            sorted(d.probs.values())[-1] - sorted(d.probs.values())[-2] <= PEAKED
            for d in score.distributions
        )


def test_the_decision_comes_first_and_the_scores_agree_with_it(plain) -> None:
    layout = ReplyLayout(decision_first=True, feedback=False)
    for generation in plain.score(requests("pocketjudge-decision", layout)):
        data = json.loads(generation.text)
        assert list(data) == ["verdict", "scores"]
        assert generation.distributions[0].path == ("verdict",)
        overall = [RULE.rounded_overall(data["scores"][key]) for key in ("A", "B")]
        assert verdict_from_overall(*overall) == data["verdict"]


def test_without_criteria_the_reply_is_the_verdict_alone(plain) -> None:
    layout = ReplyLayout(decision_first=True, criteria=False, feedback=False)
    for generation in plain.score(requests("pocketjudge-decision", layout)):
        assert list(json.loads(generation.text)) == ["verdict"]
        [distribution] = generation.distributions
        assert set(distribution.probs) == {'"A"', '"B"', '"tie"'}
        assert sum(distribution.probs.values()) == pytest.approx(1.0)


@pytest.mark.parametrize("options", [{"prefix_cache": False}, {"parallel": 3}])
def test_prefix_reuse_and_parallel_sequences_do_not_change_results(
    plain, tiny_gguf_model: Path, options: dict
) -> None:
    layout = ReplyLayout(decision_first=False, feedback=False)
    batch = requests("pocketjudge", layout)
    reused = plain.score(batch)
    again = plain.score(batch)  # everything cached now: the same again
    other = backend(tiny_gguf_model, **options)
    try:
        fresh = other.score(batch)
    finally:
        other.close()
    for one, two, three in zip(reused, again, fresh):
        assert_same_reading(one, two, tolerance=1e-6)
        assert_same_reading(one, three)


def test_a_prompt_too_long_fails_alone(tiny_gguf_model: Path) -> None:
    small = backend(tiny_gguf_model, parallel=1)
    try:
        layout = ReplyLayout(feedback=False)
        short = requests("pocketjudge", layout)[0]
        long_prompt = PromptInput(
            Protocol.PAIRWISE, "word " * 5000, (AnswerSlot("A", "a"), AnswerSlot("B", "b")), RULE
        )
        too_long = ScoreRequest(tuple(get_template().render(long_prompt)), short.output)
        first, second = small.score([too_long, short])
    finally:
        small.close()
    assert first.error and "context holds 4096" in first.error
    assert second.error is None and second.text


# --------------------------------------------------------------------------- through the service


def test_every_judgment_has_a_confidence(plain) -> None:
    service = JudgeService(plain, "tiny")
    config = JudgeConfig(
        choice=CriteriaChoice(criteria=CRITERIA),
        judge=JudgeSettings(template="pocketjudge-decision"),
    )
    items = [
        JudgeItem(id="s", question=QUESTIONS[0], answers=ANSWERS[0][:1]),
        JudgeItem(id="p", question=QUESTIONS[0], answers=ANSWERS[0]),
        JudgeItem(id="m", question=QUESTIONS[0], answers=(*ANSWERS[0], "Marseille.")),
    ]
    for template in ("pocketjudge", "pocketjudge-decision"):
        for item in items:
            judgment = service.judge(item, with_changes(config, {"template": template}))
            assert judgment.status is Status.OK, judgment.error
            assert judgment.mode == "score"
            assert judgment.confidence is not None and 0 <= judgment.confidence <= 1


def test_long_items_are_cut_to_the_context_and_flagged(plain) -> None:
    service = JudgeService(plain, "tiny")
    long_answer = "Paris is the capital. " * 800
    item = JudgeItem(id="long", question=QUESTIONS[0], answers=(long_answer, "Lyon."))
    config = JudgeConfig(
        choice=CriteriaChoice(criteria=CRITERIA), parts=JudgeParts(context_tokens=1024)
    )
    judgment = service.judge(item, config)
    assert judgment.status is Status.OK, judgment.error
    assert judgment.truncated
    assert not service.judge(
        item.model_copy(update={"answers": ("Paris.", "Lyon.")}), config
    ).truncated


def test_uncertain_verdicts_are_labelled_in_the_jsonl_and_the_csv(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source = tmp_path / "pairs.jsonl"
    rows = [
        {"id": f"r{n}", "question": q, "answers": list(a)}
        for n, (q, a) in enumerate(zip(QUESTIONS, ANSWERS))
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out, table = tmp_path / "out.jsonl", tmp_path / "out.csv"
    code = main(
        ["judge", str(source), "--out", str(out), "--csv", str(table), "--model",
         str(tiny_gguf_model), "--threads", "1", "--uncertain-below", "0.99", "--quiet"]
    )  # fmt: skip
    assert code == 0
    judged = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # A random model is never 99 % sure: every verdict is uncertain, each with its leaning.
    assert [j["winner"] for j in judged] == ["uncertain"] * 3
    assert all(j["uncertain"] and j["leaning"] in ("A", "B", "tie") for j in judged)
    with open(table, encoding="utf-8", newline="") as stream:
        written = list(csv.DictReader(stream))
    assert [r["winner"] for r in written] == ["uncertain"] * 3
    assert [r["leaning"] for r in written] == [j["leaning"] for j in judged]


def test_the_decision_entropy_is_that_of_the_whole_vocabulary(plain) -> None:
    """At the verdict the tiny model spreads its mass over far more than the three
    candidates: the entropy lies between theirs (at most log 3) and log(vocabulary)."""
    layout = ReplyLayout(decision_first=True, criteria=False, feedback=False)
    vocabulary = plain.llama.n_vocab()
    for generation in plain.score(requests("pocketjudge-decision", layout)):
        [distribution] = generation.distributions
        assert distribution.entropy is not None
        assert math.log(3) < distribution.entropy <= math.log(vocabulary) + 1e-6


def test_every_protocol_gets_a_decision_entropy_and_an_entropy_calibration(plain) -> None:
    """The judgment's entropy is the mean of its decision positions' (both orders of a
    pair), and a judge calibrated on entropy maps it, through the real model."""
    from app.deciding.calibration import ConfidenceCalibration

    calibration = ConfidenceCalibration(indicator="entropy", at=(0.0, 20.0), right=(0.9, 0.1))
    service = JudgeService(plain, "tiny")
    base = JudgeConfig(
        choice=CriteriaChoice(criteria=CRITERIA),
        detect_scenario=False,
        judge=JudgeSettings(template="pocketjudge-decision"),
        parts=JudgeParts(calibrator=calibration),
    )
    pair = JudgeItem(id="p", question=QUESTIONS[0], answers=ANSWERS[0])
    for item in (pair, JudgeItem(id="s", question=QUESTIONS[0], answers=ANSWERS[0][:1])):
        judgment = service.judge(item, base)
        assert judgment.status is Status.OK and judgment.entropy is not None
        assert 0 < judgment.entropy <= math.log(plain.llama.n_vocab())
        assert judgment.calibrated_confidence == calibration(judgment.entropy)
    layout = ReplyLayout(decision_first=True, feedback=False)
    both = plain.score(requests("pocketjudge-decision", layout)[:2])  # the pair, both orders
    expected = sum(g.distributions[0].entropy for g in both) / 2
    judged = service.judge(pair, replace(base, parts=replace(base.parts, calibrator=None)))
    assert judged.entropy == pytest.approx(expected, abs=1e-3)
