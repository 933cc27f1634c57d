"""Criterion heads: every criterion's level read off the verdict's own read of an answer.

    python -m training.heads.criterion_head cv [--run training/runs/criterion-head]

The page's criterion scores are read apart today: each answer is read again in a grading
prompt per criterion, 2.5-3.8x the verdict's cost (bench/heads.md). The verdict's head
already reads every answer once (its states and likelihoods, app/deciding/state_judging.py).
A criterion head maps that read to the levels the reads apart give, for any criterion
(named by its text, embedded by MiniLM), so the page costs one read:

    level(answer, c) = mean(c) + w . z(answer) + z(answer)[:k]^T  M  e(c)[:m]

`z` is the answer's states (PCA) with its likelihood features and log length, standardized;
`mean(c)` a criterion's mean level on the training rows, shrunk toward the overall mean
(a criterion never seen gets the overall mean); `w` a ridge fit of what the mean leaves;
`M` a ridge fit of the rest on the products of the leading state components and the
criterion text's embedding (how criteria differ in what they see). Targets are the
probability-weighted levels of the reads apart on Auto-J training pairs
(training.datasets.criterion_rows, training.datasets.criterion_head_data). `cv` chooses by
cross-validation grouped by pair, on those rows alone.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.deciding.criterion_head import CriterionHead, criterion_text
from app.deciding.state_head import StateHead
from training.datasets.criterion_head_data import AnswerTable

MEAN_SHRINK = 5.0  # a criterion's mean counts this many rows of the overall mean


def library_text(key: str) -> str:
    """What the criterion head embeds of a library criterion (its name and description)."""
    from app.catalog.scenarios import load_catalog

    spec = load_catalog().criteria[key]
    return criterion_text(spec.name, spec.description)


def criterion_vectors(names: Sequence[str]) -> dict[str, np.ndarray]:
    """MiniLM embeddings of each distinct criterion's text."""
    from models.sentence_encoder import shared_encoder

    distinct = sorted(set(names))
    vectors = shared_encoder().encode([library_text(n) for n in distinct])
    return dict(zip(distinct, vectors.astype(np.float64)))


@dataclass
class Settings:
    components: int = 32  # state PCA components in z
    # the verdict head's and the grade head's state directions first in z (their utility and
    # grade of the answer, fitted on thousands of labelled rows)
    head_directions: bool = False
    # fit w on the two answers' differences on each criterion (what a pair's bars compare),
    # not on the levels themselves (where the request's own difficulty dominates)
    within_pairs: bool = False
    alpha: float = 10.0  # ridge of the shared part
    cross_components: int = 0  # leading z components crossed with the criterion (0: none)
    criterion_components: int = 8  # criterion-embedding PCA components crossed
    relevance: bool = False  # z ends with the answer's request relevance
    cross_alpha: float = 100.0


def fit_head(
    table: AnswerTable,
    rows: np.ndarray,
    settings: Settings,
    vectors: dict[str, np.ndarray],
    directions: np.ndarray | None = None,
) -> CriterionHead:
    """A head fitted on rows `rows` of `table` (see the module's docstring). `directions`:
    the verdict's state head's directions (verdict, grade), put first in z where asked."""
    s = settings
    answers = np.asarray(table.answer)[rows]
    names = [table.criterion[r] for r in rows]
    y = table.targets[rows]
    used = np.unique(answers)
    state_mean = table.states[used].mean(axis=0)
    centred = table.states[used] - state_mean
    basis = np.linalg.svd(centred, full_matrices=False)[2][: s.components]
    if s.head_directions and directions is not None:
        basis = np.vstack([directions / np.linalg.norm(directions, axis=1, keepdims=True), basis])
    overall = float(y.mean())
    criteria = tuple(sorted(set(names)))
    means = []
    for name in criteria:
        mine = y[[n == name for n in names]]
        means.append((mine.sum() + MEAN_SHRINK * overall) / (len(mine) + MEAN_SHRINK))
    embedded = np.array([vectors[n] for n in criteria])
    e_basis = np.linalg.svd(embedded - embedded.mean(axis=0), full_matrices=False)[2]
    unscaled = CriterionHead(  # z before standardizing: the engine's features, one place
        state_mean=state_mean,
        state_basis=basis,
        z_mean=np.zeros(1),
        z_scale=np.ones(1),
        weights=np.zeros(0),
        criteria=criteria,
        means=np.array(means),
        overall=overall,
        cross=np.zeros(0),
        cross_components=s.cross_components,
        e_mean=embedded.mean(axis=0),
        e_basis=e_basis[: s.criterion_components],
        relevance=s.relevance,
    )
    raw = table_z(unscaled, table, used)
    head = replace(
        unscaled,
        z_mean=raw.mean(axis=0),
        z_scale=raw.std(axis=0) + 1e-9,
        weights=np.zeros(raw.shape[1]),
    )
    z = table_z(head, table, answers)
    residual = y - _means(head, names)
    if not np.isfinite(s.alpha):
        weights = np.zeros(z.shape[1])
    elif s.within_pairs:
        dz, dy = pair_differences(table, rows, z, residual)
        weights = _ridge(dz, dy, s.alpha)
    else:
        weights = _ridge(z, residual, s.alpha)
    head = replace(head, weights=weights)
    if s.cross_components:
        e = (np.array([vectors[n] for n in names]) - head.e_mean) @ head.e_basis.T
        crossed = _crossed(z[:, : s.cross_components], e)
        head = replace(head, cross=_ridge(crossed, residual - z @ weights, s.cross_alpha))
    return head


