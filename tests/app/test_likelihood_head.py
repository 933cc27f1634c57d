"""A head that reads each answer as the model's own reply: likelihood features (PMI) beside
the states of the same pass, judged through the service on the tiny real model; the
likelihood judge (`--decider likelihood`) on any GGUF; the parts in words."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.deciding.decision import decide, load_decision, sigmoid
from app.deciding.signals import AnswerReads
from app.deciding.state_head import (
    LIKELIHOOD_DECISION_FILE,
    LIKELIHOOD_HEAD,
    StateHead,
    likelihood_judge_head,
    part_phrases,
)
from app.deciding.state_judging import answer_values
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.records import JudgeItem, Judgment, Protocol, Status
from models.backends.base import BackendOptions, Capabilities
from models.readings import FEATURES
from tests.support.fake_backend import FakeBackend
from tests.support.head_configs import head_alone, record_of
from tests.support.read_counter import counted_requests

PAIR = JudgeItem(
    id="p",
    question="Which planet is closest to the sun?",
    answers=("Mercury.", "Venus is the hottest planet, but the closest one is Mercury."),
)


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=2048, n_threads=1))
    yield JudgeService(backend, "tiny-likelihood"), backend
    backend.close()


@pytest.fixture(scope="module")
def head(tiny) -> StateHead:
    _, backend = tiny
    size = backend.read_answers("q", ["a"])[0].states.shape[0]
    rng = np.random.default_rng(1)
    return StateHead(
        base_file="tiny.gguf",
        reads="reply",
        weights=tuple((0.05 * rng.normal(size=size)).tolist()),
        grade_weights=(),
    )


# the fixture head's rule: its states and four likelihood features; grades of two plus 5
LIKELIHOOD = {"pmi_mean": 1.5, "pmi_sum": 0.05, "uncond_mean": -0.3, "log_tokens": 0.2}
RECORD = record_of({"pmi_mean": 0.5, "cond_mean": 0.2}, 5.0, states=1.0, **LIKELIHOOD)


def alone(head: StateHead, protocol: Protocol, **more) -> JudgeConfig:
    return head_alone(head, protocol, RECORD, **more)


def test_a_pair_is_judged_from_its_likelihoods_and_states_in_either_order(tiny, head):
    service, backend = tiny
    judged = service.judge(PAIR, alone(head, Protocol.PAIRWISE))
    swapped = PAIR.model_copy(update={"answers": PAIR.answers[::-1]})
    mirrored = service.judge(swapped, alone(head, Protocol.PAIRWISE))
    assert judged.status is Status.OK and judged.raw_output is None
    assert judged.verdict_probs["A"] == pytest.approx(mirrored.verdict_probs["B"], abs=1e-3)
    readings = backend.read_answers(PAIR.question, list(PAIR.answers))
    nothing = [None, None]
    reads = AnswerReads(
        [r.states for r in readings], [r.features() for r in readings], *[nothing] * 2
    )
    first, second = answer_values(PAIR, head, reads, relevance=False)
    expected = decide(RECORD, {name: first[name] - second[name] for name in first})
    parts = judged.verdict_parts
    for name in ("states", "fit", "fluency", "length"):
        assert parts[name] == pytest.approx(expected.shares.get(name, 0.0), abs=1e-3)
    assert parts["score"] == pytest.approx(expected.score, abs=1e-3)
    assert parts["fit"] == pytest.approx(
        1.5 * parts["pmi_mean_difference"] + 0.05 * parts["pmi_sum_difference"], abs=1e-3
    )
    assert judged.verdict_probs["A"] == pytest.approx(sigmoid(parts["score"]), abs=1e-3)
    assert {f"{name}_difference" for name in FEATURES} <= set(parts)


def test_grades_and_rankings_come_from_the_same_reads(tiny, head):
    service, backend = tiny
    single = JudgeItem(id="s", question=PAIR.question, answers=(PAIR.answers[0],))
    graded = service.judge(single, alone(head, Protocol.SINGLE))
    features = backend.read_answers(PAIR.question, [PAIR.answers[0]])[0].features()
    value = 5.0 + 0.5 * features["pmi_mean"] + 0.2 * features["cond_mean"]
    assert graded.answers[0].expected_overall == pytest.approx(min(max(value, 1), 10), abs=1e-3)
    three = PAIR.model_copy(update={"answers": (*PAIR.answers, "It is Mars, I think.")})
    ranked = service.judge(three, alone(head, Protocol.MULTI))
    best, second = ranked.ranking[:2]
    pair = three.model_copy(
        update={"answers": (three.answers[best - 1], three.answers[second - 1])}
    )
    assert service.judge(pair, alone(head, Protocol.PAIRWISE)).leaning == "A"


def test_the_likelihood_judge_needs_no_states_and_follows_pmi(tiny):
    """The shipped likelihood-only head works with a model it was not fitted on."""
    service, _backend = tiny
    rule = likelihood_judge_head()
    record = load_decision(LIKELIHOOD_HEAD.with_name(LIKELIHOOD_DECISION_FILE))
    assert not rule.weights and set(record.weights()) <= set(FEATURES)
    judged = service.judge(PAIR, head_alone(rule, Protocol.PAIRWISE, record))
    parts = judged.verdict_parts
    expected = sum(w * parts[f"{name}_difference"] for name, w in record.weights().items())
    assert judged.status is Status.OK
    assert parts["score"] == pytest.approx(expected, abs=2e-3)
    assert judged.leaning == ("A" if expected > 0 else "B")


def test_a_backend_without_likelihoods_gives_a_clear_error(head):
    backend = FakeBackend([], capabilities=Capabilities(grammar=True, states=True))
    judged = JudgeService(backend, "remote").judge(PAIR, alone(head, Protocol.PAIRWISE))
    assert judged.status is Status.ERROR
    assert "likelihoods" in judged.error and "llama-cpp backend" in judged.error
    # with criterion scores asked for, none is read for a judgment that cannot be made
    asked = alone(head, Protocol.PAIRWISE, criterion_scores=True)
    assert JudgeService(backend, "remote").judge(PAIR, asked).status is Status.ERROR
    assert backend.calls == []


def test_the_cli_decider_judges_any_gguf_by_likelihood(tiny_gguf_model, tmp_path):
    from app.cli import main

    source = tmp_path / "pairs.jsonl"
    source.write_text(
        json.dumps({"id": "p", "question": PAIR.question, "answers": list(PAIR.answers)}) + "\n"
    )
    out = tmp_path / "out.jsonl"
    args = ["judge", str(source), "--out", str(out), "--model", str(tiny_gguf_model)]
    assert main([*args, "--threads", "1", "--quiet", "--decider", "likelihood"]) == 0
    judged = Judgment.model_validate_json(out.read_text().splitlines()[0])
    assert judged.status is Status.OK
    assert "fit" in judged.verdict_parts and "pmi_mean_difference" in judged.verdict_parts
    # criterion scores are read beside the verdict unless turned off
    assert judged.criteria and judged.criteria_verdict is not None and judged.raw_output
    fast = [*args, "--threads", "1", "--quiet", "--decider", "likelihood", "--no-criteria"]
    assert main(fast) == 0
    judged = Judgment.model_validate_json(out.read_text().splitlines()[0])
    assert judged.status is Status.OK and judged.raw_output is None and not judged.answers


def test_a_head_file_holds_its_vectors_alone(tmp_path):
    """A likelihood weight belongs in the judge's decision record: a head file holding one is
    refused, naming the field; a head without states reads the answers as replies."""
    from app.deciding.state_head import load_state_head
    from models.foundation.errors import ConfigError

    path = tmp_path / "head.json"
    path.write_text(
        json.dumps({"base_file": "m", "reads": "reply", "weights": [], "likelihood": {"pmi": 1}})
    )
    load_state_head.cache_clear()
    with pytest.raises(ConfigError, match=r"likelihood"):
        load_state_head(path)
    path.write_text(json.dumps({"base_file": "m", "weights": []}))
    load_state_head.cache_clear()
    with pytest.raises(ConfigError, match=r"reads: reply"):
        load_state_head(path)


def test_the_parts_in_words_largest_first():
    said = part_phrases({"states": -0.2, "fit": 0.8, "fluency": 0.0, "length": 0.0, "score": 0.6})
    assert said[0].startswith("fits the request") and said[0].endswith("0.80 toward A")
    assert said[1] == "the model's reading of the answers: 0.20 toward B"
    assert len(said) == 2  # signals that pushed nowhere are not named


def test_a_head_of_states_alone_reads_each_answer_once(tiny, head, monkeypatch) -> None:
    """A reward model's head (states, no likelihood features) judges a pair from one read of
    each answer after its request: the reads after an empty request are not made."""
    service, backend = tiny
    requests = counted_requests(monkeypatch, backend)
    judged = service.judge(PAIR, head_alone(head, Protocol.PAIRWISE, record_of(states=1.0)))
    assert judged.status is Status.OK
    assert requests == [PAIR.question, PAIR.question]
    requests.clear()
    service.judge(PAIR, alone(head, Protocol.PAIRWISE))
    assert requests.count("") == 2  # the likelihood head reads after none too
