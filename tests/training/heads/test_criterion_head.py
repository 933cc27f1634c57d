"""A criterion head: levels read apart, learnt from the verdict's read of each answer."""

from __future__ import annotations

import numpy as np

from training.datasets.criterion_head_data import AnswerTable
from training.heads.criterion_head import Settings, agreement, fit_head, out_of_fold, table_z

CRITERIA = ("accuracy", "clarity", "depth")


def _table(pairs: int = 60, seed: int = 0) -> AnswerTable:
    """Answers whose levels are a criterion's mean plus what their first state says
    (depth sees it twice as much), as if read apart."""
    rng = np.random.default_rng(seed)
    states = rng.normal(size=(2 * pairs, 12))
    states[:, 0] *= 3  # the state that matters is among the leading components
    table = AnswerTable(
        states=states,
        likelihood=rng.normal(size=(2 * pairs, 3)),
        characters=rng.integers(50, 500, size=2 * pairs).astype(float),
        pair=np.repeat(np.arange(pairs), 2),
    )
    means = {"accuracy": 7.0, "clarity": 8.0, "depth": 6.0}
    for answer in range(2 * pairs):
        for name in CRITERIA:
            gain = 2.0 if name == "depth" else 1.0
            table.answer.append(answer)
            table.criterion.append(name)
            table.target.append(means[name] + gain * states[answer, 0] / 3 + rng.normal(0, 0.3))
    for pair in range(pairs):
        lead = states[2 * pair, 0] - states[2 * pair + 1, 0]
        table.label.append("A" if lead > 0 else "B")
        table.verdict.append("A" if lead > 0 else "B")
        table.scenario.append("s")
    return table


def _vectors(seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.normal(size=16) for name in CRITERIA}


def test_out_of_fold_levels_follow_the_reads_apart():
    table = _table()
    levels = out_of_fold(table, Settings(components=4, alpha=1.0), _vectors())
    scores = agreement(table, levels)
    assert scores["values r"] > 0.9
    assert scores["decision as the reads apart %"] > 90
    assert scores["pairs"] == 60


def test_fitted_within_pairs_the_levels_follow_the_reads_apart_too():
    table = _table()
    settings = Settings(components=4, alpha=1.0, within_pairs=True)
    scores = agreement(table, out_of_fold(table, settings, _vectors()))
    assert scores["pair lead r"] > 0.9 and scores["decision as the reads apart %"] > 90


def test_the_criterion_means_alone_decide_nothing_about_a_pair():
    table = _table()
    levels = out_of_fold(table, Settings(components=0, alpha=float("inf")), _vectors())
    scores = agreement(table, levels)
    assert scores["decision as the reads apart %"] == 0  # both answers get the same: a tie
    assert abs(np.mean(levels) - np.mean(table.targets)) < 0.2


def test_crossing_with_the_criterion_learns_how_criteria_differ():
    table = _table(pairs=120)
    shared = Settings(components=4, alpha=1.0)
    crossed = Settings(
        components=4, alpha=1.0, cross_components=2, criterion_components=2, cross_alpha=1.0
    )
    plain = agreement(table, out_of_fold(table, shared, _vectors()))
    rich = agreement(table, out_of_fold(table, crossed, _vectors()))
    # depth moves twice as much as the others: only the crossed head can see it
    assert (
        rich["criterion profile r (within an answer)"]
        > plain["criterion profile r (within an answer)"]
    )


def test_a_criterion_never_seen_gets_the_overall_mean():
    table = _table()
    vectors = _vectors()
    head = fit_head(table, np.arange(len(table.target)), Settings(components=4, alpha=1.0), vectors)
    z = table_z(head, table, np.array([0, 0]))
    seen, unseen = head.levels(z, ["depth", "tone"], None)
    depth = head.means[head.criteria.index("depth")]
    assert abs((unseen - seen) - (head.overall - depth)) < 1e-9


def test_the_fit_reads_answers_as_the_engine_does():
    """The fit's features of a table row are the engine's of the same read
    (CriterionHead.features, app/deciding/criterion_head.py)."""
    from models.readings import FEATURES

    table = _table()
    table.likelihood = np.random.default_rng(3).normal(size=(len(table.states), len(FEATURES)))
    head = fit_head(table, np.arange(len(table.target)), Settings(components=4), _vectors())
    likelihood = dict(zip(FEATURES, table.likelihood[5]))
    engine = head.features(table.states[5], likelihood, int(table.characters[5]))
    assert np.allclose(engine, table_z(head, table, np.array([5]))[0])


def test_held_out_scores_compare_the_head_with_the_verdict_the_labels_and_length():
    from training.heads.criterion_head import held_out, pair_scores

    table = _table()
    lead = pair_scores(table, np.arange(len(table.target)), table.targets)
    table.verdict = table.label = ["A" if lead[p] > 0 else "B" for p in sorted(lead)]
    scores = held_out(table, table.targets)  # levels exactly as read apart
    assert scores["favour the verdict %"] == 100 == scores["decision as the reads apart %"]
    assert scores["their own decision right %"] == 100 == scores["the verdict right %"]
    assert 0 <= scores["the longer answer right %"] <= 100
    assert scores["pairs where they agree"] == 60 and scores["pairs where they disagree"] == 0
    table.target = [float("nan")] * len(table.target)  # rows judged without criteria
    assert "values r against the reads apart" not in held_out(table, np.zeros(len(table.target)))


def test_a_head_with_request_relevance_learns_what_it_adds_and_reads_as_the_engine():
    """Levels that also follow each answer's request relevance: only the head that reads it
    follows them, and its features of a row are the engine's with the same relevance."""
    from models.readings import FEATURES

    table = _table()
    rng = np.random.default_rng(5)
    table.likelihood = rng.normal(size=(len(table.states), len(FEATURES)))
    table.relevance = rng.uniform(0.0, 0.8, size=len(table.states))
    table.target = [
        level + 4.0 * table.relevance[answer] for level, answer in zip(table.target, table.answer)
    ]
    plain = agreement(table, out_of_fold(table, Settings(components=4, alpha=1.0), _vectors()))
    settings = Settings(components=4, alpha=1.0, relevance=True)
    near = agreement(table, out_of_fold(table, settings, _vectors()))
    assert near["values r"] > plain["values r"] + 0.05 and near["values r"] > 0.9
    head = fit_head(table, np.arange(len(table.target)), settings, _vectors())
    assert head.relevance and head.weights.shape == (4 + len(FEATURES) + 2,)
    likelihood = dict(zip(FEATURES, table.likelihood[5]))
    characters, relevance = int(table.characters[5]), table.relevance[5]
    engine = head.features(table.states[5], likelihood, characters, relevance)
    assert np.allclose(engine, table_z(head, table, np.array([5]))[0])
