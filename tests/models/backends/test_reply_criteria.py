"""Criterion scores read on from an answer's read, on the tiny real model: each criterion's
level probabilities equal those of an independent read of the whole sequence (the request,
the answer, the judge's turn and the reply up to the value) by llama-cpp-python, look-ahead
included; the answer's own read is the same with or without them, and the reader's cache
is left as it was. A check (true or false, after the criteria) is read the same way."""

from __future__ import annotations

import numpy as np
import pytest

from models.backends import likelihood_reader
from models.backends.likelihood_reader import BRANCHES, LikelihoodReader
from models.backends.reply_criteria import continuation, split_check, turn_text
from models.backends.value_reader import Feed, candidate_probs
from models.foundation.errors import BackendError
from models.readings import CHECK_LEVELS, ReplyCriteria

QUESTION = "Which planet is closest to the sun?"
ANSWERS = ("Mercury.", "Venus is the hottest planet, but the closest one is Mercury.")
TEN = tuple(str(level) for level in range(1, 11))  # "1" starts 1 and 10: a look-ahead
FIVE = tuple(str(level) for level in range(1, 6))
CRITERIA = ReplyCriteria(
    message="Grade the reply above on each criterion:\n- accuracy\n- clarity (1 to 5)",
    keys=("accuracy", "clarity"),
    levels=(TEN, FIVE),
)


def _tokens(backend, text: str, special: bool) -> list[int]:
    return backend.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)


def _expected(backend, full_reader, answer: str, criteria: ReplyCriteria) -> list[dict]:
    """Each criterion's level probabilities from one whole sequence read by `full_reader`,
    its look-ahead tokens evaluated and rewound one at a time."""
    prompt, answer_tokens = backend.reply_tokens(QUESTION, answer)
    turn = _tokens(backend, turn_text(backend, criteria.message), backend.has_chat_template)
    found = []
    for key, levels in zip(criteria.keys, criteria.levels):
        tokens = prompt + answer_tokens + turn + _tokens(backend, f'{{"{key}": ', False)
        full_reader.reset()
        full_reader.eval(tokens)
        reading = candidate_probs(backend.token_table, _last(full_reader), "", levels)
        sent = None
        while True:
            try:
                request = reading.send(sent)
            except StopIteration as done:
                found.append(done.value)
                break
            if isinstance(request, Feed):
                full_reader.eval(list(request.tokens))
                sent = _last(full_reader)
            else:
                full_reader.n_tokens -= request.count
                sent = None
    return found


def _last(llama) -> np.ndarray:
    return np.asarray(llama.scores[llama.n_tokens - 1], dtype=np.float32)


def _assert_same(found: dict, expected: dict) -> None:
    assert set(found) == set(expected)
    for level in expected:
        assert found[level] == pytest.approx(expected[level], abs=2e-3)


def test_each_criterion_equals_a_read_of_the_whole_sequence(backend, full_reader):
    plain = backend.read_answers(QUESTION, ANSWERS)
    readings = backend.read_answers(QUESTION, ANSWERS, True, CRITERIA)
    assert [r.criteria for r in plain] == [None, None]
    for answer, reading, alone in zip(ANSWERS, readings, plain, strict=True):
        # the answer's read is the same with or without the criteria after it
        np.testing.assert_allclose(reading.cond, alone.cond, atol=1e-4)
        np.testing.assert_allclose(reading.uncond, alone.uncond, atol=1e-4)
        np.testing.assert_allclose(reading.states, alone.states, atol=1e-3)
        expected = _expected(backend, full_reader, answer, CRITERIA)
        assert len(reading.criteria) == 2
        for found, want in zip(reading.criteria, expected, strict=True):
            _assert_same(found, want)
            assert sum(found.values()) == pytest.approx(1.0, abs=1e-6)
    # the two answers are read apart: their scores differ
    assert readings[0].criteria != readings[1].criteria


def test_the_reads_after_find_the_cache_as_it_was(backend):
    """A criteria read leaves the answer's read cached as it was: the next read of the same
    answer (the cache kept) equals one from an empty cache."""
    backend.read_answers(QUESTION, ANSWERS[:1], True, CRITERIA)
    kept = backend.read_reply(QUESTION, ANSWERS[0])
    backend._likelihood_readers.get()._forget_from(0)
    fresh = backend.read_reply(QUESTION, ANSWERS[0])
    np.testing.assert_allclose(kept.logprobs, fresh.logprobs, atol=1e-4)


def test_more_criteria_than_side_by_side_sequences_are_read_in_groups(backend):
    keys = tuple(f"c{n}" for n in range(BRANCHES + 3))
    message = "Grade the reply above on " + ", ".join(keys) + "."
    many = ReplyCriteria(message, keys, (FIVE,) * len(keys))
    read = backend.read_answers(QUESTION, ANSWERS[:1], False, many)[0].criteria
    last = ReplyCriteria(message, keys[-3:], (FIVE,) * 3)
    again = backend.read_answers(QUESTION, ANSWERS[:1], False, last)[0].criteria
    assert len(read) == len(keys)
    for found, want in zip(read[-3:], again, strict=True):
        _assert_same(found, want)


def test_a_turn_too_long_for_the_context_says_so_and_the_next_read_is_right(backend):
    long = ReplyCriteria("word " * 4000, ("accuracy",), (FIVE,))
    with pytest.raises(BackendError, match="criteria and reference take"):
        backend.read_answers(QUESTION, ANSWERS[:1], False, long)
    after = backend.read_answers(QUESTION, ANSWERS[:1], False, CRITERIA)[0]
    alone = backend.read_answers(QUESTION, ANSWERS[:1], False)[0]
    np.testing.assert_allclose(after.cond, alone.cond, atol=1e-4)


