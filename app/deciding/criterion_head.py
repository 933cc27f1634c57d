"""Criterion scores from the verdict's own read of each answer: a criterion head.

Read apart, every criterion of every answer is a grading prompt of its own (criterion_reads.py),
2.5-3.8x the cost of the verdict (bench/heads.md). The verdict's head already reads each
answer once as the model's reply to its request (state_judging.py): its pooled states,
its likelihoods and its length. A criterion head maps that read to the level the reads
apart would give, for any criterion, named by the MiniLM embedding of its text:

    z           = standardized (PCA of the states, likelihood features, log length[,
                  request relevance])
    level(a, c) = mean(c) + w . z(a) + z(a)[:k]^T M e(c)[:m]

`mean(c)` is a criterion's mean level on the training rows (shrunk toward the overall mean;
a criterion never seen gets the overall mean), `w` what moves every criterion, `M` how the
criteria differ in what they see. A head with `relevance` also reads how close each answer
is to its request (MiniLM's cosine, the verdict's relevance: app/deciding/relevance.py).
Fitted by `python -m training.heads.criterion_head` on Auto-J training pairs read apart.

With a reference in use, a pair's answers read no reference in the verdict's read either,
but the verdict reads things of it beside (app/deciding/signals.py): the share of the
reference's own words each answer states, the reference's mean log-probability after each
answer, the judge's check. The judge's decision record's `criterion_shift`
(reference_shift, fitted by training/decision/shift_fit.py on pairs whose reference decides
them) moves every criterion of an answer by the weighted sum of its values, each centred over
the item's answers: the same shift for every criterion of the answer, as a person grading
with a reference marks an answer that contradicts it down throughout.
Where a rule of the record that its criterion_shift names decides, each answer's share by
that rule holds its levels instead of a weight (`level_caps`, criterion_shift.caps):
`reference_behaviour` (the answers' functions, run in the jail beside a reference function,
differ in the share of its results they give) and `reference_order` (the answers state
different shares of the request's items in the reference's order).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.catalog.criteria_types import CriterionSpec
from app.deciding.decision import DecisionRecord, ShiftRule
from app.deciding.signals import AnswerReads
from models.readings import FEATURES

SCALE = (1.0, 10.0)  # the levels it was fitted on: a library criterion's scale


@dataclass(frozen=True)
class CriterionHead:
    """The fitted head's arrays (models/judges/<name>/criterion_head.npz)."""

    state_mean: np.ndarray  # (hidden,) pooled states' mean on the fitting answers
    state_basis: np.ndarray  # (k, hidden) their leading principal directions
    z_mean: np.ndarray  # (k + len(FEATURES) + 1,)
    z_scale: np.ndarray
    weights: np.ndarray  # w, on z
    criteria: tuple[str, ...]  # criteria with a fitted mean
    means: np.ndarray  # their means
    overall: float  # the mean of every level fitted
    cross: np.ndarray  # M flattened (cross_components x m); empty: no crossing
    cross_components: int
    e_mean: np.ndarray  # (384,) mean criterion embedding
    e_basis: np.ndarray  # (m, 384)
    # z ends with the answer's request relevance (cos of MiniLM's request and answer vectors)
    relevance: bool = False

    def features(
        self,
        states: np.ndarray,
        likelihood: dict[str, float],
        characters: int,
        relevance: float | None = None,
    ) -> np.ndarray:
        """z of one answer from the verdict's read of it (and its request relevance, where
        the head reads it)."""
        row = np.array([[likelihood[name] for name in FEATURES]])
        near = None if relevance is None else np.array([relevance])
        return self.features_of(np.atleast_2d(states), row, np.array([characters]), near)[0]

    def features_of(
        self,
        states: np.ndarray,
        likelihood: np.ndarray,
        characters: np.ndarray,
        relevance: np.ndarray | None = None,
    ) -> np.ndarray:
        """z of many answers (rows): their states, likelihood features (FEATURES' order),
        lengths in characters and (a head with `relevance`) request relevance."""
        projected = (np.asarray(states, dtype=np.float64) - self.state_mean) @ self.state_basis.T
        lengths = np.log(np.maximum(np.asarray(characters, dtype=np.float64), 1))
        columns = [projected, likelihood, lengths]
        if self.relevance:
            if relevance is None:
                raise ValueError("this criterion head reads request relevance: pass it")
            columns.append(np.asarray(relevance, dtype=np.float64))
        return (np.column_stack(columns) - self.z_mean) / self.z_scale

    def levels(
        self,
        z: np.ndarray,
        names: Sequence[str],
        vectors: np.ndarray | None,
        shift: float | np.ndarray = 0.0,
    ) -> np.ndarray:
        """The level of each criterion `names[i]` for answers `z[i]` (rows), on SCALE.
        `vectors[i]`: the criterion's text embedding (needed only where the head crosses);
        `shift`: level points added before the scale's bounds (a reference's, per row)."""
        z = np.atleast_2d(z)
        known = dict(zip(self.criteria, self.means))
        level = np.array([known.get(name, self.overall) for name in names]) + z @ self.weights
        if self.cross.size:
            assert vectors is not None, "a crossed head needs each criterion's embedding"
            e = (np.atleast_2d(vectors) - self.e_mean) @ self.e_basis.T
            crossed = (z[:, : self.cross_components, None] * e[:, None, :]).reshape(len(z), -1)
            level = level + crossed @ self.cross
        return np.clip(level + shift, *SCALE)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {name: np.asarray(getattr(self, name), dtype=np.float32) for name in ARRAYS}
        np.savez_compressed(
            path,
            criteria=np.array(self.criteria),
            overall=np.float64(self.overall),
            cross_components=np.int64(self.cross_components),
            relevance=np.bool_(self.relevance),
            **arrays,
        )

    @classmethod
    def load(cls, path: Path) -> CriterionHead:
        from models.foundation.errors import ConfigError

        if not path.is_file():
            raise ConfigError(path, "criterion_head", "file not found")
        with np.load(path, allow_pickle=False) as data:
            missing = sorted((set(ARRAYS) | {"criteria", "overall"}) - set(data.files))
            if missing:
                raise ConfigError(path, "criterion_head", f"missing arrays {missing}")
            # the reference's weights are its judge's record's (criterion_shift)
            if held := [n for n in data.files if n.startswith("reference_") and float(data[n])]:
                where = "the judge's decision record (criterion_shift)"
                raise ConfigError(path, held[0], f"the reference's weights belong in {where}")
            arrays = {name: data[name].astype(np.float64) for name in ARRAYS}
            head = cls(
                criteria=tuple(str(c) for c in data["criteria"]),
                overall=float(data["overall"]),
                cross_components=int(data["cross_components"]),
                relevance="relevance" in data.files and bool(data["relevance"]),
                **arrays,
            )
        width = head.state_basis.shape[0] + len(FEATURES) + 1 + int(head.relevance)
        if head.weights.shape != (width,) or len(head.means) != len(head.criteria):
            raise ConfigError(path, "criterion_head", "arrays of mismatched shapes")
        return head


