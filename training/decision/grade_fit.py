"""A rubric grade's rule (a decision record's `rubric_grade`), fitted by request-grouped CV on
the one cache's graded rows (training/decision/graded.py), as `training.decision.fit` does.

The rubric read alone (its expected level) is a weak grade: the 1.5B puts most of its mass on
one high level. A single answer judged with a reference is read further anyway: the head's
own grade, the reference's mean log-probability after the answer and the judge's check of the
answer against the reference; the share of the reference's own words the answer states is
read from the text. A ridge over them, chosen among candidate signal sets and ridge
strengths by cross-validation with every request's answers in one fold, gives the grade
(app/deciding/rubric_grade.py). Pearson with the label is out of fold, beside the read alone
and the answer's length on the same rows, and again over random request-grouped splits: how
much the figure owes to one split.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from app.deciding.decision import RUBRIC_SIGNALS as SIGNALS
from app.deciding.decision import Fitted, GradeRule

FOLDS = 5
SPLITS = 10  # random request-grouped splits the nested figure is also taken over
ALPHAS = (0.1, 1.0, 10.0, 100.0)
CANDIDATES: dict[str, tuple[str, ...]] = {
    "the rubric read alone": ("level",),
    "read + head grade": ("level", "grade"),
    "read + check": ("level", "check"),
    "read + check + likelihood": ("level", "check", "likelihood"),
    "read + head grade + check": ("level", "grade", "check"),
    "read + head grade + check + likelihood": ("level", "grade", "check", "likelihood"),
    "read + head grade + check + likelihood + length": (
        "level",
        "grade",
        "check",
        "likelihood",
        "length",
    ),
    "read + check + length + reference words": ("level", "check", "length", "reference_words"),
    "read + head grade + check + length + reference words": (
        "level",
        "grade",
        "check",
        "length",
        "reference_words",
    ),
    "every signal": SIGNALS,
}


def table(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The signals, labels and request of each graded row (graded.labelled_graded) whose every
    signal was read."""
    x, y, groups, skipped = [], [], [], 0
    for row in rows:
        values = row["values"]
        if any(name not in values for name in SIGNALS):
            skipped += 1
            continue
        x.append([values[name] for name in SIGNALS])
        y.append(row["label"])
        groups.append(row["request"])
    return {
        "x": np.asarray(x, dtype=np.float64),
        "y": np.asarray(y, dtype=np.float64),
        "groups": groups,
        "skipped": skipped,
    }


def ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Weights and intercept of a ridge on standardized columns, given back in raw units."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    centred = y - y.mean()
    w = np.linalg.solve(z.T @ z + alpha * np.eye(z.shape[1]), z.T @ centred)
    weights = w / scale
    return weights, float(y.mean() - mean @ weights)


def fold_of(groups: Sequence[str], folds: int = FOLDS) -> np.ndarray:
    """Each row's fold: requests in order of first appearance, dealt round the folds."""
    order = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    return np.asarray([order[g] % folds for g in groups])


def held_in(x: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """`x` with each column held inside its range on `fitted` (as GradeRule.held)."""
    return np.clip(x, fitted.min(axis=0), fitted.max(axis=0))


def out_of_fold(x: np.ndarray, y: np.ndarray, folds: np.ndarray, alpha: float) -> np.ndarray:
    predicted = np.empty_like(y)
    for fold in np.unique(folds):
        held = folds == fold
        weights, intercept = ridge(x[~held], y[~held], alpha)
        predicted[held] = held_in(x[held], x[~held]) @ weights + intercept
    return predicted


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a, b)[0, 1])


