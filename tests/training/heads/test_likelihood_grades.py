"""The likelihood head's grade head: kept only when it cross-validates above zero (a grade
head that ranks answers worse than none must not replace the model's own grades), and
stretched so its grades spread as the ratings do."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from app.records import JudgeItem, Label
from models.readings import AnswerReading

ROWS = 60


class Readings:
    """A reading cache whose first state carries the row's grade through noise."""

    def __init__(self, rows: list[JudgeItem]) -> None:
        rng = np.random.default_rng(0)
        self.by_answer = {}
        for row in rows:
            states = rng.normal(size=8)
            states[0] = row.label.score + rng.normal(scale=3.0)  # the grade, through noise
            tokens = rng.uniform(-3, -0.1, size=5)
            self.by_answer[row.answers[0]] = AnswerReading(tokens, tokens - 1.0, states)

    def has(self, question: str, answer: str) -> bool:
        return answer in self.by_answer

    def get(self, question: str, answer: str) -> AnswerReading:
        return self.by_answer[answer]


@pytest.fixture
def rows(monkeypatch) -> list[JudgeItem]:
    grades = np.random.default_rng(1).integers(1, 11, size=ROWS)
    items = [
        JudgeItem(
            id=f"row-{n}",
            question=f"request {n}",
            answers=[f"answer {n}"],
            label=Label(score=float(g), scale_max=10),
        )
        for n, g in enumerate(grades)
    ]
    import training.datasets.state_head_data as data

    monkeypatch.setattr(data, "single_rows", lambda: (items, []))
    return items


def test_a_grade_head_that_cross_validates_reads_the_grades_at_their_spread(rows) -> None:
    from training.heads.likelihood_fit import fit_grades

    found = fit_grades(Readings(rows))
    assert found["weights"] is not None and found["report"]["rows"] == ROWS
    readings = Readings(rows)
    y = np.array([r.label.score for r in rows])
    grades = np.array(
        [
            found["intercept"]
            + float(np.asarray(found["weights"]) @ readings.get("", r.answers[0]).states)
            + sum(
                w * readings.get("", r.answers[0]).features()[f]
                for f, w in found["likelihood"].items()
            )
            for r in rows
        ]
    )
    assert spearmanr(grades, y).statistic > 0.5
    assert grades.std() == pytest.approx(y.std(), rel=0.25)  # stretched to the ratings' spread


def test_a_grade_head_below_zero_out_of_fold_is_not_kept(rows, monkeypatch) -> None:
    import sklearn.model_selection

    from training.heads.likelihood_fit import fit_grades

    # out-of-fold grades that rank the rows backwards: worse than no grade head at all
    monkeypatch.setattr(
        sklearn.model_selection, "cross_val_predict", lambda model, x, y, cv: -np.asarray(y)
    )
    found = fit_grades(Readings(rows))
    assert found["weights"] is None and found["likelihood"] == {}
    assert found["report"]["chosen"].startswith("none")
