"""Counterexamples from the most similar request (real MiniLM), and the relevance probe's head."""

from __future__ import annotations

import numpy as np

from app.catalog.scenarios import load_catalog
from app.records import JudgeItem
from training.datasets.examples import BuildReport, counterexamples
from training.datasets.similarity import neighbours_by_similarity
from training.heads.relevance_probe import (
    RelevanceHead,
    relevance_features,
    relevance_verdicts,
    swap_features,
)

BREAD = "How do I bake a loaf of sourdough bread at home?"
BREAD_TOO = "What is a simple recipe for baking homemade bread?"
TAXES = "Explain how income tax brackets work in the United States."


def pair(id_: str, question: str, good: str, other: str) -> JudgeItem:
    return JudgeItem.model_validate(
        {
            "id": id_,
            "question": question,
            "answers": [good, other],
            "scenario": "default",
            "label": {"winner": "A"},
        }
    )


def test_neighbours_put_the_similar_request_first_and_skip_copies():
    texts = [BREAD, TAXES, BREAD_TOO, BREAD]
    ranked = neighbours_by_similarity(texts)
    assert ranked[0][0] == 2  # the other bread question, not taxes
    assert 3 not in ranked[0]  # the identical text is no neighbour
    assert ranked[1][-1] in (0, 2, 3)  # taxes: a bread question is furthest
    assert sorted(ranked[2]) == [0, 1, 3]


def test_nearest_counterexample_answers_the_most_similar_request():
    bread_answer = "Mix flour, water, salt and starter; proof overnight; bake at 230 C. " * 4
    tax_answer = "Each bracket taxes only the income inside it, at its own rate. " * 4
    items = [
        pair("bread", BREAD, "Use a starter and bake it hot.", "I do not know."),
        pair("bread2", BREAD_TOO, bread_answer, "Buy some."),
        pair("tax", TAXES, tax_answer, "Taxes are complicated."),
    ]
    made = counterexamples(items, 1.0, 0, load_catalog(), BuildReport(), match="nearest")
    by_id = {m.id: m for m in made}
    first = by_id["bread-counter"]
    winner = first.label.winner
    good, off_topic = (0, 1) if winner == "A" else (1, 0)
    assert first.answers[good] == "Use a starter and bake it hot."
    assert first.answers[off_topic] == bread_answer  # the neighbour's, not the tax answer
    assert first.metadata["counterexample"] is True


def test_group_match_is_the_default_and_unchanged_by_the_option():
    items = [
        pair(str(n), f"Question number {n} about topic {n}?", "short", "x" * (10 + n))
        for n in range(8)
    ]
    catalog = load_catalog()
    default = counterexamples(items, 0.5, 0, catalog, BuildReport())
    group = counterexamples(items, 0.5, 0, catalog, BuildReport(), match="group")
    assert [m.model_dump() for m in default] == [m.model_dump() for m in group]
    assert len(default) == 4


def test_relevance_head_is_position_free_and_learns_the_on_topic_answer():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(200, 5))
    labels = ["A" if row[1] > 0 else "B" for row in features]
    head = RelevanceHead().fit(features, labels)
    probabilities = head.probabilities(features)
    mirrored = head.probabilities(swap_features(features))
    assert np.allclose(probabilities[:, 0], mirrored[:, 1])
    assert np.allclose(probabilities[:, 2], mirrored[:, 2])
    agreement = np.mean([v == t for v, t in zip(head.verdicts(features), labels)])
    assert agreement > 0.9


def test_relevance_features_prefer_the_answer_that_addresses_the_request():
    items = [
        pair("b", BREAD, "Feed the starter, mix the dough, let it rise, bake.", "Tax brackets."),
        JudgeItem(
            id="t", question=TAXES, answers=("Bread needs flour.", "Income is taxed in bands.")
        ),
    ]
    features = relevance_features(items)
    assert features.shape == (2, 5)
    assert relevance_verdicts(features) == ["A", "B"]
    assert features[0, 0] > 0  # log length ratio: A is longer
