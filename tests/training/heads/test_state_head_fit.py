"""Fitting a state head: the resumable feature cache, a position-free logistic head,
out-of-fold predictions grouped by request, and the tie margin."""

from __future__ import annotations

import numpy as np
import pytest

from app.records import JudgeItem, Label
from training.datasets.state_head_data import CHUNK, FeatureCache, texts_of
from training.heads.state_head import agreement_by_source, fit_logistic, out_of_fold, verdicts


def test_the_cache_keeps_what_was_read_and_goes_on_where_it_stopped(tmp_path):
    texts = [f"text {n}" for n in range(CHUNK + 3)]
    read = []

    def reader(text: str) -> np.ndarray:
        read.append(text)
        return np.array([float(len(read)), 1.0], dtype=np.float32)

    cache = FeatureCache(tmp_path)
    cache.fill(texts[: CHUNK + 1], reader, "part0")
    assert len(list(tmp_path.glob("part0-*.npz"))) == 2  # a full chunk and the rest
    again = FeatureCache(tmp_path)  # a new process: only the texts not yet read
    again.fill(texts, reader, "part0")
    assert read == texts  # each text read once
    assert again.get(texts[0]).tolist() == [1.0, 1.0]
    assert not list(tmp_path.glob("*.tmp.npz"))  # chunks are written whole, then renamed


def test_texts_are_distinct_and_in_a_fixed_order():
    items = [
        JudgeItem(id="1", question="q", answers=("a", "b")),
        JudgeItem(id="2", question="q", answers=("b", "c")),
    ]
    assert texts_of(items) == [
        "Request: q\n\nAnswer: a",
        "Request: q\n\nAnswer: b",
        "Request: q\n\nAnswer: c",
    ]
    assert texts_of(reversed(items)) == [texts_of(items)[i] for i in (1, 2, 0)]


def test_the_head_is_position_free_and_finds_a_planted_signal():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 6))
    y = (x[:, 0] - x[:, 1] > 0).astype(int)
    weights = fit_logistic(x, y, c=1.0)
    assert weights[0] > 0 > weights[1]
    assert np.mean((x @ weights > 0) == (y == 1)) > 0.95
    # the other order of a pair is the negated difference: the mirrored verdict
    assert np.allclose(1 / (1 + np.exp(-(x @ weights))), 1 - 1 / (1 + np.exp(x @ weights)))


def test_out_of_fold_predictions_never_see_their_own_request():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 3))
    winners = ["A" if v > 0 else "B" for v in x[:, 0]]
    winners[5] = "tie"  # ties are predicted, never fitted
    groups = [f"request {n // 2}" for n in range(60)]
    p_a = out_of_fold(x, winners, groups, c=1.0)
    assert p_a.shape == (60,) and np.all((p_a > 0) & (p_a < 1))
    found = verdicts(p_a)
    assert np.mean([f == w for f, w in zip(found, winners) if w != "tie"]) > 0.85


@pytest.mark.parametrize(("band", "expected"), [(0.0, ["A", "B", "A"]), (0.1, ["A", "B", "tie"])])
def test_the_tie_margin_calls_close_pairs_ties(band, expected):
    assert verdicts(np.array([0.9, 0.2, 0.55]), band) == expected


def test_agreement_is_reported_per_source():
    items = [
        JudgeItem(id="alpacaeval-1", question="q", answers=("a", "b"), label=Label(winner="A")),
        JudgeItem(id="x", question="q", answers=("a", "b"), label=Label(winner="B"),
                  metadata={"counterexample": True}),
    ]  # fmt: skip
    assert agreement_by_source(["A", "A"], items) == {
        "alpacaeval": 100.0,
        "autoj-counterexample": 0.0,
    }


def test_the_fitting_set_is_built_once_and_read_back_as_it_was(tmp_path, monkeypatch):
    from training.datasets import state_head_data

    built = [
        JudgeItem(id="alpacaeval-7-counter", question="q", answers=("a", "b"),
                  label=Label(winner="B"), metadata={"counterexample": True}),
    ]  # fmt: skip
    calls = []
    monkeypatch.setattr(state_head_data, "fitting_pairs", lambda n, **_: calls.append(n) or built)
    first = state_head_data.saved_fitting_pairs(200, tmp_path)
    again = state_head_data.saved_fitting_pairs(200, tmp_path)
    assert first == again == built and calls == [200]  # the second read builds nothing
