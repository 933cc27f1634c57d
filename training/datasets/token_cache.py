"""Tokenized training examples kept on disk, so tokenizing happens once.

Tokenizing goes through llama.cpp (the engine's own vocabulary and chat layout),
which a GPU machine may not have: the train stage writes the tokens here first,
and any machine that has this file trains without llama.cpp or the example texts.
A file is used only when its key (the data settings and the base GGUF's name)
matches the run's; otherwise the examples are tokenized again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from training.lora.train import IGNORE, Tokenized


def cache_key(data_settings: str, gguf_name: str) -> str:
    """What the tokens depend on: the data settings (JSON) and the base's vocabulary."""
    return hashlib.sha256(f"{data_settings}\n{gguf_name}".encode()).hexdigest()[:16]


def save_tokens(path: Path, key: str, examples: Sequence[Tokenized], too_long: int) -> None:
    """Write the examples (ids, loss mask, weights) as one compressed numpy file."""
    import numpy as np

    lengths = [len(t.input_ids) for t in examples]
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    ids = np.fromiter((i for t in examples for i in t.input_ids), dtype=np.int32)
    value = np.fromiter(
        (label != IGNORE for t in examples for label in t.labels), dtype=bool, count=len(ids)
    )
    weights = np.fromiter(
        (w for t in examples for w in (t.weights or [1.0] * len(t.input_ids))),
        dtype=np.float32,
        count=len(ids),
    )
    weighted = np.array([t.weights is not None for t in examples], dtype=bool)
    meta = json.dumps({"key": key, "too_long": too_long})
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.npz")
    np.savez_compressed(
        partial,
        meta=np.array(meta),
        offsets=offsets,
        ids=ids,
        value=np.packbits(value),
        weights=weights,
        weighted=weighted,
    )
    partial.replace(path)


def load_tokens(path: Path, key: str) -> tuple[list[Tokenized], int] | None:
    """The examples and the count left out as too long; None when missing or stale."""
    import numpy as np

    if not path.exists():
        return None
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        if meta.get("key") != key:
            return None
        offsets = data["offsets"]
        ids = data["ids"]
        value = np.unpackbits(data["value"], count=len(ids)).astype(bool)
        weights = data["weights"]
        weighted = data["weighted"]
    labels = np.where(value, ids, IGNORE)
    examples = []
    for index in range(len(offsets) - 1):
        start, end = int(offsets[index]), int(offsets[index + 1])
        examples.append(
            Tokenized(
                ids[start:end].tolist(),
                labels[start:end].tolist(),
                weights[start:end].tolist() if weighted[index] else None,
            )
        )
    return examples, int(meta["too_long"])
