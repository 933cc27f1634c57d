"""What the reward model (training/lora/reward_model.py) trains on, as token ids the GPU machine can
read without a tokenizer: the fitting set's pairs with their targets, and the graded single
rows, each read as the engine's read decodes it (training.device.gpu_reads.tokenize_reads), with
the request each belongs to for request-grouped splits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.device.gpu_reads import ArrayTable, tokenize_reads

TARGETS = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass
class RewardPairs(ArrayTable):
    """Reads as token ids (`training.device.gpu_reads.TokenTable`'s fields) and the pairs over them:
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
    from training.datasets.likelihood_data import cut
    from training.device.reading_cache import cond_key

    labelled = [i for i in items if i.label is not None and i.label.winner in TARGETS]
    texts = [cut(item.question, answer) for item in labelled for answer in item.answers]
    table = tokenize_reads(backend, texts, unconditioned=False)
    index = {str(key): row for row, key in enumerate(table.keys)}
    requests: dict[str, int] = {}
    first, second, target, group = [], [], [], []
    for item in labelled:
        a, b = (index[cond_key(*cut(item.question, answer))] for answer in item.answers)
        first.append(a)
        second.append(b)
        target.append(TARGETS[item.label.winner])
        group.append(requests.setdefault(item.question, len(requests)))
    return RewardPairs(
        **vars(table),
        first=np.array(first, dtype=np.int32),
        second=np.array(second, dtype=np.int32),
        target=np.array(target, dtype=np.float32),
        group=np.array(group, dtype=np.int32),
    )


def write_pairs(gguf: Path, alpacaeval: int, per_request: int, out: Path) -> int:
    """The fitting set's pairs (training split only: training.datasets.likelihood_data) as token
    ids."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.datasets.likelihood_data import fitting_pairs

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
    """The reads of graded single-answer `items` (those with a score), one a distinct
    (request, answer), rated the mean of its ratings."""
    from training.datasets.likelihood_data import cut
    from training.device.reading_cache import cond_key

    rated: dict[str, list] = {}  # read key -> its items (an answer graded twice is read once)
    for item in items:
        if item.label is not None and item.label.score is not None:
            rated.setdefault(cond_key(*cut(item.question, item.answers[0])), []).append(item)
    firsts = [same[0] for same in rated.values()]
    table = tokenize_reads(
        backend, [cut(i.question, i.answers[0]) for i in firsts], unconditioned=False
    )
    requests: dict[str, int] = {}
    return GradeRows(
        **vars(table),
        rating=np.array([np.mean([i.label.score for i in same]) for same in rated.values()]).astype(
            np.float32
        ),
        group=np.array([requests.setdefault(i.question, len(requests)) for i in firsts]),
    )


def write_grades(gguf: Path, out: Path) -> int:
    """The training split's graded single rows (training.datasets.state_head_data) as token ids."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.datasets.state_head_data import single_rows

    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    rows = grade_tokens(backend, single_rows()[0])
    backend.close()
    rows.save(out)
    print(f"{len(rows.rating)} graded rows, {int(rows.lengths.sum())} tokens")
    return 0


def write_evals(gguf: Path, out: Path) -> int:
    """The evaluation files' pairs (training.lora.config.EvalConfig's files, every labelled row,
    ties included) and the held-out single rows as token ids, one file each in `out`: what a lent
    GPU reads with the trained model once its recipe is fixed (training.lora.reward_loan)."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.datasets.labelled_files import load_labelled
    from training.datasets.state_head_data import single_rows
    from training.lora.config import EvalConfig, resolve_path

    out.mkdir(parents=True, exist_ok=True)
    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    for name in EvalConfig().files:
        path = resolve_path(name)
        rows = load_labelled(path, path.stem).rows
        pairs = pair_tokens(backend, [row.item for row in rows])
        pairs.save(out / f"{path.stem}.npz")
        print(f"{path.stem}: {len(pairs.first)} pairs over {len(pairs.keys)} reads")
    grade_tokens(backend, single_rows()[1]).save(out / "single_heldout.npz")
    backend.close()
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
