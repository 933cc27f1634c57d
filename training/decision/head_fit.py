"""The record's head stage: the state head's vector and the weights fitted jointly with it.

The default judge's `states` signal is w . (f(A) - f(B)) over the model's 3,072 states of each
answer, and w was fitted in one logistic fit beside the likelihood features and request
relevance (the variant and L2 strength that request-grouped cross-validation chose, which
the head's file records). This repeats that fit from the committed reads of the head's fitting
set (`training/decision/cache/head-fitting/`: every answer's states and token
log-probabilities) with request relevance from the committed out-of-fold rows (MiniLM's
values, which no fit touches), so `python -m training.decision.fit` fits the head's weights
as it fits every other weight of the record: from the cache, in seconds, not from a GPU's
reads. Choosing the variant and strength again (6 x 10 x 5 fits, about 25 minutes) stays
`python -m training.heads.likelihood_head fit`.

The grade stage (`fitted_grade`) fits the head's grade vector and the record's grade rule the
same way, from the committed reads of every rated single answer of the fitting split (a ridge
over the states and likelihood features, its option and strength chosen by cross-validation:
`training.heads.likelihood_fit.fit_grades`).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.decision import DecisionRecord, Fitted
from app.deciding.state_head import StateHead
from app.records import JudgeItem
from training.datasets.likelihood_data import CACHE_DIR, OUT_OF_FOLD

BY = "python -m training.decision.fit --sections head"
GRADE_BY = "python -m training.decision.fit --sections grade"
# notes older fits left in a head's `fitted_on` of what the decision record now says itself
RECORD_OWNS = ("tie_band", "reference_weight", "reference_signals")


def head_design(
    readings: list, head: StateHead, relevance: np.ndarray | None
) -> tuple[np.ndarray, tuple[str, ...]]:  # type: ignore[type-arg]
    """The columns of `head`'s variant (its file's `fitted_on.variant`): each pair's state
    difference, then its named signals' differences; and those signals' names."""
    from training.heads.likelihood_fit import VARIANTS, _design, feature_table

    variant = str(head.fitted_on["variant"])
    use_states, names, use_relevance = VARIANTS[variant]
    if not use_states:
        raise ValueError(f"variant '{variant}' reads no states")
    if use_relevance and relevance is None:
        raise ValueError(f"variant '{variant}' needs each pair's request relevance")
    states = np.stack([pair[0].states - pair[1].states for pair in readings])
    x = _design(states, feature_table(readings), names, relevance if use_relevance else None)
    return x, names + (("relevance",) if use_relevance else ())


def committed_relevance(pairs: list[JudgeItem], rows: Path = OUT_OF_FOLD) -> np.ndarray:
    """Each pair's request relevance as the out-of-fold rows hold it (by the pair's key)."""
    from training.decision.reads import pair_key

    with gzip.open(rows, "rt", encoding="utf-8") as lines:
        found = {row["key"]: row["values"]["relevance"] for row in map(json.loads, lines)}
    missing = [p.id for p in pairs if pair_key(p) not in found]
    if missing:
        raise ValueError(f"{rows}: no relevance of {len(missing)} pairs, first {missing[0]}")
    return np.array([found[pair_key(p)] for p in pairs], dtype=np.float64)


@dataclass(frozen=True)
class HeadFit:
    head: StateHead  # the head with its state vector fitted again
    weights: dict[str, float]  # the record's head signals: states 1.0 and the named ones
    fitted: Fitted

    def report(self, before: StateHead) -> str:
        old = np.asarray(before.weights, dtype=np.float64)
        new = np.asarray(self.head.weights, dtype=np.float64)
        corr = float(np.corrcoef(old, new)[0, 1])
        ratio = float(np.linalg.norm(new) / np.linalg.norm(old))
        named = ", ".join(f"{n} {w:+.5g}" for n, w in self.weights.items() if n != "states")
        return (
            f"head: {self.fitted.rows}; {self.fitted.cv}\n"
            f"  state vector against the head before: corr {corr:.5f}, norm ratio {ratio:.3f}\n"
            f"  {named}"
        )


def fit_head(
    head: StateHead, pairs: list[JudgeItem], readings: list, relevance: np.ndarray
) -> HeadFit:  # type: ignore[type-arg]
    """`head`'s variant at its L2 strength fitted on the decisive `pairs` (their `readings`)."""
    from training.heads.state_head import fit_logistic

    x, names = head_design(readings, head, relevance)
    hidden = x.shape[1] - len(names)
    winners = [p.label.winner for p in pairs]  # type: ignore[union-attr]
    decisive = np.array([w in ("A", "B") for w in winners])
    y = np.array([1 if w == "A" else 0 for w in winners])
    c = float(head.fitted_on["C"])
    weights = fit_logistic(x[decisive], y[decisive], c, len(names))
    rounded = [float(f"{w:.6g}") for w in weights]
    kept = {k: v for k, v in head.fitted_on.items() if k not in RECORD_OWNS}
    fitted_on = kept | {"pairs": int(decisive.sum()), "ties": int((~decisive).sum())}
    refitted = head.model_copy(update={"weights": tuple(rounded[:hidden]), "fitted_on": fitted_on})
    rows = (
        f"{int(decisive.sum())} decisive training pairs of the head's fitting set "
        f"({int((~decisive).sum())} ties beside), read by llama.cpp "
        "(training/decision/cache/head-fitting); fitted with the state vector"
    )
    cv = f"C {c:g}, variant '{head.fitted_on['variant']}' (request-grouped CV of "
    cv += "training.heads.likelihood_head fit)"
    named = dict(zip(names, rounded[hidden:]))
    return HeadFit(refitted, {"states": 1.0} | named, Fitted(by=BY, rows=rows, cv=cv))


