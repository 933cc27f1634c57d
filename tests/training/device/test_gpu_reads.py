"""Reads made in torch (for a GPU machine without llama.cpp) against the engine's own: on the
tiny real model, from the token ids llama.cpp gives, the answer's log-probabilities and
pooled states must be those of `LlamaCppBackend.read_reply`, and they must reach a reading
cache through the files a GPU machine sends back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.models.backends.conftest import backend  # noqa: F401 - a fixture

QUESTION = "Which planet is closest to the sun?"
TEXTS = [
    (QUESTION, "Mercury."),
    (QUESTION, "Venus is the hottest planet, but the closest one is Mercury."),
    ("Name a gas giant.", "Mercury."),  # an answer met with two requests: read once without
]


@pytest.fixture(scope="module")
def torch_reads(backend, tiny_gguf_model: Path):  # noqa: F811
    from training.device.gpu_reads import load_model, read_sequences, tokenize_reads

    table = tokenize_reads(backend, TEXTS)
    model = load_model(tiny_gguf_model, "cpu")
    order = np.argsort(-table.lengths, kind="stable")
    return table, read_sequences(model, table, order)


def test_each_answer_is_read_after_its_request_and_once_without(torch_reads):
    from training.device.reading_cache import cond_key, uncond_key

    table, _ = torch_reads
    expected = [cond_key(*TEXTS[0]), uncond_key(TEXTS[0][1]), cond_key(*TEXTS[1])]
    expected += [uncond_key(TEXTS[1][1]), cond_key(*TEXTS[2])]
    assert table.keys.tolist() == expected
    assert table.lengths.sum() == len(table.flat)


def test_torch_reads_equal_the_engine_reads(backend, torch_reads):  # noqa: F811
    from models.readings import pooled
    from training.device.reading_cache import cond_key, uncond_key

    _, (keys, logprobs, states) = torch_reads
    by_key = dict(zip(keys, logprobs))
    state_of = dict(zip([k for k in keys if k.startswith("c")], states))
    for question, answer in TEXTS:
        engine = backend.read_reply(question, answer)
        np.testing.assert_allclose(by_key[cond_key(question, answer)], engine.logprobs, atol=2e-3)
        ours = state_of[cond_key(question, answer)]
        np.testing.assert_allclose(ours, pooled(engine.states), rtol=1e-3, atol=1e-3)
        free = backend.read_reply("", answer, states=False).logprobs
        np.testing.assert_allclose(by_key[uncond_key(answer)], free, atol=2e-3)


def test_reads_reach_a_reading_cache_through_the_shard_files(torch_reads, tmp_path: Path):
    from training.device.gpu_reads import merge, write_shards
    from training.device.reading_cache import ReadingCache, cond_key

    _, (keys, logprobs, states) = torch_reads
    paths = write_shards(tmp_path / "out", keys, logprobs, states)
    merge(type("Args", (), {"reads": paths, "cache": tmp_path / "cache"})())
    cache = ReadingCache(tmp_path / "cache")
    for question, answer in TEXTS:
        reading = cache.get(question, answer)
        at = keys.index(cond_key(question, answer))
        np.testing.assert_allclose(reading.cond, logprobs[at], atol=2e-2)  # float16 on the way
        state = states[[k for k in keys if k.startswith("c")].index(keys[at])]
        scale = np.abs(np.stack(states)).max(axis=0) / 127
        assert np.abs(reading.states - state).max() <= scale.max()  # int8 with a scale per dim
