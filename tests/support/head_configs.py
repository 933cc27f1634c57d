"""A JudgeConfig that decides by a given state head, and the tiny model's service, for the
head tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.deciding.decision import DecisionRecord
from app.deciding.head_record import head_decision
from app.deciding.state_head import StateHead
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.judging.settings import with_changes
from app.records import JudgeItem, Protocol
from models.backends.base import BackendOptions


def reference_record(**weights: float) -> DecisionRecord:
    """A decision record of the states alone (their value is a judgment's `states` part)
    and the reference's signals of the given StateHead weights, e.g. reference_weight=2.0."""
    head = StateHead(base_file="by-hand.gguf", weights=(1.0, 0.0), **weights)
    return head_decision(head, doubt_below=0.5)


def head_alone(head: StateHead, protocol: Protocol, **more: Any) -> JudgeConfig:
    """The head alone (criterion scores beside it are tested in test_head_criteria.py);
    `more`: the run's fields or judging settings to change."""
    base = JudgeConfig(protocol=protocol, parts=JudgeParts(head=head))
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
    weights of the backend's width and the PMI's mean; `fields`: the head's other fields."""
    import numpy as np

    size = backend.read_answers("q", ["a"])[0].states.shape[0]
    rng = np.random.default_rng(seed)
    return StateHead(
        base_file="tiny.gguf",
        reads="reply",
        weights=tuple((0.05 * rng.normal(size=size)).tolist()),
        likelihood={"pmi_mean": 1.0},
        **fields,
    )
