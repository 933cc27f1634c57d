"""The state head: its file checked on load, its score's parts, and judgments made from the
hidden states of the tiny real model through llama.cpp (the backend's `state_features`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from app.deciding.decision import Decision, DecisionRecord, decide
from app.deciding.signals import AnswerReads
from app.deciding.state_head import StateHead, load_state_head, state_text
from app.deciding.state_judging import answer_values
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.records import JudgeItem, Protocol, Status
from models.backends.base import BackendOptions, Capabilities
from models.foundation.errors import ConfigError
from models.readings import pooled
from tests.support.fake_backend import FakeBackend
from tests.support.head_configs import head_alone, record_of

PAIR = JudgeItem(
    id="p",
    question="Which planet is closest to the sun?",
    answers=("Mercury.", "Venus is the hottest planet, but the closest one is Mercury."),
)


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "state_head.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    load_state_head.cache_clear()
    return path


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"base_file": "m.gguf", "weights": [1.0, 2.0, 3.0]}, "weights"),
        ({"base_file": "m.gguf", "weights": [1.0, 2.0], "grade_weights": [1.0]}, "weights"),
        ({"weights": [1.0, 2.0]}, "base_file"),
        ({"base_file": "m.gguf", "weights": [1.0, 2.0], "bias": 1.0}, "bias"),
        # a weight beside the states belongs in the judge's decision record
        ({"base_file": "m.gguf", "weights": [1.0, 2.0], "relevance": 1.0}, "relevance"),
        ({"base_file": "m.gguf", "weights": []}, "weights"),  # reads no states, no likelihoods
    ],
)
def test_a_bad_head_file_names_the_file_and_the_field(tmp_path, data, field):
    path = _write(tmp_path, data)
    with pytest.raises(ConfigError) as error:
        load_state_head(path)
    assert str(path) in str(error.value) and field in str(error.value)


def test_a_missing_or_broken_head_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_state_head(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_state_head(broken)


def pair_decision(record: DecisionRecord, first: dict, second: dict) -> Decision:
    """The decision record applied to A's lead in each of its signals."""
    return decide(record, {name: first[name] - second[name] for name in first})


def test_the_score_is_the_sum_of_its_parts():
    head = StateHead(base_file="m.gguf", weights=(1.0, -2.0))
    item = JudgeItem(id="p", question="q", answers=("aaaa", "aa"))
    reads = AnswerReads(
        [np.array([1.0, 1.0]), np.array([0.0, 2.0])], [None] * 2, [], [], [0.1, 0.0]
    )
    first, second = answer_values(item, head, reads, relevance=True)
    decision = pair_decision(record_of(states=1.0, relevance=3.0, length=0.5), first, second)
    shares = decision.shares
    assert shares["states"] == pytest.approx(1.0 * 1 + -2.0 * -1)
    assert shares["relevance"] == pytest.approx(0.3)
    assert shares["length"] == pytest.approx(0.5 * math.log(2), abs=1e-4)
    assert decision.score == pytest.approx(
        shares["states"] + shares["relevance"] + shares["length"]
    )
    assert decision.p_a == pytest.approx(1 / (1 + math.exp(-decision.score)))


def test_features_of_another_size_name_the_model_the_head_was_fitted_on():
    head = StateHead(base_file="fitted-on.gguf", weights=(1.0, 1.0))
    with pytest.raises(ValueError, match=r"fitted-on\.gguf"):
        answer_values(PAIR, head, AnswerReads([np.ones(4)] * 2, [None] * 2, [], []), False)


def test_the_text_read_is_the_request_and_the_answer_cut():
    text = state_text("q" * 500, "a" * 900)
    assert text == f"Request: {'q' * 400}\n\nAnswer: {'a' * 800}"
    assert pooled([[1.0, 2.0], [3.0, 6.0]]).tolist() == [2.0, 4.0, 3.0, 6.0]


# -- the real tiny model ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_service(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=4096, n_threads=1))
    yield JudgeService(backend, "tiny-head"), backend
    backend.close()


@pytest.fixture(scope="module")
def head(tiny_service) -> StateHead:
    _, backend = tiny_service
    size = backend.state_features("x").shape[0]
    rng = np.random.default_rng(0)
    return StateHead(
        base_file="tiny.gguf",
        weights=tuple(rng.normal(size=size).tolist()),
        grade_weights=tuple((0.01 * rng.normal(size=size)).tolist()),
    )


# the fixture head's rule: its states and length, and its grade head's w . f plus 5
RECORD = record_of({"grade_states": 1.0}, 5.0, states=1.0, length=0.7)