def cross_validated(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each candidate's best ridge strength by out-of-fold Pearson."""
    x, y = found["x"], found["y"]
    folds = fold_of(found["groups"])
    result = {}
    for name, signals in CANDIDATES.items():
        columns = [SIGNALS.index(s) for s in signals]
        scores = {a: pearson(out_of_fold(x[:, columns], y, folds, a), y) for a in ALPHAS}
        alpha = max(scores, key=lambda a: scores[a])
        pearson_cv = round(scores[alpha], 4)
        result[name] = {"signals": list(signals), "alpha": alpha, "pearson": pearson_cv}
    return result


def random_folds(groups: Sequence[str], seed: int, folds: int = FOLDS) -> np.ndarray:
    """Each row's fold: requests shuffled by `seed`, dealt round the folds."""
    requests = list(dict.fromkeys(groups))
    shuffled = np.random.default_rng(seed).permutation(len(requests))
    fold = {requests[i]: k % folds for k, i in enumerate(shuffled)}
    return np.asarray([fold[g] for g in groups])


def nested(found: dict[str, Any], outer: np.ndarray | None = None) -> float:
    """Out-of-fold Pearson with the choice itself made inside each fold (candidate and ridge
    chosen by CV on the other requests alone): the figure the choice cannot flatter.
    `outer`: each row's outer fold (fold_of's by default)."""
    x, y, groups = found["x"], found["y"], found["groups"]
    outer = fold_of(groups) if outer is None else outer
    predicted = np.empty_like(y)
    for fold in np.unique(outer):
        held = outer == fold
        inner = {
            "x": x[~held],
            "y": y[~held],
            "groups": [g for g, h in zip(groups, held) if not h],
        }
        candidates = cross_validated(inner)
        best = candidates[max(candidates, key=lambda n: candidates[n]["pearson"])]
        columns = [SIGNALS.index(s) for s in best["signals"]]
        fitted = x[~held][:, columns]
        weights, intercept = ridge(fitted, y[~held], best["alpha"])
        predicted[held] = held_in(x[held][:, columns], fitted) @ weights + intercept
    return round(pearson(predicted, y), 4)


def split_spread(found: dict[str, Any], splits: int = SPLITS) -> dict[str, float]:
    """The nested figure over `splits` random request-grouped splits: mean, sd, lowest."""
    figures = np.asarray(
        [nested(found, random_folds(found["groups"], seed)) for seed in range(splits)]
    )
    return {
        "splits": splits,
        "mean": round(float(figures.mean()), 4),
        "sd": round(float(figures.std()), 4),
        "lowest": round(float(figures.min()), 4),
    }


def _range(column: np.ndarray) -> tuple[float, float]:
    """The column's lowest and highest value, rounded outward to 4 places (no fitted row
    falls outside its own range once saved)."""
    return (
        float(np.floor(column.min() * 1e4) / 1e4),
        float(np.ceil(column.max() * 1e4) / 1e4),
    )


def report(found: dict[str, Any]) -> dict[str, Any]:
    x, y = found["x"], found["y"]
    single = {s: round(pearson(x[:, i], y), 4) for i, s in enumerate(SIGNALS)}
    candidates = cross_validated(found)
    chosen = max(candidates, key=lambda n: candidates[n]["pearson"])
    signals = candidates[chosen]["signals"]
    columns = [SIGNALS.index(s) for s in signals]
    weights, intercept = ridge(x[:, columns], y, candidates[chosen]["alpha"])
    held_out = nested(found)
    return {
        "rows": len(y),
        "skipped": found["skipped"],
        "each signal alone (Pearson, all rows)": single,
        "candidates (request-grouped CV Pearson)": candidates,
        "chosen": chosen,
        "nested CV Pearson (the choice made inside each fold)": held_out,
        "nested CV Pearson over random request-grouped splits": split_spread(found),
        "grade": rubric_rule(
            {name: round(float(w), 6) for name, w in zip(signals, weights)},
            round(intercept, 6),
            held_out,
            f"{len(y)} rows of Prometheus' vicuna_eval, with their references",
            {name: _range(x[:, c]) for name, c in zip(signals, columns)},
        ),
    }


def rubric_rule(
    weights: dict[str, float],
    intercept: float,
    cv_pearson: float,
    rows: str,
    bounds: dict[str, tuple[float, float]] | None = None,
) -> GradeRule:
    """The rubric grade's rule (a record's `rubric_grade`): `intercept + sum(weights[s] x
    signal s)`, each signal as the fit config declares it, held inside its `bounds`, clipped
    to the rubric's 1-5."""
    from training.decision.fit_config import load_config

    config = load_config()
    cv = f"request-grouped nested CV Pearson {cv_pearson}"
    fitted = Fitted(by="python -m training.decision.fit", rows=rows, cv=cv)
    signals = tuple(
        config.fitted_signal("rubric_signals", name, weight, fitted, (bounds or {}).get(name))
        for name, weight in weights.items()
    )
    return GradeRule(
        signals=signals, intercept=intercept, scale=(1, 5), cv_pearson=cv_pearson, fitted=fitted
    )


def render(result: dict[str, Any]) -> str:
    lines = [
        f"{result['rows']} rows ({result['skipped']} without every signal left out)",
        "",
        "| signal alone | Pearson |",
        "|---|---:|",
    ]
    alone = result["each signal alone (Pearson, all rows)"]
    lines += [f"| {k} | {v:.3f} |" for k, v in alone.items()]
    lines += ["", "| candidate | ridge | CV Pearson |", "|---|---:|---:|"]
    for name, c in result["candidates (request-grouped CV Pearson)"].items():
        mark = " (chosen)" if name == result["chosen"] else ""
        lines.append(f"| {name}{mark} | {c['alpha']} | {c['pearson']:.3f} |")
    grade = result["grade"]
    lines += [
        "",
        "nested CV Pearson (candidate and ridge chosen inside each fold): "
        f"{result['nested CV Pearson (the choice made inside each fold)']:.3f}",
        "over {splits} random request-grouped splits: {mean:.3f} ± {sd:.3f} "
        "(lowest {lowest:.3f})".format(
            **result["nested CV Pearson over random request-grouped splits"]
        ),
        f"weights {grade.weights()}, intercept {grade.intercept}",
    ]
    return "\n".join(lines) + "\n"
