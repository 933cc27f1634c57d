"""Request states (`state_features`) cached on disk by text, for scenario detection.

A judge whose scenario classifier reads its own states of each request (`scenario:
auto`, app/catalog/scenario_detection.py) reads every request once more; an evaluation that
wraps the backend's `state_features` with `CachedStates` reads each text once, and
states read elsewhere (a lent GPU, `training.device.gpu_levels`) cost nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np


def text_key(text: str) -> str:
    return "t" + hashlib.sha1(text.encode("utf-8")).hexdigest()


def load_states(folder: Path) -> dict[str, np.ndarray]:
    """Every cached state under `folder`, by text key."""
    states: dict[str, np.ndarray] = {}
    for path in sorted(folder.glob("*.npz")):
        with np.load(path) as chunk:
            states |= {key: chunk[key] for key in chunk.files}
    return states


class CachedStates:
    """`read(text)` served from `folder` (`*.npz`, one array per text key)."""

    def __init__(self, read: Callable[[str], np.ndarray], folder: Path, label: str) -> None:
        self._read = read
        self._folder = folder
        self._path = folder / f"{label}.npz"
        self.states = load_states(folder)
        self._new: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        key = text_key(text)
        if key not in self.states:
            self.states[key] = self._new[key] = self._read(text)
        return self.states[key]

    def close(self) -> None:
        if self._new:
            self._folder.mkdir(parents=True, exist_ok=True)
            earlier: dict[str, np.ndarray] = {}
            if self._path.is_file():
                with np.load(self._path) as chunk:
                    earlier = {key: chunk[key] for key in chunk.files}
            np.savez(self._path, **(earlier | self._new))
            self._new = {}