def alone(head: StateHead, protocol: Protocol, **more) -> JudgeConfig:
    return head_alone(head, protocol, RECORD, **more)


def test_the_verdict_is_the_same_in_both_orders(tiny_service, head):
    service, backend = tiny_service
    judged = service.judge(PAIR, alone(head, Protocol.PAIRWISE))
    swapped = PAIR.model_copy(update={"answers": PAIR.answers[::-1]})
    mirrored = service.judge(swapped, alone(head, Protocol.PAIRWISE))
    assert judged.status is Status.OK and judged.mode == "score"
    assert judged.verdict_probs["A"] == pytest.approx(mirrored.verdict_probs["B"], abs=1e-3)
    assert {judged.winner, mirrored.winner} == {"A", "B"}
    assert judged.consistent and judged.order_winners == (judged.winner, judged.winner)
    assert judged.prompt_tokens is None and judged.raw_output is None  # no reply generated
    # the parts come from the model's states of each answer, read through llama.cpp
    features = [backend.state_features(state_text(PAIR.question, a)) for a in PAIR.answers]
    reads = AnswerReads(features, [None] * 2, [], [])
    expected = pair_decision(RECORD, *answer_values(PAIR, head, reads, relevance=False))
    parts = judged.verdict_parts
    for name in ("states", "length"):
        assert parts[name] == pytest.approx(expected.shares[name], abs=1e-3)
    assert parts["score"] == pytest.approx(expected.score, abs=1e-3)
    assert parts["score"] == pytest.approx(parts["states"] + parts["length"], abs=1e-3)
    assert judged.verdict_probs["A"] == pytest.approx(expected.p_a, abs=1e-3)


def test_a_close_pair_is_a_tie_within_the_band_and_shown_uncertain(tiny_service, head):
    service, _ = tiny_service
    judged = service.judge(PAIR, alone(head, Protocol.PAIRWISE))
    p_a = judged.verdict_probs["A"]
    band = abs(p_a - 0.5) + 1e-3
    tied = service.judge(PAIR, alone(head, Protocol.PAIRWISE, tie_margin=band))
    assert tied.leaning == "tie"
    unsure = service.judge(
        PAIR, alone(head, Protocol.PAIRWISE, uncertain_below=judged.confidence + 0.01)
    )
    assert unsure.winner == "uncertain" and unsure.leaning == judged.leaning


def test_a_ranking_follows_the_pairwise_head(tiny_service, head):
    service, _ = tiny_service
    three = PAIR.model_copy(update={"answers": (*PAIR.answers, "It is Mars, I think.")})
    ranked = service.judge(three, alone(head, Protocol.MULTI))
    assert ranked.status is Status.OK and sorted(ranked.ranking) == [1, 2, 3]
    best, second = ranked.ranking[:2]
    pair = three.model_copy(
        update={"answers": (three.answers[best - 1], three.answers[second - 1])}
    )
    assert service.judge(pair, alone(head, Protocol.PAIRWISE)).leaning == "A"


def test_grades_come_from_the_grade_head(tiny_service, head):
    service, backend = tiny_service
    item = JudgeItem(id="s", question=PAIR.question, answers=(PAIR.answers[0],))
    graded = service.judge(item, alone(head, Protocol.SINGLE))
    features = backend.state_features(state_text(item.question, item.answers[0]))
    value = 5.0 + float(np.dot(head.grade_weights, features))
    assert graded.status is Status.OK
    assert graded.answers[0].expected_overall == pytest.approx(min(max(value, 1), 10), abs=1e-3)
    assert graded.answers[0].overall == round(graded.answers[0].expected_overall)


def test_without_a_grade_head_grades_come_from_the_model(tiny_service, head):
    service, _ = tiny_service
    no_grades = head.model_copy(update={"grade_weights": None})
    item = JudgeItem(id="s", question=PAIR.question, answers=(PAIR.answers[0],))
    ungraded = record_of(states=1.0, length=0.7)
    config = head_alone(no_grades, Protocol.SINGLE, ungraded, template="pocketjudge")
    graded = service.judge(item, config)
    assert graded.raw_output  # the model's reply was read, not the head
    assert graded.verdict_parts is None


def test_a_backend_that_cannot_read_states_gives_a_clear_error(head):
    backend = FakeBackend([], capabilities=Capabilities(grammar=True, score_distributions=True))
    judged = JudgeService(backend, "remote").judge(PAIR, alone(head, Protocol.PAIRWISE))
    assert judged.status is Status.ERROR and "llama-cpp backend" in judged.error


