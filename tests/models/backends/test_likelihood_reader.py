"""The likelihood reader on the tiny real model: its log-probabilities equal those of an
independent full read (llama-cpp-python with logits for every position), whatever it
kept in its cache from the read before, and the states come from the same pass."""

from __future__ import annotations

import numpy as np
import pytest

from models.readings import HEAD_TOKENS, likelihood_features
from tests.support.read_counter import counted_requests

QUESTION = "Which planet is closest to the sun?"
ANSWERS = ("Mercury.", "Venus is the hottest planet, but the closest one is Mercury.")


def _reference(full_reader, prompt: list[int], answer: list[int]) -> np.ndarray:
    full_reader.reset()
    full_reader.eval(prompt + answer)
    scores = np.asarray(full_reader.scores[: len(prompt) + len(answer)], dtype=np.float64)
    rows = scores[len(prompt) - 1 : -1]
    top = rows.max(axis=1, keepdims=True)
    logsumexp = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
    return rows[np.arange(len(answer)), answer] - logsumexp


def _answer_tokens(backend, answer: str) -> list[int]:
    return [*backend._tokenize_text(answer), backend._end_of_turn_token()]


def test_the_logprobs_equal_a_full_read_whatever_the_cache_held(backend, full_reader):
    reads = [
        (QUESTION, ANSWERS[0]),
        (QUESTION, ANSWERS[1]),
        ("", ANSWERS[1]),
        (QUESTION, ANSWERS[0]),
    ]
    for request, answer in reads:  # the second read reuses the request, the third none of it
        reading = backend.read_reply(request, answer)
        tokens = _answer_tokens(backend, answer)
        expected = _reference(full_reader, backend._reply_prompt(request), tokens)
        assert reading.logprobs.shape == (len(tokens),)
        np.testing.assert_allclose(reading.logprobs, expected, atol=2e-3)
        assert (reading.logprobs < 0).all()
        assert reading.states.shape == (len(tokens), backend.llama.n_embd())


def test_the_request_read_and_the_free_read_differ_and_give_the_features(backend):
    readings = backend.read_answers(QUESTION, ANSWERS)
    first = readings[0]
    assert first.cond.shape == first.uncond.shape
    assert not np.allclose(first.cond, first.uncond)  # the request changes the likelihood
    features = first.features()
    assert features["pmi_sum"] == pytest.approx(float((first.cond - first.uncond).sum()))
    assert features["cond_mean"] == pytest.approx(float(first.cond.mean()))
    assert features["log_tokens"] == pytest.approx(np.log(first.cond.size))
    # the pooled states: mean then last of the request-read's states
    reading = backend.read_reply(QUESTION, ANSWERS[0])
    np.testing.assert_allclose(
        first.states, np.concatenate([reading.states.mean(0), reading.states[-1]]), atol=1e-4
    )


def test_a_head_that_reads_states_alone_reads_each_answer_once(backend, monkeypatch):
    """Without the reads after an empty request (a reward model's head reads states alone)
    each answer is read once, its states as the full reading's and its `uncond` empty."""
    full = backend.read_answers(QUESTION, ANSWERS)
    requests = counted_requests(monkeypatch, backend)
    alone = backend.read_answers(QUESTION, ANSWERS, unconditioned=False)
    assert requests == [QUESTION, QUESTION]
    for one, both in zip(alone, full, strict=True):
        assert one.uncond.size == 0 and one.cond.size == both.cond.size
        np.testing.assert_allclose(one.states, both.states, atol=1e-4)


def test_an_answer_longer_than_the_context_is_cut_not_failed(backend):
    long_answer = "word " * 3000
    reading = backend.read_reply(QUESTION, long_answer)
    assert 0 < reading.logprobs.size < 1024


def test_the_features_from_token_logprobs():
    cond = [-1.0] * 20
    uncond = [-2.0] * 20
    features = likelihood_features(cond, uncond)
    assert features["pmi_mean"] == pytest.approx(1.0)
    assert features["pmi_sum"] == pytest.approx(20.0)
    assert features["pmi_head"] == pytest.approx(float(HEAD_TOKENS))
    assert features["uncond_sum"] == pytest.approx(-40.0)
    with pytest.raises(ValueError, match="same"):
        likelihood_features([-1.0], [-1.0, -2.0])
