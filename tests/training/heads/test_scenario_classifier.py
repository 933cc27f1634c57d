"""The scenario classifier: fitted on a small real split with MiniLM, saved, loaded, used."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from app.catalog.scenario_detection import CLASSIFIER_PATH, ScenarioClassifier, chosen_scenario
from training.heads.scenario_classifier import main

REQUESTS = {
    "code_generation": [
        "Write a Python function that sorts a list of numbers.",
        "Implement binary search in JavaScript.",
        "Write a SQL query that counts orders per customer.",
        "Create a Rust function that parses a CSV line.",
        "Write a bash script that renames all .txt files.",
        "Implement a stack class in Java.",
    ],
    "recipe_generation": [
        "Give me a recipe for banana bread.",
        "How do I cook a vegetarian lasagna?",
        "Write a recipe for a quick chicken curry.",
        "What is a simple recipe for pancakes?",
        "Suggest a recipe for tomato soup.",
        "How do I bake chocolate chip cookies?",
    ],
    "translation": [
        "Translate 'good morning' into French.",
        "Translate this sentence into German: I like trains.",
        "How do you say 'thank you' in Japanese?",
        "Translate the following into Spanish: where is the station?",
        "Translate 'see you tomorrow' to Italian.",
        "Put this into Portuguese: the weather is nice today.",
    ],
}


def write_split(path: Path, rows: dict[str, list[str]]) -> Path:
    lines = [
        json.dumps({"category": label, "instruction": text, "input": ""})
        for label, texts in rows.items()
        for text in texts
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fit_save_load_and_detect(tmp_path: Path) -> None:
    train = write_split(tmp_path / "train.jsonl", REQUESTS)
    test = write_split(
        tmp_path / "test.jsonl",
        {
            "code_generation": ["Write a Go function that reverses a string."],
            "recipe_generation": ["Give me a recipe for apple pie."],
            "translation": ["Translate 'I am hungry' into French."],
        },
    )
    out = tmp_path / "classifier.npz"
    assert main(["--train", str(train), "--test", str(test), "--out", str(out),
                 "--runs", str(tmp_path / "runs")]) == 0  # fmt: skip
    report = json.loads((tmp_path / "runs" / "report.json").read_text())
    assert report["train_rows"] == 18 and report["test_rows"] == 3
    assert report["test_accuracy"] == 1.0
    classifier = ScenarioClassifier.load(out)
    assert set(classifier.labels) == set(REQUESTS)
    assert classifier.weights.shape == (3, 384) and classifier.weights.dtype == np.float32


def test_the_shipped_classifier_loads_and_knows_the_catalog() -> None:
    from app.catalog.scenarios import load_catalog

    classifier = ScenarioClassifier.load(CLASSIFIER_PATH)
    catalog = set(load_catalog().scenarios)
    assert len(set(classifier.labels) & catalog) >= 57  # Auto-J's labels: all but one
    vectors = np.zeros((1, classifier.weights.shape[1]), dtype=np.float32)
    (guesses,) = classifier.guesses(vectors, allowed=list(catalog))
    assert len(guesses) == 3 and all(g.scenario in catalog for g in guesses)
    assert chosen_scenario([]) == "default"
