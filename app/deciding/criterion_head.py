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
but the verdict reads two things of it beside (state_judging.with_reference_reading): the
share of the reference's own words each answer states, and the reference's mean
log-probability after each answer. The head moves every criterion of an answer by

    shift(a) = words * (share(a) - mean share) + likelihood * (mean lp(a) - mean of them)

level points (the likelihood's term kept within the range the fit saw), with `words` and
`likelihood` fitted on pairs whose reference decides them
(training/decision/shift_fit.py) and kept in the judge's decision record
(`criterion_shift`, app/deciding/decision.py): the same shift for every criterion of the answer, as
a person grading with a reference marks an answer that contradicts it down throughout.
Where a rule of the record that its criterion_shift names decides, each answer's share by
that rule holds its levels instead of a weight (`level_caps`, criterion_shift.caps):
`reference_behaviour` (the answers' functions, run in the jail beside a reference function,
differ in the share of its results they give) and `reference_order` (the answers state
different shares of the request's items in the reference's order).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from app.catalog.criteria_types import CriterionSpec
from app.deciding.decision import DecisionRecord
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
    # level points per unit of an answer's reference evidence, centred over the item's answers
    reference_words: float = 0.0  # per share of the reference's own words stated
    reference_likelihood: float = 0.0  # per nat of the reference's mean log-probability
    # the largest centred likelihood seen in the fit: beyond it the shift does not grow
    # (one answer that repeats the reference word for word leads by nats no fit saw); 0: none
    reference_likelihood_bound: float = 0.0
    # per unit of log-odds of the judge's check (true: the answer gives the reference's result),
    # kept within the largest centred log-odds the fit saw (0: no bound)
    reference_check: float = 0.0
    reference_check_bound: float = 0.0
    # per unit of the share of inputs on which an answer's function gives the reference
    # function's result (where the user turned code running on)
    reference_behaviour: float = 0.0
    # per unit of the share of the request's items stated in the reference's order (where
    # the reference restates them: a sorting or ranking request)
    reference_order: float = 0.0
    # the judge's decision record's rules that hold the levels (criterion_shift.caps), each
    # with its threshold: where the answers' shares by the rule differ by at least it, each
    # share holds its answer's levels (level_caps); a rule, not a weight; none: never
    caps: tuple[tuple[str, float], ...] = ()

    @property
    def reads_reference(self) -> bool:
        """Whether its levels move with a reference (where one is in use)."""
        return bool(
            self.reference_words
            or self.reference_likelihood
            or self.reference_check
            or self.reference_behaviour
            or self.reference_order
            or self.caps
        )

    def reference_shift(
        self,
        shares: Sequence[float | None],
        means: Sequence[float | None],
        checks: Sequence[float | None] = (),
        behaviours: Sequence[float | None] = (),
        orders: Sequence[float | None] = (),
    ) -> np.ndarray:
        """Each answer's shift in level points: its share of the reference's own words, the
        reference's mean log-probability after it, the log-odds of the judge's check, the
        share of the reference function's results its function gives (code run) and the
        share of the request's items it states in the reference's order, each centred
        over the answers (the likelihood's and the check's kept within the fit's
        bounds; a signal missing for any answer adds nothing)."""
        shift = np.zeros(len(shares))
        for weight, values, limit in (
            (self.reference_words, shares, np.inf),
            (self.reference_likelihood, means, self.reference_likelihood_bound or np.inf),
            (self.reference_check, checks, self.reference_check_bound or np.inf),
            (self.reference_behaviour, behaviours, np.inf),
            (self.reference_order, orders, np.inf),
        ):
            if weight and values and all(v is not None for v in values):
                found = np.asarray(values, dtype=np.float64)
                shift += weight * np.clip(found - found.mean(), -limit, limit)
        return shift

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
            if held := [name for name in REFERENCE if name in data.files and float(data[name])]:
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


# the reference's weights: its judge's record's criterion_shift (with_shift); a file holds
# none (older files hold zeros)
REFERENCE = (
    "reference_words",
    "reference_likelihood",
    "reference_likelihood_bound",
    "reference_check",
    "reference_check_bound",
    "reference_behaviour",
    "reference_order",
)
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


# each signal of a decision record's criterion_shift: the head's field of its weight, and of
# its bound (the largest centred value the fit saw; None: not held)
SHIFT_FIELDS = {
    "reference_words": None,
    "reference_likelihood": "reference_likelihood_bound",
    "reference_check": "reference_check_bound",
    "reference_behaviour": None,
    "reference_order": None,
}


def with_shift(head: CriterionHead, record: DecisionRecord) -> CriterionHead:
    """`head` moved with a reference as the record's criterion_shift says, its levels held
    where the record's rule its caps name decides (at that rule's threshold)."""
    rule = record.criterion_shift
    if rule is None:
        return head
    fields: dict[str, float] = {}
    for signal in rule.signals:
        fields[signal.name] = signal.weight
        if (bound := SHIFT_FIELDS[signal.name]) is not None and signal.bounds is not None:
            fields[bound] = signal.bounds[1]
    thresholds = {r.name: r.at_least for r in record.rules}
    return replace(head, **fields, caps=tuple((name, thresholds[name]) for name in rule.caps))


def level_caps(
    head: CriterionHead,
    specs: Sequence[CriterionSpec],
    shares: dict[str, Sequence[float | None] | None],
) -> list[tuple[str, np.ndarray]]:
    """Each deciding rule's highest level of each answer on each criterion (answers x
    specs), by the rule's name; `shares[rule]` are the answers' shares by it (0-1): of the
    reference function's results their functions give (`reference_behaviour`), or of the
    request's items they state in the reference's order (`reference_order`). A rule decides
    where the shares differ by at least its threshold (`head.caps`). An answer that misses
    part of what the reference says is wrong in part, at best half right: a share s < 1
    holds it at most at low + s x (high - low) / 2 on the criteria a reference judges
    (those reference_spread moves), as a person grading against a reference marks it down
    for every result it gets wrong; a share of 1, and style and format, are not held."""
    low, high = SCALE
    judged = reference_spread(specs) > 0
    found = []
    for name, threshold in head.caps:
        given = shares.get(name)
        if not given or any(s is None for s in given):
            continue
        values = np.asarray(given, dtype=np.float64)
        if values.max() - values.min() < threshold:
            continue
        caps = np.full((len(values), len(specs)), high)
        held = np.where(values < 1.0, low + values * (high - low) / 2, high)
        caps[:, judged] = held[:, None]
        found.append((name, caps))
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
    reference's, CriterionHead.reference_shift) and
    its request relevance (`relevance[n]`, where the head reads it); None where the read
    lacks the states, likelihoods or relevance the head needs."""
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