def test_the_app_says_what_moved_a_head_verdict():
    from app.ui.views import head_note

    note = head_note({"states": 0.8, "relevance": -1.25, "length": 0.0, "score": -0.45})
    assert "reading of the answers: 0.80 toward A" in note
    assert "request relevance: 1.25 toward B" in note
    assert note.index("request relevance") < note.index("reading of")  # largest first
    assert "length" not in note  # a signal the head does not use is not named
    assert "relevance rewards the request's topic, not correctness" in note
    assert "reads neither the criteria nor a reference" in note
    anchored = head_note({"states": 0.8, "reference": 0.5, "score": 1.3})
    assert "a reference reaches it)" in anchored  # saved before its share was split
    assert "agrees with the reference answer: 0.50" in anchored
    assert "reference decided" not in anchored  # the head leaned to A without it too
    turned = head_note({"states": -0.3, "reference": 0.5, "reference_words": 0.5, "score": 0.2})
    assert "reaches it through how much of what the reference states each answer" in turned
    assert "**The reference decided this verdict**: without it the head leaned to B." in turned
    checked = head_note({"states": -0.3, "reference": 0.9, "reference_check": 0.9, "score": 0.6})
    assert "the judge's check of each answer against the reference" in checked
    ran = {"reference_behaviour_difference": -0.6667, "reference_behaviour_inputs": 27}
    run = head_note({"states": 0.3, "reference": -40.0, "reference_behaviour": -40.0,
                     "score": -39.7, **ran})  # fmt: skip
    assert "each answer's function compared with the reference's on the same inputs" in run
    assert "was run beside the reference function in the jail on 27 inputs" in run
    assert "on 27 inputs: answer B's gave its result on 67% more of them." in run
    assert "without it the head leaned to A" in run
    even = head_note({"states": 0.3, "score": 0.3, **ran, "reference_behaviour_difference": 0.0})
    assert "gave its result equally often" in even


def test_the_registry_turns_the_head_on_and_the_flag_off(tmp_path, monkeypatch):
    from app.judging.arguments import judging_overrides
    from app.judging.settings import SettingsLayer, judge_config
    from models import judge_settings
    from models.registry import ModelEntry
    from training.decision.record_file import record_text
    from training.evaluation.evaluate import _parser

    folder = tmp_path / "judges" / "j"
    folder.mkdir(parents=True)
    (folder / "state_head.json").write_text(
        json.dumps({"base_file": "j.gguf", "weights": [0.5, -0.5]}), encoding="utf-8"
    )
    monkeypatch.setattr(judge_settings, "_MODELS_DIR", tmp_path)
    import app.judging.settings as model_settings

    monkeypatch.setattr(model_settings, "MODELS_DIR", tmp_path)
    head = {"state_head": "judges/j/state_head.json"}
    entry = ModelEntry(name="j", backend="llama-cpp", file="j.gguf", judging=head)
    with pytest.raises(ConfigError, match=r"decision_record: the state head .* decides by"):
        judge_config(entry)  # its weights are in no record
    record = record_of(states=1.0).model_dump(mode="json", exclude_defaults=True)
    (folder / "decision.yaml").write_text(record_text(record), encoding="utf-8")
    judging = head | {"decision_record": "judges/j/decision.yaml"}
    entry = ModelEntry(name="j", backend="llama-cpp", file="j.gguf", judging=judging)
    assert judge_config(entry).parts.head.weights == (0.5, -0.5)
    assert judge_config(entry).parts.decision.weights() == {"states": 1.0}
    assert judge_config(entry, SettingsLayer(state_head=False)).parts.head is None
    assert (
        judging_overrides(_parser().parse_args(["x.jsonl", "--no-state-head"])).state_head is False
    )
    with pytest.raises(ValueError, match=r"absent\.json: state_head: file not found"):
        ModelEntry(
            name="k", backend="llama-cpp", file="k.gguf", judging={"state_head": "absent.json"}
        )


def test_the_backend_reads_the_states_a_reader_of_its_own_reads(tiny_service, tiny_gguf_model):
    """The backend's reader shares its loaded weights (one copy in memory) and reads
    exactly what training read through a reader on the file."""
    from models.backends.state_reader import StateReader

    _, backend = tiny_service
    text = state_text(PAIR.question, PAIR.answers[1])
    own = StateReader.open(tiny_gguf_model, n_threads=1)
    try:
        assert np.array_equal(backend.state_features(text), own.features(text))
    finally:
        own.close()
    assert backend._state_reader._llama is backend.llama
