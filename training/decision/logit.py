"""The decision fit's penalised ordinal logit and its request-grouped cross-validation: a
pair's score is its values' weighted sum around an offset, ties a third class between the
answers (training/decision/fit.py fits the pairwise record with it,
training/decision/shift_fit.py the criterion shift)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from training.decision.fit_config import FitConfig


@dataclass(frozen=True)
class Pairs:
    """The training pairs as arrays: each candidate's value (0 where a pair has none), the
    label (A 0, B 1, tie 2) and the request's group."""

    names: tuple[str, ...]
    values: np.ndarray
    present: np.ndarray  # where a pair has a value of the signal (a reference's: with one)
    labels: np.ndarray
    groups: np.ndarray
    sets: np.ndarray
    offset: np.ndarray  # the held signals' part of each pair's score (A's lead)

    def columns(self, names: Sequence[str]) -> np.ndarray:
        return self.values[:, [self.names.index(n) for n in names]]

    def subset(self, keep: np.ndarray | None = None, names: Sequence[str] | None = None) -> Pairs:
        rows = np.ones(len(self.labels), dtype=bool) if keep is None else keep
        cols = [self.names.index(n) for n in (names or self.names)]
        return Pairs(
            tuple(names or self.names),
            self.values[rows][:, cols],
            self.present[rows][:, cols],
            self.labels[rows],
            self.groups[rows],
            self.sets[rows],
            self.offset[rows],
        )


@dataclass(frozen=True)
class Weights:
    """An ordinal logit's weights (on the signals' own scale) and tie threshold."""

    names: tuple[str, ...]
    weights: np.ndarray
    tie_threshold: float

    def probabilities(self, values: np.ndarray, offset: np.ndarray | float = 0.0) -> np.ndarray:
        score = values @ self.weights + offset
        p_a = expit(score - self.tie_threshold)
        p_b = expit(-score - self.tie_threshold)
        return np.stack([p_a, p_b, np.clip(1 - p_a - p_b, 0.0, 1.0)], axis=1)


def _objective(params: np.ndarray, x: np.ndarray, y: np.ndarray, c: float, fixed: tuple):
    """The penalised negative log-likelihood of the ordinal logit and its gradient (`fixed`:
    the offset of each row's score and whether a tie threshold is fitted)."""
    offset, ties = fixed
    k = x.shape[1]
    w = params[:k]
    t = float(np.logaddexp(0.0, params[k])) if ties else 0.0  # softplus: t >= 0, no bound
    s = x @ w + offset
    a, u, b = expit(s - t), expit(s + t), expit(-s - t)
    d_s, d_t = np.zeros_like(s), np.zeros_like(s)
    loss = 0.0
    is_a, is_b, is_tie = y == 0, y == 1, y == 2
    loss -= log_expit(s[is_a] - t).sum() + log_expit(-s[is_b] - t).sum()
    d_s[is_a], d_t[is_a] = -(1 - a[is_a]), 1 - a[is_a]
    d_s[is_b], d_t[is_b] = 1 - b[is_b], 1 - b[is_b]
    if is_tie.any():
        q = np.maximum(u[is_tie] - a[is_tie], 1e-12)
        loss -= np.log(q).sum()
        du, da = u[is_tie] * (1 - u[is_tie]), a[is_tie] * (1 - a[is_tie])
        d_s[is_tie], d_t[is_tie] = -(du - da) / q, -(du + da) / q
    loss += (w @ w) / (2 * c)
    grad = np.concatenate([x.T @ d_s + w / c, [d_t.sum() * expit(params[k])] if ties else []])
    return loss, grad


def fit_weights(
    values: np.ndarray,
    labels: np.ndarray,
    names: Sequence[str],
    c: float,
    offset: np.ndarray | None = None,
) -> Weights:
    """The ordinal logit on `values` (both orders of each pair) around `offset` (the held
    signals' part of the score), L2 strength `c` on the values scaled to unit root mean
    square; a tie threshold only where there are ties."""
    scale = np.sqrt(np.mean(values**2, axis=0))
    scale[scale == 0] = 1.0
    x = values / scale
    base = np.zeros(len(labels)) if offset is None else offset
    swapped = np.where(labels == 2, 2, 1 - np.minimum(labels, 1))
    x2, y2 = np.concatenate([x, -x]), np.concatenate([labels, swapped])
    ties = bool(np.any(labels == 2))
    start = np.zeros(x.shape[1] + (1 if ties else 0))
    if not start.size:  # every signal held, no ties: nothing to fit
        return Weights(tuple(names), np.zeros(0), 0.0)
    fixed = (np.concatenate([base, -base]), ties)
    found = minimize(_objective, start, args=(x2, y2, c, fixed), jac=True, method="L-BFGS-B")
    k = x.shape[1]
    t = float(np.logaddexp(0.0, found.x[k])) if ties else 0.0
    return Weights(tuple(names), found.x[:k] / scale, t)


def folds_of(groups: np.ndarray, folds: int) -> np.ndarray:
    """A fold per pair, by request (a request's pairs share one fold)."""
    from sklearn.model_selection import GroupKFold

    fold = np.zeros(len(groups), dtype=int)
    for n, (_, test) in enumerate(GroupKFold(n_splits=folds).split(groups, groups=groups)):
        fold[test] = n
    return fold


def out_of_fold(pairs: Pairs, names: Sequence[str], c: float, fold: np.ndarray) -> np.ndarray:
    """Each pair's (P(A), P(B), P(tie)) from a fit on the other folds."""
    values = pairs.columns(names)
    found = np.zeros((len(pairs.labels), 3))
    for n in np.unique(fold):
        train = fold != n
        fitted = fit_weights(values[train], pairs.labels[train], names, c, pairs.offset[train])
        found[~train] = fitted.probabilities(values[~train], pairs.offset[~train])
    return found


def pair_losses(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    chosen = probabilities[np.arange(len(labels)), labels]
    return -np.log(np.clip(chosen, 1e-12, 1.0))


def log_loss(probabilities: np.ndarray, labels: np.ndarray) -> float:
    return float(pair_losses(probabilities, labels).mean())


def agreement(probabilities: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.argmax(probabilities, axis=1) == labels))


def best_strength(pairs: Pairs, names: Sequence[str], config: FitConfig, fold: np.ndarray):
    """The L2 strength by the one-standard-error rule: the strongest penalty (smallest C)
    whose cross-validated log loss is within one standard error of the lowest, or within
    `min_gain` (the least gain per pair the fit counts, as for a signal) where that is wider.
    Where the pairs are separable (every reference-decided pair right) the loss falls on as C
    grows and the lowest is wherever the grid ends; the rule stops where more C buys less
    than the loss's own noise. That C, its loss and its predictions."""
    tried = []
    for c in sorted(config.strengths):
        probabilities = out_of_fold(pairs, names, c, fold)
        tried.append((pair_losses(probabilities, pairs.labels), c, probabilities))
    lowest = min(tried, key=lambda item: item[0].mean())[0]
    within = lowest.mean() + max(lowest.std() / np.sqrt(len(lowest)), config.min_gain)
    losses, c, probabilities = next(t for t in tried if t[0].mean() <= within)
    return c, float(losses.mean()), probabilities
