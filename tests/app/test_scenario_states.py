"""Scenario detection from the judge model's own states of the request (a judge's
`scenario_classifier` with reads "states"), on the tiny real model; the MiniLM classifier
stands in where the backend reads no states; a states classifier's file round trip and the
standardization folded into its weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.catalog.scenario_detection import (
    ScenarioClassifier,
    detect_scenarios,
    request_text,
    shipped_classifier,
)
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.records import JudgeItem, Protocol, Status
from models.backends.base import BackendOptions
from models.judge_settings import JudgeSettings

LABELS = ("code_generation", "creative_writing", "default")
QUESTION = "Write a Python function that reverses a string."


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=4096, n_threads=1))
    yield backend
    backend.close()


def _classifier(size: int) -> ScenarioClassifier:
    rng = np.random.default_rng(3)
    weights = rng.normal(size=(len(LABELS), size)).astype(np.float32)
    return ScenarioClassifier(LABELS, weights, np.zeros(len(LABELS)), reads="states")


def test_the_judges_classifier_reads_its_states_of_the_request(tiny):
    classifier = _classifier(tiny.state_features("x").shape[0])
    service = JudgeService(tiny, "tiny")
    item = JudgeItem(id="s", question=QUESTION, answers=("def r(s): return s[::-1]",))
    config = JudgeConfig(
        protocol=Protocol.SINGLE,
        judge=JudgeSettings(template="pocketjudge-decision", criterion_scores=False),
        parts=JudgeParts(context_tokens=4096, classifier=classifier),
    )
    judged = service.judge(item, config)
    assert judged.status is Status.OK
    expected = classifier.guesses(tiny.state_features(request_text(QUESTION))[None, :])[0]
    assert judged.scenario_guesses == {g.scenario: round(g.probability, 4) for g in expected}
    assert judged.scenario == expected[0].scenario or expected[0].probability < 0.2


def test_without_states_the_minilm_classifier_stands_in():
    states = _classifier(8)
    allowed = list(shipped_classifier().labels)
    assert detect_scenarios([QUESTION], allowed, classifier=states) == detect_scenarios(
        [QUESTION], allowed
    )


def test_a_states_classifier_file_keeps_what_it_reads(tmp_path: Path):
    classifier = _classifier(6)
    classifier.save(tmp_path / "c.npz")
    loaded = ScenarioClassifier.load(tmp_path / "c.npz")
    assert loaded.reads == "states" and loaded.labels == LABELS
    np.testing.assert_allclose(loaded.weights, classifier.weights)


def test_fitting_on_states_folds_the_standardization_into_the_weights():
    from sklearn.linear_model import LogisticRegression

    from training.heads.scenario_classifier import SEED, fit

    rng = np.random.default_rng(0)
    labels = ["a", "b", "c"] * 20
    vectors = rng.normal(size=(60, 5)) * np.array([1e-3, 1.0, 50.0, 2.0, 1e2]) + 7.0
    vectors[:, 1] += np.array([{"a": 0.0, "b": 2.0, "c": 4.0}[y] for y in labels])
    classifier = fit(vectors, labels, 1.0, reads="states")
    center, spread = vectors.mean(axis=0), vectors.std(axis=0) + 1e-6
    reference = LogisticRegression(C=1.0, max_iter=3000, random_state=SEED)
    reference.fit((vectors - center) / spread, labels)
    expected = reference.predict_proba((vectors - center) / spread)
    np.testing.assert_allclose(classifier.probabilities(vectors), expected, atol=1e-4)
