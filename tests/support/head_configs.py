"""A JudgeConfig that decides by a given state head, for the head tests."""

from __future__ import annotations

from typing import Any

from app.deciding.state_head import StateHead
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.settings import with_changes
from app.records import Protocol


def head_alone(head: StateHead, protocol: Protocol, **more: Any) -> JudgeConfig:
    """The head alone (criterion scores beside it are tested in test_head_criteria.py);
    `more`: the run's fields or judging settings to change."""
    base = JudgeConfig(protocol=protocol, parts=JudgeParts(head=head))
    return with_changes(base, {"criterion_scores": False, **more})
