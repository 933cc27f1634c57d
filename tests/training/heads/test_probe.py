"""The linear probe: pooling, a position-free head, and a real llama.cpp embedding pass."""

import numpy as np
from llama_cpp import LLAMA_POOLING_TYPE_NONE, Llama

from app.deciding.state_head import state_text
from models.readings import pooled
from training.heads.probe import agreement, fit_head, pair_features


def test_pooled_is_mean_then_last_token():
    states = [[1.0, 2.0], [3.0, 6.0]]
    assert pooled(states).tolist() == [2.0, 4.0, 3.0, 6.0]


def test_head_is_position_free_and_learns_a_separable_signal():
    rng = np.random.default_rng(0)
    quality = rng.normal(size=(80, 4))
    winners = ["A" if q[0] > 0 else "B" for q in quality]
    head = fit_head(quality, winners)
    p = head.predict_proba(quality)[:, 1]
    swapped = head.predict_proba(-quality)[:, 1]
    # the same pair in the other order gets the mirrored probability
    assert np.allclose(p, 1 - swapped, atol=1e-6)
    verdicts = ["A" if x >= 0.5 else "B" for x in p]
    assert agreement(verdicts, winners) >= 95.0


def test_agreement_counts_tie_labels_as_misses():
    assert agreement(["A", "B", "A", "B"], ["A", "B", "tie", "A"]) == 50.0


def test_features_come_from_a_real_gguf(tiny_gguf_model):
    from app.records import JudgeItem

    model = Llama(
        model_path=str(tiny_gguf_model),
        embedding=True,
        pooling_type=LLAMA_POOLING_TYPE_NONE,
        n_ctx=256,
        n_threads=1,
        verbose=False,
    )
    item = JudgeItem(id="1", question="Name a colour.", answers=("Blue.", "Seven apples."))
    features = pair_features([item], lambda text: pooled(model.embed(text)))
    assert features.shape[0] == 1 and features.shape[1] % 2 == 0
    assert np.isfinite(features).all() and np.abs(features).sum() > 0
    assert "Request: Name a colour." in state_text(item.question, item.answers[0])


def test_a_screen_samples_the_same_training_pairs_and_the_first_rows():
    from app.records import JudgeItem
    from training.heads.probe import limited, sample

    items = [JudgeItem(id=str(n), question="q", answers=("a", "b")) for n in range(10)]
    assert [i.id for i in sample(items, 4)] == [i.id for i in sample(items, 4)]  # fixed
    assert len({i.id for i in sample(items, 4)}) == 4
    assert sample(items, 20) == items and limited(items, 0) == items
    assert [i.id for i in limited(items, 3)] == ["0", "1", "2"]
