"""Hard negatives the base writes (training/datasets/written_negatives.py, training/lora/
base_writes.py), on the tiny real model on the CPU as on the GPU: orders whose prompts are
the engine's, replies cut at a stop, and each order's two pairs added to the pairs table in
its request's group, read as the engine reads an answer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.models.backends.conftest import backend  # noqa: F401 - a fixture
from tests.training.lora.test_reward_model import fresh_base, items
from training.device.gpu_reads import sequence_starts

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def built(backend):  # noqa: F811
    from training.datasets.reward_data import pair_tokens
    from training.datasets.written_negatives import make_orders, request_winners

    chosen = items()
    pairs = pair_tokens(backend, chosen)
    winners = request_winners(chosen, pairs)
    neighbours = [None if n == 1 else (f"Name a {q.split()[1]} fruit.", 0.6)
                  for n, q in enumerate(winners)]  # fmt: skip
    return pairs, winners, make_orders(backend, winners, neighbours, max_new_tokens=6)


def test_orders_hold_each_decided_request_with_its_neighbour_as_the_engine_prompts(
    built,
    backend,  # noqa: F811
) -> None:
    from training.datasets.likelihood_data import cut

    pairs, winners, orders = built
    assert len(winners) == 6  # the tie's request has no winner
    assert len(orders.own) == 5  # one request was given no neighbour
    starts = sequence_starts(orders.lengths)
    for k, question in enumerate(q for n, q in enumerate(winners) if n != 1):
        own = orders.flat[starts[orders.own[k]] :][: orders.lengths[orders.own[k]]]
        assert own.tolist() == backend.reply_tokens(cut(question, "")[0], "")[0]
        read = orders.winner[k]
        read_start = int(pairs.lengths[:read].sum())
        assert pairs.flat[read_start : read_start + len(own)].tolist() == own.tolist()
        assert orders.group[k] == winners[question][0]


def test_the_base_writes_each_reply_and_the_pairs_join_in_their_requests_group(
    built, tiny_gguf_model: Path
) -> None:
    from training.datasets.written_negatives import with_written
    from training.lora.base_writes import write_replies

    pairs, _, orders = built
    replies = write_replies(fresh_base(tiny_gguf_model), orders, float("inf"), batch=3)
    stops = set(orders.stops.tolist())
    assert all(r is not None and len(r) <= 6 and not stops & set(r.tolist()) for r in replies)
    more = with_written(pairs, orders, replies)
    written = [k for k in range(len(orders.own)) if len(replies[orders.own[k]])
               and len(replies[orders.neighbour[k]])]  # fmt: skip
    added = len(more.first) - len(pairs.first)
    assert added == 2 * len(written) > 0
    assert (more.target[len(pairs.first) :] == 1).all()
    starts = sequence_starts(more.lengths)
    for n, k in enumerate(written):
        at = len(pairs.first) + 2 * n
        assert more.first[at] == orders.winner[k]
        assert more.group[at] == more.group[at + 1] == orders.group[k]
        wrong = more.second[at]
        tokens = more.flat[starts[wrong] : starts[wrong] + more.lengths[wrong]]
        answer = replies[orders.neighbour[k]]
        own_prompt = orders.lengths[orders.own[k]]
        assert tokens[own_prompt:-1].tolist() == answer.tolist()  # after the request's prompt
        assert tokens[-1] == orders.end_of_turn[0]
        assert more.answer_lengths[wrong] == len(answer) + 1


def test_a_deadline_already_past_writes_nothing_and_adds_no_pair(
    built, tiny_gguf_model: Path
) -> None:
    from training.datasets.written_negatives import with_written
    from training.lora.base_writes import write_replies

    pairs, _, orders = built
    replies = write_replies(fresh_base(tiny_gguf_model), orders, time.time() - 1)
    assert replies == [None] * len(orders.lengths)
    assert len(with_written(pairs, orders, replies).first) == len(pairs.first)
