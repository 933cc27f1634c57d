"""A plan: everything needed to judge one item, made before any model call."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.catalog.criteria_resolution import ResolvedCriteria
from app.deciding.state_judging import LevelAsk, ReferenceAsk
from app.formats.output_format import ReplyLayout
from app.records import JudgeItem, Judgment, Protocol
from models.backends.base import Generation, Message, OutputSpec
from models.readings import ReplyCriteria


@dataclass
class Call:
    """One model call of a plan: the answers in one order."""

    order: tuple[int, ...]
    messages: list[Message]
    output: OutputSpec
    layout: ReplyLayout
    criterion: str | None = None  # a criterion read beside a state head: its key


@dataclass
class Plan:
    """Everything needed to judge one item, before any model call."""

    item: JudgeItem
    protocol: Protocol
    resolved: ResolvedCriteria
    base: Judgment
    calls: list[Call]
    generations: list[Generation] = field(default_factory=list)
    by_head: bool = False  # decided by the state head: no model call
    turn: ReplyCriteria | None = None  # the reference read on from the head's reads
    levels: LevelAsk | None = None  # criterion scores the criterion head gives from them
    # a state head's reference in use: its part of the verdict (code run, rubric grade)
    reference: ReferenceAsk | None = None