def _reference_expected(backend, full_reader, answer: str, criteria: ReplyCriteria) -> np.ndarray:
    """The reference tokens' log-probabilities in one whole sequence (request, answer, turn)."""
    prompt, answer_tokens = backend.reply_tokens(QUESTION, answer)
    then = continuation(backend, criteria)
    begin, end = then.scored
    tokens = prompt + answer_tokens + list(then.turn)
    full_reader.reset()
    full_reader.eval(tokens)
    scores = np.asarray(full_reader.scores[: len(tokens)], dtype=np.float64)
    at = len(prompt) + len(answer_tokens)  # the turn's first position
    rows = scores[at + begin - 1 : at + end - 1]
    top = rows.max(axis=1, keepdims=True)
    total = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
    return rows[np.arange(len(rows)), list(then.turn[begin:end])] - total


@pytest.mark.parametrize("count", [2, BRANCHES + 1])  # in the answer's batch, and after it
def test_the_reference_after_each_answer_is_read_as_a_whole_sequence_reads_it(
    backend, full_reader, count
):
    reference = "Mercury is the closest planet to the sun."
    keys = tuple(f"c{n}" for n in range(count))
    message = f"A reference answer:\n{reference}\n\nGrade the reply above on " + ", ".join(keys)
    criteria = ReplyCriteria(message, keys, (FIVE,) * count, reference=reference)
    then = continuation(backend, criteria)
    begin, end = then.scored
    assert backend.llama.detokenize(list(then.turn[begin:end])).decode().strip() == reference
    readings = backend.read_answers(QUESTION, ANSWERS, False, criteria)
    for answer, reading in zip(ANSWERS, readings, strict=True):
        expected = _reference_expected(backend, full_reader, answer, criteria)
        assert reading.reference.shape == (end - begin,)
        np.testing.assert_allclose(reading.reference, expected, atol=2e-3)
    assert backend.read_answers(QUESTION, ANSWERS[:1], False, CRITERIA)[0].reference is None


@pytest.mark.parametrize("keys", [(), ("accuracy",)])
def test_a_check_is_read_after_the_criteria_as_a_whole_sequence_reads_it(
    backend, full_reader, keys
):
    reference = "Mercury is the closest planet to the sun."
    message = f"A reference answer:\n{reference}\n\nDoes the reply above give its result?"
    levels = (TEN,) * len(keys)
    checked = ReplyCriteria(message, keys, levels, reference=reference, check="correct")
    readings = backend.read_answers(QUESTION, ANSWERS, False, checked)
    # the same turn with the check as one more criterion over true and false
    whole = ReplyCriteria(message, (*keys, "correct"), (*levels, CHECK_LEVELS))
    for answer, reading in zip(ANSWERS, readings, strict=True):
        *criteria, check = _expected(backend, full_reader, answer, whole)
        assert len(reading.criteria) == len(keys)
        for found, expected in zip(reading.criteria, criteria, strict=True):
            _assert_same(found, expected)
        assert reading.check == pytest.approx(check["true"] / sum(check.values()), abs=2e-3)
        assert 0.0 < reading.check < 1.0
    plain = backend.read_answers(QUESTION, ANSWERS[:1], False, CRITERIA)[0]
    assert plain.check is None  # asked for no check


def test_split_check_keeps_the_criteria_and_gives_the_share_of_true():
    values = ({"1": 0.2, "2": 0.8}, {"true": 0.3, "false": 0.1})
    asked = ReplyCriteria("m", ("a",), (("1", "2"),), check="correct")
    assert split_check(values, asked) == (values[:1], pytest.approx(0.75))
    assert split_check(values, CRITERIA) == (values, None)  # no check asked
    nothing = ({"true": 0.0, "false": 0.0},)
    assert split_check(nothing, ReplyCriteria("m", (), (), check="c")) == ((), None)


@pytest.mark.parametrize("sentences", [1, 12])  # a turn in the answer's batch, and after it
def test_a_long_turn_after_a_read_with_states_waits_for_the_answers_batch(
    backend, full_reader, monkeypatch, sentences
):
    """With states on, every token of a batch is an output (a vocabulary's logits each): a
    turn whose logits would pass FUSED_LOGITS_BYTES (here 100 tokens' worth) is read after
    the answer's batch, not in it, and gives the same check and reference log-probabilities
    either way."""
    room = 100
    monkeypatch.setattr(likelihood_reader, "FUSED_LOGITS_BYTES", room * 4 * backend.llama.n_vocab())
    fused = []
    read_on = LikelihoodReader._read_on
    monkeypatch.setattr(
        LikelihoodReader, "_read_on", lambda self, *a: fused.append(1) or read_on(self, *a)
    )
    reference = " ".join(["Mercury is the closest planet to the sun."] * sentences)
    message = f"A reference answer:\n{reference}\n\nDoes the reply above give its result?"
    checked = ReplyCriteria(message, (), (), reference=reference, check="correct")
    then = continuation(backend, checked)
    extra = len(then.turn) + sum(len(branch) for branch in then.branches)
    assert (extra > room) == (sentences > 1)
    readings = backend.read_answers(QUESTION, ANSWERS, False, checked)
    assert len(fused) == (0 if sentences > 1 else len(ANSWERS))
    whole = ReplyCriteria(message, ("correct",), (CHECK_LEVELS,))
    for answer, reading in zip(ANSWERS, readings, strict=True):
        (check,) = _expected(backend, full_reader, answer, whole)
        assert reading.check == pytest.approx(check["true"] / sum(check.values()), abs=2e-3)
        expected = _reference_expected(backend, full_reader, answer, checked)
        np.testing.assert_allclose(reading.reference, expected, atol=2e-3)
