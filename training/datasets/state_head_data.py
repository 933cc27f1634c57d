"""What a state head is fitted on, and the judge model's features of it, cached and resumable.

The fitting set comes from the training split only, fixed before any evaluation
file is read:

- every labelled Auto-J training pair (human labels, ties included: the tie margin
  is tuned on them), in their natural length distribution;
- nearest-request counterexamples of 30 % of the decisive Auto-J pairs (the winner
  against a longer answer to the most similar other request, which must lose);
- `alpacaeval` length-balanced decisive AlpacaEval pairs, at most four per
  instruction, references dropped (GPT-4-class preferences), and nearest-request
  counterexamples of half of them;
- the single-answer rows outside the 160 held out for evaluation (grades).

The set is built once and kept beside the cache (`saved_fitting_pairs`). Features are
the frozen GGUF's pooled states of each distinct request + answer
text (`app.deciding.state_head.state_text`), cached by the text's hash in chunk files of
`CHUNK` texts: a run killed at any moment loses at most one chunk, and
`--part K --parts N` lets N processes (one core each) share the texts.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from app.deciding.state_head import state_text
from app.records import JudgeItem

CHUNK = 25
AUTOJ_COUNTER_SHARE = 0.3
ALPACA_COUNTER_SHARE = 0.5
ALPACA_PER_REQUEST = 4  # pairs of one instruction at most (other models' answers)
SEED = 0


def fitting_pairs(
    alpacaeval: int, seed: int = SEED, per_request: int = ALPACA_PER_REQUEST
) -> list[JudgeItem]:
    """The labelled pairs of the fitting set (see the module's docstring)."""
    from app.catalog.scenarios import load_catalog
    from training.datasets.examples import PAIRWISE_FILE, BuildReport, _labelled, counterexamples
    from training.lora.config import DataConfig, resolve_path

    config = DataConfig()
    catalog, report = load_catalog(), BuildReport()
    autoj = [i for i in _labelled(resolve_path(config.autoj_dir) / PAIRWISE_FILE) if i.label.winner]
    decisive = [i for i in autoj if i.label.winner in ("A", "B")]
    autoj_counter = counterexamples(decisive, AUTOJ_COUNTER_SHARE, seed, catalog, report, "nearest")
    pairs = autoj + autoj_counter
    if alpacaeval:
        chosen, made = alpacaeval_pairs(alpacaeval, seed, per_request)
        pairs += chosen + made
    return pairs


def alpacaeval_pairs(
    count: int, seed: int = SEED, per_request: int = ALPACA_PER_REQUEST
) -> tuple[list[JudgeItem], list[JudgeItem]]:
    """`count` length-balanced decisive AlpacaEval pairs (at most `per_request` of one
    instruction, references dropped) and nearest-request counterexamples of half of them."""
    from app.catalog.scenarios import load_catalog
    from training.datasets.alpacaeval import length_balanced, read_decisive
    from training.datasets.examples import BuildReport, counterexamples
    from training.lora.config import DataConfig, resolve_path

    taken: dict[str, int] = {}
    pool = []
    for item in read_decisive(resolve_path(DataConfig().alpacaeval_file)):
        if taken.get(item.question, 0) < per_request:
            taken[item.question] = taken.get(item.question, 0) + 1
            pool.append(item.model_copy(update={"reference": None}))
    chosen = length_balanced(pool, count, seed)
    made = counterexamples(
        chosen, ALPACA_COUNTER_SHARE, seed, load_catalog(), BuildReport(), "nearest"
    )
    return chosen, made


def saved_fitting_pairs(
    alpacaeval: int, folder: Path, per_request: int = ALPACA_PER_REQUEST
) -> list[JudgeItem]:
    """The fitting set, built once and kept in `folder`: its nearest-request counterexamples
    come from MiniLM similarities, whose near-ties may break another way with another
    thread count, and the cached states must be those of exactly these texts."""
    more = "" if per_request == ALPACA_PER_REQUEST else f"-per{per_request}"
    path = folder / f"fitting_pairs-alpacaeval{alpacaeval}{more}.jsonl"
    if path.is_file():
        lines = path.read_text(encoding="utf-8").splitlines()
        return [JudgeItem.model_validate_json(line) for line in lines]
    pairs = fitting_pairs(alpacaeval, per_request=per_request)
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text("".join(p.model_dump_json() + "\n" for p in pairs), encoding="utf-8")
    partial.replace(path)
    return pairs


def single_rows(heldout: int = 160, seed: int = SEED) -> tuple[list[JudgeItem], list[JudgeItem]]:
    """Auto-J's rated single answers: (fitting rows, held-out rows), the training
    pipeline's own split (training.datasets.examples.split_single, same count and seed)."""
    from training.datasets.examples import SINGLE_FILE, _labelled, split_single
    from training.lora.config import DataConfig, resolve_path

    items = _labelled(resolve_path(DataConfig().autoj_dir) / SINGLE_FILE)
    return split_single(items, heldout, seed)


def texts_of(items: Iterable[JudgeItem]) -> list[str]:
    """The distinct state texts of every answer of `items`, in a fixed order."""
    found: dict[str, None] = {}
    for item in items:
        for answer in item.answers:
            found.setdefault(state_text(item.question, answer), None)
    return list(found)


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class FeatureCache:
    """Pooled states by text hash, in chunk files under `folder` (one folder per GGUF)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.vectors: dict[str, np.ndarray] = {}
        for path in sorted(folder.glob("*.npz")):
            with np.load(path) as chunk:
                for key in chunk.files:
                    self.vectors[key] = chunk[key]

    def __contains__(self, text: str) -> bool:
        return text_key(text) in self.vectors

    def get(self, text: str) -> np.ndarray:
        try:
            return self.vectors[text_key(text)]
        except KeyError:
            raise KeyError(
                f"{self.folder}: no states for a text of the fitting set ({text[:60]!r}...); "
                "run `python -m training.heads.state_head embed` for this GGUF first"
            ) from None

    def fill(self, texts: Sequence[str], read, label: str) -> None:  # type: ignore[no-untyped-def]
        """Read every text not cached yet with `read(text) -> vector`, saving as it goes."""
        from tqdm import tqdm

        todo = [t for t in texts if t not in self]
        self.folder.mkdir(parents=True, exist_ok=True)
        pending: dict[str, np.ndarray] = {}
        for text in tqdm(todo, desc=f"states {label}", unit="text", file=sys.stderr):
            pending[text_key(text)] = read(text)
            if len(pending) >= CHUNK:
                self._save(pending, label)
                pending = {}
        if pending:
            self._save(pending, label)

    def _save(self, vectors: dict[str, np.ndarray], label: str) -> None:
        number = len(list(self.folder.glob(f"{label}-*.npz")))
        path = self.folder / f"{label}-{number:05d}.npz"
        partial = path.with_suffix(".tmp.npz")
        np.savez(partial, **vectors)
        partial.replace(path)
        self.vectors.update(vectors)

    def pair_features(self, items: Sequence[JudgeItem]) -> tuple[np.ndarray, np.ndarray]:
        """Per pair, answer A's and answer B's features."""
        first = np.stack([self.get(state_text(i.question, i.answers[0])) for i in items])
        second = np.stack([self.get(state_text(i.question, i.answers[1])) for i in items])
        return first, second