ARRAYS = (
    "state_mean",
    "state_basis",
    "z_mean",
    "z_scale",
    "weights",
    "means",
    "cross",
    "e_mean",
    "e_basis",
)


@functools.cache
def load_criterion_head(path: Path) -> CriterionHead:
    """A judge's criterion head (read once per process); errors name the file."""
    return CriterionHead.load(path)


def reference_shift(
    rule: ShiftRule, values: Mapping[str, Sequence[float | None]], count: int
) -> np.ndarray:
    """Each of `count` answers' shift in level points by the record's `rule`: per signal, its
    weight times each answer's value (`values[name]`) centred over the answers and held in
    the signal's bounds; a signal without a value for every answer adds nothing."""
    shift = np.zeros(count)
    for signal in rule.signals:
        given = values.get(signal.name) or ()
        if signal.weight and len(given) == count and None not in given:
            found = np.asarray(given, dtype=np.float64)
            low, high = signal.bounds or (-np.inf, np.inf)
            shift += signal.weight * np.clip(found - found.mean(), low, high)
    return shift


def level_caps(
    record: DecisionRecord,
    specs: Sequence[CriterionSpec],
    shares: dict[str, Sequence[float | None] | None],
) -> list[tuple[str, np.ndarray]]:
    """Each deciding rule's highest level of each answer on each criterion (answers x
    specs), by the rule's name; `shares[rule]` are the answers' shares by it (0-1): of the
    reference function's results their functions give (`reference_behaviour`), or of the
    request's items they state in the reference's order (`reference_order`). A rule decides
    where the shares differ by at least its threshold (the record's rules that its
    criterion_shift.caps names).
    An answer that misses part of what the reference says is wrong in part, at best half
    right: a share s < 1
    holds it at most at low + s x (high - low) / 2 on the criteria a reference judges
    (those reference_spread moves), as a person grading against a reference marks it down
    for every result it gets wrong; a share of 1, and style and format, are not held."""
    low, high = SCALE
    judged = reference_spread(specs) > 0
    found = []
    thresholds = {rule.name: rule.at_least for rule in record.rules}
    caps = record.criterion_shift.caps if record.criterion_shift is not None else ()
    for name in caps:
        threshold = thresholds[name]
        given = shares.get(name)
        if not given or any(s is None for s in given):
            continue
        values = np.asarray(given, dtype=np.float64)
        if values.max() - values.min() < threshold:
            continue
        highest = np.full((len(values), len(specs)), high)
        held = np.where(values < 1.0, low + values * (high - low) / 2, high)
        highest[:, judged] = held[:, None]
        found.append((name, highest))
    return found