def fitted_head(judge: str) -> HeadFit:
    """`judge`'s head fitted again from the committed reads of its fitting set."""
    from training.datasets.likelihood_data import cache_for, cut
    from training.decision.in_sample import head_fitting_pairs, judge_gguf, judge_head
    from training.heads.likelihood_fit import readings_of

    head = judge_head(judge)[1]
    gguf = judge_gguf(judge)
    cache = cache_for(gguf)
    every = head_fitting_pairs(judge)
    pairs = [p for p in every if all(cache.has(*cut(p.question, a)) for a in p.answers)]
    if len(pairs) < len(every):
        raise SystemExit(
            f"{CACHE_DIR / gguf.stem}: {len(every) - len(pairs)} of the head's {len(every)} "
            "fitting pairs are not read (python -m training.heads.likelihood_head read)"
        )
    return fit_head(head, pairs, readings_of(cache, pairs), committed_relevance(pairs))


def fitted_grade(judge: str, head: StateHead) -> tuple[dict[str, Any], StateHead]:
    """`judge`'s grade rule fitted again from the committed reads of every rated single answer
    of the fitting split, and `head` with the grade vector of that fit."""
    from training.datasets.likelihood_data import cache_for, cut
    from training.datasets.state_head_data import single_rows
    from training.decision.in_sample import judge_gguf
    from training.heads.likelihood_fit import _grade_rule, fit_grades

    gguf = judge_gguf(judge)
    cache = cache_for(gguf)
    rows = single_rows()[0]
    if unread := sum(not cache.has(*cut(r.question, r.answers[0])) for r in rows):
        raise SystemExit(
            f"{CACHE_DIR / gguf.stem}: {unread} of the {len(rows)} rated single answers are "
            "not read (python -m training.heads.likelihood_head read)"
        )
    grade = fit_grades(cache)
    print("grade:", json.dumps(grade["report"]))
    rule = _grade_rule(grade, len(head.weights), GRADE_BY)
    if rule is None:
        raise SystemExit(f"{judge}: the grade fit chose no grade ({grade['report']['chosen']})")
    on = head.fitted_on | {"single_rows": grade["report"]["rows"]}
    return rule, head.model_copy(update={"grade_weights": grade["weights"], "fitted_on": on})


def refitted_head(kept: DecisionRecord) -> tuple[DecisionRecord, StateHead]:
    """The judge's head fitted again (`fitted_head`), and `kept` with its head signals' weights
    from that fit (`fit --sections head`)."""
    from training.decision.in_sample import judge_head
    from training.decision.record_file import record_path

    found = fitted_head(kept.judge)
    print(found.report(judge_head(kept.judge)[1]))
    signals = [
        s.model_copy(update={"weight": found.weights[s.name], "fitted": found.fitted})
        if s.name in found.weights
        else s
        for s in kept.signals
    ]
    if missing := sorted(set(found.weights) - {s.name for s in kept.signals}):
        raise SystemExit(f"{record_path(kept.judge)}: signals: no {', '.join(missing)}")
    return kept.model_copy(update={"signals": tuple(signals)}), found.head


def write_head(head: StateHead, judge: str, out: Path | None = None) -> str:
    """Write the head fitted again beside the judge's record (or beside `out`, a trial)."""
    from training.decision.in_sample import judge_head

    path = out.with_name("state_head.json") if out else judge_head(judge)[0]
    path.write_text(head.model_dump_json() + "\n", encoding="utf-8")
    return f"wrote {path}"
