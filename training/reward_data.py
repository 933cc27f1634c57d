"""What the reward model (training/reward_model.py) trains on, as token ids the GPU machine can
read without a tokenizer: the fitting set's pairs with their targets, and the graded single
rows, each read as the engine's read decodes it (training.gpu_reads.tokenize_reads), with
the request each belongs to for request-grouped splits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.gpu_reads import ArrayTable, tokenize_reads

TARGETS = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass
class RewardPairs(ArrayTable):
    """Reads as token ids (`training.gpu_reads.TokenTable`'s fields) and the pairs over them:
    pair i compares read `first[i]` with read `second[i]`, `target[i]` the probability that
    the first is better (1, 0, or 0.5 for a tie), `group[i]` its request (for grouped splits)."""

    keys: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    answer_lengths: np.ndarray
    first: np.ndarray
    second: np.ndarray
    target: np.ndarray
    group: np.ndarray


def pair_tokens(backend, items) -> RewardPairs:  # type: ignore[no-untyped-def]
    """The reads and pairs of labelled pairwise `items` (those with a winner)."""
    from training.likelihood_data import cut
    from training.reading_cache import cond_key

    labelled = [i for i in items if i.label is not None and i.label.winner in TARGETS]
    texts = [cut(item.question, answer) for item in labelled for answer in item.answers]
    table = tokenize_reads(backend, texts)
    conditioned = [n for n, key in enumerate(table.keys) if str(key).startswith("c")]
    keep = np.array(conditioned, dtype=int)
    starts = np.concatenate([[0], np.cumsum(table.lengths)[:-1]])
    flat = [table.flat[starts[n] : starts[n] + table.lengths[n]] for n in keep]
    index = {str(table.keys[n]): row for row, n in enumerate(keep)}
    requests: dict[str, int] = {}
    first, second, target, group = [], [], [], []
    for item in labelled:
        a, b = (index[cond_key(*cut(item.question, answer))] for answer in item.answers)
        first.append(a)
        second.append(b)
        target.append(TARGETS[item.label.winner])
        group.append(requests.setdefault(item.question, len(requests)))
    return RewardPairs(
        keys=table.keys[keep],
        flat=np.concatenate(flat).astype(np.int32),
        lengths=table.lengths[keep],
        answer_lengths=table.answer_lengths[keep],
        first=np.array(first, dtype=np.int32),
        second=np.array(second, dtype=np.int32),
        target=np.array(target, dtype=np.float32),
        group=np.array(group, dtype=np.int32),
    )


def write_pairs(gguf: Path, alpacaeval: int, per_request: int, out: Path) -> int:
    """The fitting set's pairs (training split only: training.likelihood_data) as token ids."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.likelihood_data import fitting_pairs

    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    pairs = pair_tokens(backend, fitting_pairs(alpacaeval, per_request))
    backend.close()
    pairs.save(out)
    ties = int((pairs.target == 0.5).sum())
    print(f"{len(pairs.first)} pairs ({ties} ties) over {len(pairs.keys)} reads, "
          f"{int(pairs.lengths.sum())} tokens")  # fmt: skip
    return 0


@dataclass
class GradeRows(ArrayTable):
    """Graded single answers as token ids (`TokenTable`'s fields), `rating[i]` the 1-10
    rating of read i and `group[i]` its request."""

    keys: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    answer_lengths: np.ndarray
    rating: np.ndarray
    group: np.ndarray


def grade_tokens(backend, items) -> GradeRows:  # type: ignore[no-untyped-def]
    """The reads of graded single-answer `items` (those with a score)."""
    from training.likelihood_data import cut

    rated = [i for i in items if i.label is not None and i.label.score is not None]
    table = tokenize_reads(backend, [cut(item.question, item.answers[0]) for item in rated])
    conditioned = np.array([str(k).startswith("c") for k in table.keys])
    starts = np.concatenate([[0], np.cumsum(table.lengths)[:-1]])
    flat = [table.flat[b : b + n] for b, n, c in zip(starts, table.lengths, conditioned) if c]
    requests: dict[str, int] = {}
    return GradeRows(
        keys=table.keys[conditioned],
        flat=np.concatenate(flat).astype(np.int32),
        lengths=table.lengths[conditioned],
        answer_lengths=table.answer_lengths[conditioned],
        rating=np.array([i.label.score for i in rated], dtype=np.float32),
        group=np.array([requests.setdefault(i.question, len(requests)) for i in rated]),
    )


def write_grades(gguf: Path, out: Path) -> int:
    """The training split's graded single rows (training.state_head_data) as token ids."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.state_head_data import single_rows

    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    rows = grade_tokens(backend, single_rows()[0])
    backend.close()
    rows.save(out)
    print(f"{len(rows.rating)} graded rows, {int(rows.lengths.sum())} tokens")
    return 0


Data = RewardPairs | GradeRows


def size(data: Data) -> int:
    """Pairs, or graded rows: what a step draws from."""
    return len(data.first) if isinstance(data, RewardPairs) else len(data.rating)


def load_data(path: Path) -> Data:
    """A `pairs` or a `grades` file."""
    with np.load(path) as table:
        kind = RewardPairs if "first" in table.files else GradeRows
    return kind.load(path)
