"""Fit the scenario classifier (app/catalog/scenario_detection.py) and measure it.

    python -m training.heads.scenario_classifier [--out models/scenario_classifier.npz]

Reads Auto-J's scenario classifier split from ../shared/data/autoj/: the
training file fits the classifier, the test file (623 requests, never seen in
fitting) measures it. The L2 strength is chosen by 5-fold cross-validation on
the training file alone. Embeddings are cached in training/runs/scenario_classifier/.
Auto-J's own 13B classifier reaches 72.55 % on the same test file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.catalog.scenario_detection import CLASSIFIER_PATH, ScenarioClassifier, request_text

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "autoj"
TRAIN_FILE = DATA_DIR / "scenario_classifier_train.jsonl"
TEST_FILE = DATA_DIR / "scenario_classifier_test.jsonl"
RUN_DIR = Path(__file__).resolve().parents[1] / "runs" / "scenario_classifier"
STRENGTHS = (1.0, 4.0, 16.0, 64.0)  # C of scikit-learn's LogisticRegression
STATE_STRENGTHS = (0.003, 0.01, 0.03, 0.1)  # on standardized states (3,072 dimensions)
FOLDS = 5
SEED = 0


def read_split(path: Path) -> tuple[list[str], list[str]]:
    """(request texts, scenario labels) of one split; a request is instruction + input."""
    texts, labels = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        try:
            instruction, extra, label = row["instruction"], row.get("input") or "", row["category"]
        except KeyError as exc:
            raise SystemExit(f"{path}: line {number}: missing field {exc}") from exc
        texts.append(f"{instruction}\n\n{extra}" if extra.strip() else instruction)
        labels.append(label)
    return texts, labels


def embeddings(texts: Sequence[str], cache: Path) -> np.ndarray:
    """MiniLM embeddings of `texts`, cached (keyed by the texts themselves)."""
    import hashlib

    key = hashlib.sha256("\x1f".join(texts).encode()).hexdigest()[:16]
    path = cache.with_name(f"{cache.stem}-{key}.npy")
    if path.is_file():
        return np.load(path)
    from models.sentence_encoder import embed

    vectors = embed([request_text(t) for t in texts])
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def cached_states(texts: Sequence[str], folder: Path) -> np.ndarray:
    """The judge model's states of each request (as detection reads it), from a state cache."""
    from training.device.state_cache import load_states, text_key

    found = load_states(folder)
    try:
        return np.stack([found[text_key(request_text(t))] for t in texts]).astype(np.float32)
    except KeyError:
        raise SystemExit(f"{folder}: a request has no states; read them first") from None


def fit(
    vectors: np.ndarray, labels: Sequence[str], strength: float, reads: str = "minilm"
) -> ScenarioClassifier:
    """Logistic regression on `vectors`. States are standardized first (their dimensions
    differ in scale by orders of magnitude); the scaling is folded into the weights, so
    the classifier reads raw states."""
    from sklearn.linear_model import LogisticRegression

    center = vectors.mean(axis=0) if reads == "states" else np.zeros(vectors.shape[1])
    spread = vectors.std(axis=0) + 1e-6 if reads == "states" else np.ones(vectors.shape[1])
    model = LogisticRegression(C=strength, max_iter=3000, random_state=SEED)
    model.fit((vectors - center) / spread, labels)
    classes = tuple(str(c) for c in model.classes_)
    weights = model.coef_ / spread
    bias = model.intercept_ - weights @ center
    return ScenarioClassifier(classes, weights.astype(np.float32), bias, reads)


def cross_validated_accuracy(
    vectors: np.ndarray, labels: Sequence[str], strength: float, reads: str = "minilm"
) -> float:
    from sklearn.model_selection import StratifiedKFold

    labels_array = np.array(labels)
    # every class needs a member in each fold's training part: the rarest has 6 in train
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=SEED)
    right = 0
    for train, held in folds.split(vectors, labels_array):
        classifier = fit(vectors[train], labels_array[train].tolist(), strength, reads)
        guesses = classifier.guesses(vectors[held], top=1)
        right += sum(g[0].scenario == label for g, label in zip(guesses, labels_array[held]))
    return right / len(labels)


def accuracy(
    classifier: ScenarioClassifier,
    vectors: np.ndarray,
    labels: Sequence[str],
    allowed: Sequence[str] | None = None,
    top: int = 1,
) -> float:
    guesses = classifier.guesses(vectors, allowed, top)
    return sum(label in {g.scenario for g in row} for row, label in zip(guesses, labels)) / len(
        labels
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.heads.scenario_classifier")
    parser.add_argument("--out", type=Path, default=CLASSIFIER_PATH)
    parser.add_argument("--train", type=Path, default=TRAIN_FILE)
    parser.add_argument("--test", type=Path, default=TEST_FILE)
    parser.add_argument("--runs", type=Path, default=RUN_DIR)
    parser.add_argument(
        "--states",
        type=Path,
        help="fit on the judge model's states of each request instead of MiniLM: a state "
        "cache of training.device.gpu_levels (request texts read for their states)",
    )
    args = parser.parse_args(argv)
    for path in (args.train, args.test):
        if not path.is_file():
            raise SystemExit(f"{path} is missing: the Auto-J data belongs in ../shared/data/autoj/")
    from app.catalog.scenarios import load_catalog

    train_texts, train_labels = read_split(args.train)
    test_texts, test_labels = read_split(args.test)
    reads = "states" if args.states is not None else "minilm"
    if args.states is not None:
        train_vectors = cached_states(train_texts, args.states)
        test_vectors = cached_states(test_texts, args.states)
        strengths = STATE_STRENGTHS
    else:
        print(f"embedding {len(train_texts)} + {len(test_texts)} requests", file=sys.stderr)
        train_vectors = embeddings(train_texts, args.runs / "train.npy")
        test_vectors = embeddings(test_texts, args.runs / "test.npy")
        strengths = STRENGTHS
    scores = {c: cross_validated_accuracy(train_vectors, train_labels, c, reads) for c in strengths}
    best = max(strengths, key=lambda c: scores[c])
    classifier = fit(train_vectors, train_labels, best, reads)
    catalog = list(load_catalog().scenarios)
    report = {
        "reads": reads,
        "train_rows": len(train_labels),
        "test_rows": len(test_labels),
        "cv_accuracy_by_C": {str(c): round(a, 4) for c, a in scores.items()},
        "C": best,
        "test_accuracy": round(accuracy(classifier, test_vectors, test_labels), 4),
        "test_top3_accuracy": round(accuracy(classifier, test_vectors, test_labels, top=3), 4),
        "test_accuracy_catalog_only": round(
            accuracy(classifier, test_vectors, test_labels, allowed=catalog), 4
        ),
        "labels_not_in_catalog": sorted(set(classifier.labels) - set(catalog)),
    }
    classifier.save(args.out)
    args.runs.mkdir(parents=True, exist_ok=True)
    (args.runs / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1000:.0f} kB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
