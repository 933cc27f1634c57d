"""Which scenario is a request? A linear classifier over MiniLM embeddings.

When the scenario is `auto` and a row names none, the judge used to fall back to
`default` for every row. This classifier (multinomial logistic regression on the
all-MiniLM-L6-v2 embedding of the request, fitted by `python -m
training.heads.scenario_classifier` on Auto-J's scenario classifier training split)
picks one of the catalog's scenarios instead, and gives its top guesses with
their probabilities so the app can show them and the user can override.

The fitted weights ship as `models/scenario_classifier.npz` (about 90 kB);
`make models` rebuilds the file when it is missing. Without it, detection is off
and `auto` falls back to `default`, as before.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.registry import MODELS_DIR

CLASSIFIER_PATH = MODELS_DIR / "scenario_classifier.npz"
REQUEST_CHARS = 1000  # MiniLM reads 256 word pieces; the rest of a long request is not read
TOP = 3
# Below this, the guess is right about 1 time in 5 on Auto-J's test split (20 % of 120
# requests), no better than the general criteria: the item keeps `default`.
MIN_PROBABILITY = 0.2
FALLBACK = "default"


@dataclass(frozen=True)
class ScenarioGuess:
    scenario: str
    probability: float


@dataclass(frozen=True)
class ScenarioClassifier:
    """Softmax(W x + b) over `labels`: x the unit MiniLM embedding of the request, or the
    judge model's own states of it (mean and last token, `reads == "states"`)."""

    labels: tuple[str, ...]
    weights: np.ndarray  # (labels, vector size)
    bias: np.ndarray  # (labels,)
    reads: str = "minilm"  # "minilm" or "states"

    def probabilities(self, vectors: np.ndarray) -> np.ndarray:
        logits = vectors @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=1, keepdims=True)

    def guesses(
        self, vectors: np.ndarray, allowed: Sequence[str] | None = None, top: int = TOP
    ) -> list[list[ScenarioGuess]]:
        """The `top` most probable scenarios per row, best first; with `allowed`, only
        those (a label the catalog lacks gives its probability to nobody)."""
        keep = [i for i, label in enumerate(self.labels) if allowed is None or label in allowed]
        result = []
        for row in self.probabilities(vectors):
            order = sorted(keep, key=lambda i: -row[i])[:top]
            result.append([ScenarioGuess(self.labels[i], float(row[i])) for i in order])
        return result

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            path,
            labels=np.array(self.labels),
            weights=self.weights.astype(np.float32),
            bias=self.bias.astype(np.float32),
            reads=np.array(self.reads),
        )

    @classmethod
    def load(cls, path: Path) -> ScenarioClassifier:
        with np.load(path, allow_pickle=False) as data:
            labels = tuple(str(label) for label in data["labels"])
            weights, bias = data["weights"], data["bias"]
            reads = str(data["reads"]) if "reads" in data.files else "minilm"
        if weights.shape != (len(labels), weights.shape[1]) or bias.shape != (len(labels),):
            raise ValueError(f"{path}: weights {weights.shape} and bias {bias.shape} do not match")
        if reads not in ("minilm", "states"):
            raise ValueError(f"{path}: reads is {reads!r}, not 'minilm' or 'states'")
        return cls(labels, weights, bias, reads)


@functools.cache
def load_classifier(path: Path) -> ScenarioClassifier:
    """A judge's own classifier file (read once per process)."""
    return ScenarioClassifier.load(path)


@functools.cache
def shipped_classifier() -> ScenarioClassifier | None:
    """The committed classifier, or None when its file is missing (detection off)."""
    return ScenarioClassifier.load(CLASSIFIER_PATH) if CLASSIFIER_PATH.is_file() else None


def chosen_scenario(guesses: Sequence[ScenarioGuess]) -> str:
    """The scenario to judge with: the best guess, unless it is too unsure."""
    if guesses and guesses[0].probability >= MIN_PROBABILITY:
        return guesses[0].scenario
    return FALLBACK


def request_text(question: str) -> str:
    return question[:REQUEST_CHARS]


def detect_scenarios(
    questions: Sequence[str],
    allowed: Sequence[str],
    top: int = TOP,
    classifier: ScenarioClassifier | None = None,
    read_states: Callable[[str], np.ndarray] | None = None,
) -> list[list[ScenarioGuess]] | None:
    """Top guesses per request among `allowed` scenarios; None when detection is off.

    `classifier` (a judge's own, reading its states through `read_states`) replaces the
    shipped MiniLM one; without `read_states` (a backend that reads no states) the
    shipped one is used."""
    if classifier is None or (classifier.reads == "states" and read_states is None):
        classifier = shipped_classifier()
    if classifier is None:
        return None
    texts = [request_text(q) for q in questions]
    if classifier.reads == "states":
        assert read_states is not None
        vectors = np.stack([read_states(text) for text in texts])
    else:
        from models.sentence_encoder import embed

        vectors = embed(texts)
    return classifier.guesses(vectors, allowed, top)