def pair_differences(
    table: AnswerTable, rows: np.ndarray, z: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(z of A - z of B, y of A - y of B) for every criterion both answers of a pair have;
    `z` and `y` are per row of `rows`."""
    at: dict[tuple[int, int, str], int] = {}
    answers = np.asarray(table.answer)[rows]
    for n, (answer, row) in enumerate(zip(answers, rows)):
        at[(int(table.pair[answer]), int(answer), table.criterion[row])] = n
    dz, dy = [], []
    for (pair, answer, name), n in at.items():
        other = (pair, answer + 1, name)
        if other in at:  # answers of a pair are numbered one after the other
            m = at[other]
            dz.append(z[n] - z[m])
            dy.append(y[n] - y[m])
    return np.array(dz), np.array(dy)


def _means(head: CriterionHead, names: Sequence[str]) -> np.ndarray:
    known = dict(zip(head.criteria, head.means))
    return np.array([known.get(n, head.overall) for n in names])


def table_z(head: CriterionHead, table: AnswerTable, answers: np.ndarray) -> np.ndarray:
    """z of answers `answers` of `table`, as the engine reads them (CriterionHead.features_of)."""
    near = table.relevance[answers] if head.relevance else None
    return head.features_of(
        table.states[answers], table.likelihood[answers], table.characters[answers], near
    )


def predict(
    head: CriterionHead,
    table: AnswerTable,
    rows: np.ndarray,
    vectors: dict[str, np.ndarray],
) -> np.ndarray:
    """The head's level for rows `rows` of `table`."""
    answers = np.asarray(table.answer)[rows]
    names = [table.criterion[r] for r in rows]
    e = np.array([vectors[n] for n in names])
    return head.levels(table_z(head, table, answers), names, e)


def _ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> np.ndarray:
    return np.linalg.solve(x.T @ x + alpha * np.eye(x.shape[1]), x.T @ y)


def _crossed(z: np.ndarray, e: np.ndarray) -> np.ndarray:
    return (z[:, :, None] * e[:, None, :]).reshape(len(z), -1)


def pair_scores(table: AnswerTable, rows: np.ndarray, levels: np.ndarray) -> dict[int, float]:
    """Per pair: A's weighted criterion levels minus B's (the sign of their overalls' gap)."""
    answers = np.asarray(table.answer)[rows]
    weights = np.asarray(table.weight)[rows] if table.weight else np.ones(len(rows))
    sums: dict[int, list[float]] = {}
    for answer, level in zip(answers, weights * levels):
        pair = int(table.pair[answer])
        first = answer == np.flatnonzero(table.pair == pair)[0]
        sums.setdefault(pair, []).append(level if first else -level)
    return {pair: float(np.sum(values)) for pair, values in sums.items()}


TIE_LEAD = 1e-9  # a head's lead this small is a tie (the criterion means alone: rounding)


def decisions(leads: dict[int, float], tie: float = 0.0) -> dict[int, str]:
    """Per pair: A, B, or tie where |lead| <= `tie`."""
    return {p: "A" if lead > tie else "B" if lead < -tie else "tie" for p, lead in leads.items()}


def out_of_fold(
    table: AnswerTable,
    settings: Settings,
    vectors: dict[str, np.ndarray],
    directions: np.ndarray | None = None,
    folds: int = 5,
) -> np.ndarray:
    """Each row's level predicted by a head fitted without its pair (grouped K-fold)."""
    from sklearn.model_selection import GroupKFold

    rows = np.arange(len(table.target))
    groups = table.pair[np.asarray(table.answer)]
    predicted = np.zeros(len(rows))
    for train, test in GroupKFold(n_splits=folds).split(rows, groups=groups):
        head = fit_head(table, train, settings, vectors, directions)
        predicted[test] = predict(head, table, test, vectors)
    return predicted


def agreement(table: AnswerTable, levels: np.ndarray) -> dict[str, float]:
    """How levels (one per row of `table`) compare with the reads apart and the labels."""
    rows = np.arange(len(table.target))
    target, answers = table.targets, np.asarray(table.answer)
    mine, theirs = pair_scores(table, rows, levels), pair_scores(table, rows, target)
    pairs = sorted(mine)
    own, apart = decisions(mine, TIE_LEAD), decisions(theirs)
    decisive = [p for p in pairs if table.label[p] in ("A", "B")]
    decided = [p for p in pairs if table.verdict[p] in ("A", "B")]
    profile = []
    for answer in np.unique(answers):
        at = answers == answer
        if at.sum() > 2 and target[at].std() > 0 and levels[at].std() > 0:
            profile.append(np.corrcoef(levels[at], target[at])[0, 1])
    return {
        "values r": float(np.corrcoef(levels, target)[0, 1]),
        "criterion profile r (within an answer)": float(np.mean(profile)) if profile else 0.0,
        "pair lead r": float(np.corrcoef(list(mine.values()), list(theirs.values()))[0, 1]),
        "decision as the reads apart %": 100 * np.mean([own[p] == apart[p] for p in pairs]),
        "decision right %": 100 * np.mean([own[p] == table.label[p] for p in decisive]),
        "reads apart right %": 100 * np.mean([apart[p] == table.label[p] for p in decisive]),
        "favour the verdict %": 100 * np.mean([own[p] == table.verdict[p] for p in decided]),
        "reads apart favour the verdict %": 100
        * np.mean([apart[p] == table.verdict[p] for p in decided]),
        "pairs": len(pairs),
        "decisive": len(decisive),
    }


def head_directions(head: StateHead) -> np.ndarray:
    """The verdict head's and the grade head's directions on the states (mean, last)."""
    grade = head.grade_weights or tuple(0.0 for _ in head.weights)
    return np.array([head.weights, grade], dtype=np.float64)


def cross_validate(
    table: AnswerTable, grid: Sequence[Settings], directions: np.ndarray | None
) -> list[tuple[Settings, dict]]:
    vectors = criterion_vectors(table.criterion)
    return [(s, agreement(table, out_of_fold(table, s, vectors, directions))) for s in grid]


GRID = (
    Settings(components=0, alpha=float("inf")),  # the criterion means alone
    Settings(components=0, alpha=100.0, head_directions=True),
    Settings(components=0, alpha=300.0, head_directions=True),
    Settings(components=0, alpha=1000.0, head_directions=True),
    Settings(components=0, alpha=3000.0, head_directions=True),
    # with the answer's request relevance (session 32)
    Settings(components=0, alpha=300.0, head_directions=True, relevance=True),
    Settings(components=0, alpha=1000.0, head_directions=True, relevance=True),  # CHOSEN
    Settings(components=0, alpha=3000.0, head_directions=True, relevance=True),
    Settings(components=0, alpha=10.0, head_directions=True, within_pairs=True),
    Settings(components=0, alpha=100.0, head_directions=True, within_pairs=True),
    Settings(components=8, alpha=100.0, head_directions=True, within_pairs=True),
    Settings(components=16, alpha=300.0, within_pairs=True),
    Settings(
        components=0, alpha=100.0, head_directions=True, within_pairs=True, cross_components=2
    ),
)


def held_out(table: AnswerTable, levels: np.ndarray) -> dict[str, float]:
    """A head's levels on rows it never trained on (NaN targets allowed: rows judged without
    criteria), against the head's verdict, the labels and the longer answer."""
    rows = np.arange(len(table.target))
    mine = pair_scores(table, rows, levels)
    pairs = sorted(mine)
    own = decisions(mine, TIE_LEAD)
    decisive = [p for p in pairs if table.label[p] in ("A", "B")]
    decided = [p for p in pairs if table.verdict[p] in ("A", "B")]
    first = {int(table.pair[a]): a for a in range(len(table.pair))[::-1]}
    longer = {
        p: "A" if table.characters[first[p]] > table.characters[first[p] + 1] else "B"
        for p in pairs
    }
    scores = {
        "favour the verdict %": 100 * np.mean([own[p] == table.verdict[p] for p in decided]),
        "decided": len(decided),
        "their own decision right %": 100 * np.mean([own[p] == table.label[p] for p in pairs]),
        "the verdict right %": 100 * np.mean([table.verdict[p] == table.label[p] for p in pairs]),
        "the longer answer right %": 100 * np.mean([longer[p] == table.label[p] for p in pairs]),
        "pairs": len(pairs),
        "decisive": len(decisive),
    }
    for name, same in (("agree", True), ("disagree", False)):
        mine_too = [p for p in decided if (own[p] == table.verdict[p]) is same]
        right = [table.verdict[p] == table.label[p] for p in mine_too]
        scores[f"the verdict right where they {name} %"] = 100 * np.mean(right) if right else 0.0
        scores[f"pairs where they {name}"] = len(mine_too)
    known = ~np.isnan(table.targets)
    if known.sum() > 2:
        scores["values r against the reads apart"] = float(
            np.corrcoef(levels[known], table.targets[known])[0, 1]
        )
        read = pair_scores(table, rows[known], table.targets[known])
        sign = decisions(read)
        both = sorted(read)
        scores["pairs read apart too"] = len(both)
        scores["decision as the reads apart %"] = 100 * np.mean([own[p] == sign[p] for p in both])
        scores["the reads apart favour the verdict %"] = 100 * np.mean(
            [sign[p] == table.verdict[p] for p in both if table.verdict[p] in ("A", "B")]
        )
        scores["the reads apart right %"] = 100 * np.mean([sign[p] == table.label[p] for p in both])
    return scores


# by pair lead r: session 27's setting, with request relevance since session 32 (0.568 / 0.540)
CHOSEN = Settings(components=0, alpha=1000.0, head_directions=True, relevance=True)


def main(argv: list[str] | None = None) -> None:
    from pathlib import Path

    from app.deciding.state_head import load_state_head
    from models.registry import MODELS_DIR, load_registry
    from training.datasets.criterion_head_data import judged_rows, load_table, with_levels_of
    from training.datasets.criterion_rows import RUN_DIR

    parser = argparse.ArgumentParser(prog="python -m training.heads.criterion_head")
    parser.add_argument("command", choices=["cv", "fit", "score"])
    parser.add_argument("--run", type=Path, default=RUN_DIR, help="training rows read apart")
    parser.add_argument("--out", type=Path, help="fit: the head's .npz")
    parser.add_argument("--head", type=Path, help="score: a fitted head's .npz")
    parser.add_argument("--held-out", type=Path, help="score: an evaluate run folder")
    parser.add_argument("--inputs", type=Path, nargs="*", default=(), help="score: its input files")
    parser.add_argument(
        "--apart", type=Path, help="score: judgments of the same rows with the criteria read apart"
    )
    args = parser.parse_args(argv)
    entry = load_registry().get()
    state_head = load_state_head(MODELS_DIR / str(entry.judging.state_head))
    if args.command == "score":
        table = load_table(args.held_out, state_head, args.inputs, levels=False)
        if args.apart:
            table = with_levels_of(table, judged_rows([args.apart]))
        head = CriterionHead.load(args.head)
        vectors = criterion_vectors(table.criterion)
        print(held_out(table, predict(head, table, np.arange(len(table.target)), vectors)))
        return
    table = load_table(args.run, state_head)
    print(
        f"{len(table.label)} pairs, {len(table.states)} answers, {len(table.target)} levels "
        f"({table.missing} judged pairs without reads)"
    )
    directions = head_directions(state_head)
    if args.command == "fit":
        vectors = criterion_vectors(table.criterion)
        head = fit_head(table, np.arange(len(table.target)), CHOSEN, vectors, directions)
        head.save(args.out)
        print(f"{args.out}: {CHOSEN}")
        return
    for settings, scores in cross_validate(table, GRID, directions):
        print(settings)
        print("   ", {k: round(float(v), 3) for k, v in scores.items()})


if __name__ == "__main__":
    main()
