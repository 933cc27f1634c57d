"""Padded micro-batches (the GPU path) give the same loss as one example at a time, and
tokenized examples survive the trip through the token cache."""

import pytest
import torch

from training.datasets.token_cache import cache_key, load_tokens, save_tokens
from training.lora.train import IGNORE, Tokenized, batch_loss, micro_batches, target_loss


def _tiny_causal_lm():
    """A real (randomly initialised) Qwen2 decoder: causal attention is what the padding
    argument rests on, so an attention-free stand-in would prove nothing."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return Qwen2ForCausalLM(config).eval()


def _example(length: int, loss_at: list[int], weights: dict[int, float] | None = None):
    ids = [(7 * i + length) % 60 + 1 for i in range(length)]
    labels = [ids[i] if i in loss_at else IGNORE for i in range(length)]
    per_position = None
    if weights is not None:
        per_position = [weights.get(i, 0.0) for i in range(length)]
    return Tokenized(ids, labels, per_position)


EXAMPLES = [
    _example(9, [6, 7, 8]),
    _example(14, [10], None),
    _example(5, [3, 4], {3: 1.0, 4: 0.25}),
]


def _alone(model, example: Tokenized) -> float:
    ids = torch.tensor([example.input_ids])
    labels = torch.tensor([example.labels])
    weights = torch.tensor([example.weights]) if example.weights else None
    return target_loss(model, ids, labels, False, weights).item()


def test_a_padded_batch_sums_the_per_example_losses():
    model = _tiny_causal_lm()
    with torch.no_grad():
        batched = batch_loss(model, EXAMPLES, autocast=False).item()
        single = sum(_alone(model, example) for example in EXAMPLES)
        one = batch_loss(model, EXAMPLES[1:2], autocast=False).item()
    assert batched == pytest.approx(single, rel=1e-5)
    assert one == pytest.approx(_alone(model, EXAMPLES[1]), rel=1e-6)


def test_micro_batches_keep_every_example_within_the_token_budget():
    batch = [_example(n, [n - 1]) for n in (30, 5, 12, 40, 7, 22)]
    chunks = micro_batches(batch, budget=48)
    assert sorted(len(t.input_ids) for c in chunks for t in c) == [5, 7, 12, 22, 30, 40]
    for chunk in chunks:
        assert len(chunk) == 1 or max(len(t.input_ids) for t in chunk) * len(chunk) <= 48
    assert [len(c) for c in micro_batches(batch, None)] == [1] * 6


def test_token_cache_round_trip_and_a_stale_key(tmp_path):
    path = tmp_path / "tokens" / "pairwise.npz"
    key = cache_key('{"max_tokens": 1536}', "base.gguf")
    save_tokens(path, key, EXAMPLES, too_long=3)
    loaded, too_long = load_tokens(path, key)
    assert too_long == 3
    assert loaded == EXAMPLES
    assert load_tokens(path, cache_key('{"max_tokens": 768}', "base.gguf")) is None
    assert load_tokens(tmp_path / "missing.npz", key) is None


def test_verdict_check_reads_the_second_order_swapped():
    from training.lora.verdict_check import agreement

    rows = [
        {"label": "A", "longer": "B"},  # judge right both orders, length wrong
        {"label": "B", "longer": "B"},  # judge says A in both orders: position bias, inconsistent
        {"label": "tie", "longer": "A"},
    ]
    probs = torch.tensor(
        [
            [0.8, 0.1, 0.1],  # row 1, shown as is: A
            [0.1, 0.8, 0.1],  # row 1, swapped: B (= the first answer)
            [0.7, 0.2, 0.1],  # row 2, as is: A
            [0.7, 0.2, 0.1],  # row 2, swapped: A (= the second answer)
            [0.2, 0.2, 0.6],  # row 3: tie
            [0.2, 0.2, 0.6],
        ]
    )
    result = agreement(rows, probs)
    assert result["agree"] == pytest.approx(100 * 2 / 3, abs=0.1)  # row 2 averages to a draw
    assert result["winner_rows"] == 2
    assert result["length_agree"] == pytest.approx(100 / 3, abs=0.1)
    assert result["swap_consistent"] == pytest.approx(100 * 2 / 3, abs=0.1)
