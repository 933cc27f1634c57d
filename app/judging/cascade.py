"""A cascade: what the first judge is unsure of goes to a second, stronger judge.

A study of fine-tuned judges (../shared/seeds/) found that a judge's own
confidence tells which of its verdicts to trust: sending the least confident
share to a stronger judge recovered most of that judge's accuracy for a
fraction of its cost. Here a judgment goes to the second judge when it is not
ok, has no confidence, or its confidence is below `below`; the second judge's
judgment is then the result, and `judgment.cascade` records both:

    {"decided_by": "second", "below": 0.6, "first_model": "...",
     "first_status": "ok", "first_verdict": "A", "first_confidence": 0.54}

A judgment the first judge keeps gets `{"decided_by": "first", "below": 0.6}`,
so every row of a cascaded run says which judge decided it (`judgment.model`
names the model).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.records import JudgeItem, Judgment, Status, backend_failed

if TYPE_CHECKING:
    from app.judging.config import ItemJudge, JudgeConfig


@dataclass(frozen=True)
class Cascade:
    """The second judge (a loaded judge, or a service over its backend) and its own
    configuration."""

    judge: ItemJudge
    config: JudgeConfig
    below: float  # a first-judge confidence below this goes to the second judge
    # held around the second judge's calls when several runs share its model (the app)
    lock: AbstractContextManager[object] = field(default_factory=nullcontext)

    def needs_second(self, judgment: Judgment) -> bool:
        if judgment.status is Status.ERROR:
            return backend_failed(judgment)  # a bad row would fail the second judge too
        confidence = sure_of(judgment)
        if judgment.status is Status.UNPARSED or confidence is None:
            return True
        return confidence < self.below

    def reconsider(self, item: JudgeItem, first: Judgment) -> Judgment:
        """`first` when it is sure enough, else the second judge's judgment of `item`."""
        if not self.needs_second(first):
            return first.model_copy(
                update={"cascade": {"decided_by": "first", "below": self.below}}
            )
        with self.lock:
            second = self.judge.judge(item, self.config, first.line)
        record: dict[str, Any] = {
            "decided_by": "second",
            "below": self.below,
            "first_model": first.model,
            "first_status": first.status.value,
            "first_verdict": _verdict(first),
            "first_confidence": sure_of(first),
        }
        return second.model_copy(update={"cascade": record})


def sure_of(judgment: Judgment) -> float | None:
    """How sure a judgment is: its calibrated confidence where the judge has a calibration,
    else its own confidence."""
    if judgment.calibrated_confidence is not None:
        return judgment.calibrated_confidence
    return judgment.confidence


def _verdict(judgment: Judgment) -> Any:
    if judgment.ranking is not None and judgment.winner is None:
        return list(judgment.ranking)
    if judgment.leaning or judgment.winner:
        return judgment.leaning or judgment.winner
    if judgment.answers:
        return judgment.answers[0].overall
    return None
