"""Hard negatives the base writes on a GPU (issue 41): an answer to a *neighbouring* request,
LLMBar's adversarial-neighbour construction, made from the training split alone.

For each request of the reward model's pairs (training.datasets.reward_data) the nearest other
instruction of the training split's pool (Auto-J's scenario-classifier requests and the pairs'
own requests) by MiniLM similarity, within a band (near enough to look on topic, far enough
to ask for something else), is written down as a *writing order*. On the GPU the base writes
an answer to that neighbour and one to the request itself, and each order adds two pairs
for the request:

- the dataset's winning answer against the neighbour's answer (target 1);
- the base's own answer against the neighbour's answer (target 1): the same writer on both
  sides, so only following the request tells them apart, not style or length.

Here (llama.cpp's tokenizer, no GPU) `orders` writes the prompts as the engine's template
tokenizes them; `with_written` (pure numpy) adds the written reads and pairs to the pairs
table once the GPU wrote the answers (training.lora.base_writes). Every added pair keeps its
request's group, so request-grouped folds hold out the written pairs with their request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.datasets.reward_data import TARGETS, RewardPairs
from training.device.gpu_reads import ArrayTable, sequence_starts

NEAREST_BAND = (0.45, 0.85)  # cosine of the request and its neighbour
MAX_NEW_TOKENS = 200  # about the 800 characters of an answer the head reads
POOL_FILE = "scenario_classifier_train.jsonl"


@dataclass
class WritingOrders(ArrayTable):
    """The prompts to write answers to (`flat`/`lengths`, back to back, the engine's reply
    prompt of each request) and one order per request: `own[i]` the request's prompt,
    `neighbour[i]` its neighbour's, `winner[i]` the read of its dataset answer that won (in
    the pairs table), `group[i]` its request's group there, `similarity[i]` the two requests'
    cosine. Then, one value each: the end-of-turn token, the token ids that stop a reply,
    and the most tokens a reply may have."""

    flat: np.ndarray
    lengths: np.ndarray
    own: np.ndarray
    neighbour: np.ndarray
    winner: np.ndarray
    group: np.ndarray
    similarity: np.ndarray
    end_of_turn: np.ndarray
    stops: np.ndarray
    max_new_tokens: np.ndarray


def request_winners(items, pairs: RewardPairs) -> dict[str, tuple[int, int]]:  # type: ignore[no-untyped-def]
    """Each decided request of `items` (the pairs table's items, in its order): its group and
    the read of its first winning answer, as training.datasets.reward_data.pair_tokens made
    them."""
    from training.datasets.likelihood_data import cut
    from training.device.reading_cache import cond_key

    index = {str(key): row for row, key in enumerate(pairs.keys)}
    groups: dict[str, int] = {}
    found: dict[str, tuple[int, int]] = {}
    for item in items:
        if item.label is None or item.label.winner not in TARGETS:
            continue
        group = groups.setdefault(item.question, len(groups))
        if item.label.winner in ("A", "B") and item.question not in found:
            answer = item.answers[0 if item.label.winner == "A" else 1]
            found[item.question] = (group, index[cond_key(*cut(item.question, answer))])
    if len(groups) != int(pairs.group.max()) + 1:
        raise ValueError(f"the items make {len(groups)} requests, the pairs table has "
                         f"{int(pairs.group.max()) + 1}: rebuild the pairs file")  # fmt: skip
    return found


def pool_requests(autoj_dir: Path) -> list[str]:
    """The training split's instructions without answers: Auto-J's scenario-classifier set."""
    found = []
    for line in (autoj_dir / POOL_FILE).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        text = "\n".join(part for part in (row["instruction"], row.get("input") or "") if part)
        found.append(text.strip())
    return found


def nearest_in_band(requests: list[str], pool: list[str], band=NEAREST_BAND):  # type: ignore[no-untyped-def]
    """For each request, (the pool's most similar other text within `band`, its cosine), or
    None: the nearest text above the band is skipped (the same request in other words)."""
    from models.sentence_encoder import embed
    from training.datasets.likelihood_data import cut

    asked, others = ([cut(text, "")[0] for text in texts] for texts in (requests, pool))
    similarity = embed(asked) @ embed(others).T
    found = []
    for i, row in enumerate(similarity):
        inside = [j for j in np.argsort(-row, kind="stable") if band[0] <= row[j] <= band[1]]
        inside = [j for j in inside if others[j] != asked[i]]
        found.append((pool[inside[0]], float(row[inside[0]])) if inside else None)
    return found


def write_orders(gguf: Path, pairs_path: Path, alpacaeval: int, per_request: int, out: Path) -> int:
    """The writing orders of the pairs file's requests (see the module)."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.datasets.likelihood_data import fitting_pairs
    from training.lora.config import DataConfig, resolve_path

    winners = request_winners(fitting_pairs(alpacaeval, per_request), RewardPairs.load(pairs_path))
    pool = pool_requests(resolve_path(DataConfig().autoj_dir)) + list(winners)
    neighbours = nearest_in_band(list(winners), pool)
    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    orders = make_orders(backend, winners, neighbours)
    backend.close()
    orders.save(out)
    print(f"{len(orders.own)} of {len(winners)} requests have a neighbour in {NEAREST_BAND}; "
          f"{len(orders.lengths)} prompts, mean cosine {orders.similarity.mean():.3f}")  # fmt: skip
    return 0


def make_orders(  # type: ignore[no-untyped-def]
    backend,
    winners: dict[str, tuple[int, int]],
    neighbours: list[tuple[str, float] | None],
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> WritingOrders:
    """One order per request of `winners` (its group and winning read) with a neighbour, its
    prompts as the engine's reply prompt (the request cut as the head cuts it)."""
    from training.datasets.likelihood_data import cut

    prompts: dict[str, int] = {}
    sequences: list[list[int]] = []

    def prompt_of(text: str) -> int:
        if text not in prompts:
            prompts[text] = len(sequences)
            sequences.append(backend.reply_tokens(cut(text, "")[0], "")[0])
        return prompts[text]

    rows = [(prompt_of(q), prompt_of(n[0]), *winners[q], n[1])
            for q, n in zip(winners, neighbours, strict=True) if n is not None]  # fmt: skip
    if not rows:
        raise ValueError("no request has a neighbour: nothing for the base to write")
    end_of_turn = backend.reply_tokens("", "")[1][-1]
    own, neighbour, group, winner, similarity = (np.array(c) for c in zip(*rows, strict=True))
    return WritingOrders(
        flat=np.concatenate([np.array(s, dtype=np.int32) for s in sequences]),
        lengths=np.array([len(s) for s in sequences]),
        own=own.astype(np.int32),
        neighbour=neighbour.astype(np.int32),
        winner=winner.astype(np.int32),
        group=group.astype(np.int32),
        similarity=similarity.astype(np.float32),
        end_of_turn=np.array([end_of_turn]),
        stops=np.array(sorted({end_of_turn, backend.llama.token_eos()})),
        max_new_tokens=np.array([max_new_tokens]),
    )


def with_written(
    pairs: RewardPairs, orders: WritingOrders, replies: list[np.ndarray | None]
) -> RewardPairs:
    """`pairs` with the written answers' reads and each complete order's two pairs added.
    `replies[k]`: the answer written to prompt k (its tokens, no stop token), or None where
    time ran out. A written read is the request's prompt, the reply and the end-of-turn token,
    as the engine reads an answer."""
    starts = sequence_starts(orders.lengths)
    keys, sequences, answers = list(pairs.keys), [], []
    first, second, group = [], [], []

    def read_of(request: int, reply: np.ndarray, tag: str) -> int:
        prompt = orders.flat[starts[request] : starts[request] + orders.lengths[request]]
        answer = np.concatenate([reply, orders.end_of_turn])
        keys.append(f"w{tag}")
        sequences.append(np.concatenate([prompt, answer]).astype(np.int32))
        answers.append(len(answer))
        return len(keys) - 1

    for k in range(len(orders.own)):
        own, other = replies[orders.own[k]], replies[orders.neighbour[k]]
        if own is None or other is None or not len(own) or not len(other):
            continue
        wrong = read_of(orders.own[k], other, f"{k}n")
        right = read_of(orders.own[k], own, f"{k}o")
        first += [orders.winner[k], right]
        second += [wrong, wrong]
        group += [orders.group[k]] * 2
    return RewardPairs(
        keys=np.array(keys),
        flat=np.concatenate([pairs.flat, *sequences]),
        lengths=np.concatenate([pairs.lengths, np.array([len(s) for s in sequences], dtype=int)]),
        answer_lengths=np.concatenate([pairs.answer_lengths, np.array(answers, dtype=int)]),
        first=np.concatenate([pairs.first, np.array(first, dtype=np.int32)]),
        second=np.concatenate([pairs.second, np.array(second, dtype=np.int32)]),
        target=np.concatenate([pairs.target, np.ones(len(first), dtype=np.float32)]),
        group=np.concatenate([pairs.group, np.array(group, dtype=pairs.group.dtype)]),
    )
