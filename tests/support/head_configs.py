"""A JudgeConfig that decides by a given state head, and the tiny model's service, for the
head tests."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from app.deciding.decision import DecisionRecord, Declared, Fitted, Rule, ShiftRule, Signal
from app.deciding.state_head import StateHead
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.judging.settings import with_changes
from app.records import JudgeItem, Protocol
from models.backends.base import BackendOptions

FITTED = {"by": "a test", "rows": "none"}


def record_of(
    grade: Mapping[str, float] | None = None, intercept: float = 0.0, **weights: float
) -> DecisionRecord:
    """A decision record weighing the signals `weights` names (states, pmi_mean, relevance,
    reference_words...), grading one answer by `grade` (grade_states, likelihood
    features) plus `intercept`, where given."""
    from training.decision.fit_config import load_config
    from training.decision.head_records import grade_rule, head_record

    config = load_config()  # the reference's signals and rules, as the default's fit declares
    declared = {found.name: found for found in (*config.signals, *config.rules)}
    rule = grade_rule(grade, intercept, FITTED) if grade is not None else None
    data = head_record("test", weights, FITTED, 0, rule, declared)
    return DecisionRecord.model_validate(data)


def moving(
    record: DecisionRecord,
    caps: Sequence[str] = (),
    bounds: Mapping[str, float] | None = None,
    **weights: float,
) -> DecisionRecord:
    """`record` whose criterion_shift moves a criterion head's levels by `weights` (level
    points per unit of each signal's centred value, held within +-`bounds[name]`) and holds
    them by the rules `caps` names (added to the record, each deciding at 0.1)."""
    from training.decision.fit_config import load_config

    config = load_config()
    declared = {found.name: found for found in (*config.signals, *config.rules)}
    signals = []
    for name, weight in weights.items() or {"reference_words": 0.0}.items():
        limit = (bounds or {}).get(name)
        held = {"bounds": (-limit, limit)} if limit is not None else {}
        found = declared[name].model_dump(include=set(Declared.model_fields))
        signals.append(Signal(**found | held, weight=weight, fitted=Fitted(**FITTED)))
    fitted = {"at_least": 0.1, "confidence": 0.9, "fitted": Fitted(**FITTED)}
    rules = [Rule(**declared[name].model_dump() | fitted) for name in caps]
    shift = ShiftRule(signals=tuple(signals), caps=tuple(caps))
    update = {"rules": (*record.rules, *rules), "criterion_shift": shift}
    return DecisionRecord.model_validate(record.model_dump() | update)


def reference_record(**weights: float) -> DecisionRecord:
    """A decision record of the states alone (their value is a judgment's `states` part)
    and the reference's signals `weights` names, e.g. reference_words=2.0."""
    return record_of(states=1.0, **weights)


def record_for(head: StateHead) -> DecisionRecord:
    """The record a test head decides by unless a test gives its own: its states, the PMI's
    mean where it reads replies, and its grade head's w . f where it has one."""
    pmi = {"pmi_mean": 1.0} if head.reads == "reply" else {}
    grade = {"grade_states": 1.0} if head.grade_weights is not None else None
    return record_of(grade, states=1.0, **pmi)


def head_alone(
    head: StateHead, protocol: Protocol, record: DecisionRecord | None = None, **more: Any
) -> JudgeConfig:
    """The head alone (criterion scores beside it are tested in test_head_criteria.py),
    deciding by `record` (default: record_for); `more`: the run's fields or judging
    settings to change."""
    parts = JudgeParts(head=head, decision=record or record_for(head))
    base = JudgeConfig(protocol=protocol, parts=parts)
    return with_changes(base, {"criterion_scores": False, **more})


# the pair the criterion tests judge on the tiny model, and a context its prompts fit in
PLANET_PAIR = JudgeItem(
    id="p",
    question="Which planet is closest to the sun?",
    answers=("Mercury.", "Venus is the hottest planet, but the closest one is Mercury."),
)
HEAD_CONTEXT = 4096  # the full decision-last prompt, criteria described, fits
HELPFULNESS_RUBRIC = Path(__file__).parents[2] / "scenarios" / "rubrics" / "helpfulness_1to5.yaml"


def tiny_service(model: Path, name: str) -> Iterator[tuple[JudgeService, Any]]:
    """A judging service over the tiny real model, and its backend (a fixture's body)."""
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(model), BackendOptions(n_ctx=HEAD_CONTEXT, n_threads=1))
    yield JudgeService(backend, name), backend
    backend.close()


def random_reply_head(backend: Any, seed: int, **fields: Any) -> StateHead:
    """A head that reads each answer as the tiny model's reply, with small random state
    weights of the backend's width (record_for weighs them and the PMI's mean); `fields`:
    the head's other fields."""
    import numpy as np

    size = backend.read_answers("q", ["a"])[0].states.shape[0]
    rng = np.random.default_rng(seed)
    return StateHead(
        base_file="tiny.gguf",
        reads="reply",
        weights=tuple((0.05 * rng.normal(size=size)).tolist()),
        **fields,
    )