def criterion_text(name: str, description: str) -> str:
    """What the head embeds of a criterion (as it was fitted: the library's name and
    description)."""
    return f"{name}: {description}"


@functools.lru_cache(maxsize=512)
def _vector(text: str) -> np.ndarray:
    from models.sentence_encoder import embed

    return embed([text])[0].astype(np.float64)


def reads_by_head(specs: Sequence[CriterionSpec]) -> bool:
    """Whether a criterion head can give these criteria: library-style criteria on the scale
    it was fitted on (a rubric's level texts are read apart, where the model reads them)."""
    return bool(specs) and all(
        not spec.levels and (spec.scale_min, spec.scale_max) == SCALE for spec in specs
    )


NOT_MOVED_BY_REFERENCE = frozenset({"style", "format"})  # how an answer is written


def reference_spread(specs: Sequence[CriterionSpec]) -> np.ndarray:
    """Per criterion, how much of an answer's reference shift it takes: none on the
    library's style and format criteria (a reference says what is right, not how to write
    it: a buggy function can be well formatted), the others more, so that the criteria's
    weighted mean moves by the shift as it was fitted (training/decision/shift_fit.py);
    every criterion alike where all are style or format."""
    moved = np.array([spec.category not in NOT_MOVED_BY_REFERENCE for spec in specs], float)
    weights = np.array([spec.weight for spec in specs], dtype=np.float64)
    if not (moved * weights).sum():
        return np.ones(len(specs))
    return moved * weights.sum() / (moved * weights).sum()


def head_levels(
    head: CriterionHead,
    specs: Sequence[CriterionSpec],
    reads: AnswerReads,
    answers: Sequence[str],
    shift: Sequence[float] | None = None,
) -> dict[int, dict[str, float]] | None:
    """Each answer's level on each criterion of `specs`, from the verdict's read of it
    (moved by `shift[n]` level points, spread over the criteria by reference_spread: the
    reference's, reference_shift) and its request relevance (where the head reads it);
    None where the read lacks the states, likelihoods or relevance the head needs."""
    states, likelihoods, relevance = reads.features, reads.likelihoods, reads.similarities
    if any(s is None for s in states) or any(x is None for x in likelihoods):
        return None
    if head.relevance and relevance is None:
        return None
    spread = reference_spread(specs)
    texts = [criterion_text(spec.name, spec.description) for spec in specs]
    vectors = np.array([_vector(t) for t in texts]) if head.cross.size else None
    keys = [spec.key for spec in specs]
    levels: dict[int, dict[str, float]] = {}
    for n, (state, likelihood, answer) in enumerate(zip(states, likelihoods, answers)):
        near = float(relevance[n]) if relevance is not None else None
        z = head.features(state, likelihood, len(answer), near)  # type: ignore[arg-type]
        rows = np.repeat(z[None, :], len(specs), axis=0)
        found = head.levels(rows, keys, vectors, (shift[n] if shift is not None else 0.0) * spread)
        levels[n] = {key: float(value) for key, value in zip(keys, found)}
    return levels
