"""A critique of a judgment already made: the judge's reply generated again with the
judgment's decision fixed (decision-first templates), its feedback kept.

Written after the decision, by the reply decider of the judge's own template in generate
mode (one answer order), from the same checks and criteria as the judgment.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.formats.native_formats import reply_feedback
from app.judging.plans import Plan
from app.judging.reply_decider import ReplyDecider
from app.records import BACKEND_FAILED, Judgment, Protocol, Status
from models.backends.base import Backend, SamplingParams
from models.foundation.errors import BackendError

CRITIQUE_SEPARATOR = "\n\n----- critique -----\n\n"


@dataclass(frozen=True)
class Critic:
    """Writes the critiques of a run's judgments."""

    backend: Backend
    model_name: str
    replies: ReplyDecider | None  # None: the judge writes none (its model card says so)
    sampling: SamplingParams
    after_replies: bool  # score mode with feedback asked for
    after_head: bool  # a head's decision: feedback asked for, or generate mode

    def wanted(self, plan: Plan) -> bool:
        """A critique is written after the decision: score mode when asked, and always for
        a decision the state head made (generate mode asks for the whole reply)."""
        return self.after_head if plan.by_head else self.after_replies

    def unexplained(self, judgment: Judgment) -> Judgment | None:
        """`judgment` as it stays when no critique can be written of it, else None."""
        if judgment.status is not Status.OK:
            return judgment
        if self.replies is None:
            note = (
                f"'{self.model_name}' does not write critiques (its model card says so): "
                "it gives verdicts and scores only"
            )
            return judgment.model_copy(update={"feedback": None, "feedback_note": note})
        return None

    def critique(self, checked: Plan, judgment: Judgment) -> Judgment:
        """`judgment` with the critique its item's replies write, asked with its decision
        fixed; `checked` holds the item's checks and criteria (its calls are not read)."""
        if (unexplained := self.unexplained(judgment)) is not None:
            return unexplained
        assert self.replies is not None
        decision = _decision_of(judgment)
        calls, _ = self.replies.calls(checked.item, judgment.protocol, checked.resolved, decision)
        format_name = self.replies.settings.prompt_template.reply_format
        protocol = judgment.protocol
        texts, raw = [], []
        for call in calls:
            try:
                generation = self.backend.generate(call.messages, self.sampling, call.output)
            except BackendError as exc:
                return judgment.model_copy(update={"feedback_note": f"{BACKEND_FAILED}{exc}"})
            raw.append(generation.text)
            feedback = reply_feedback(format_name, generation.text, protocol, len(call.order))
            if feedback:
                texts.append(feedback)
        note = None
        if not texts:
            note = f"'{self.model_name}' wrote no critique for this item (an empty feedback field)"
        return judgment.model_copy(
            update={
                "feedback": "\n\n".join(texts) or None,
                "feedback_note": note,
                "raw_output": (judgment.raw_output or "") + CRITIQUE_SEPARATOR + "\n".join(raw),
            }
        )


def _decision_of(judgment: Judgment) -> str | tuple[int, ...] | None:
    """The decision a critique must explain (a pair's leaning even when uncertain)."""
    if judgment.protocol is Protocol.PAIRWISE:
        return judgment.leaning or (judgment.winner if judgment.winner != "uncertain" else None)
    if judgment.protocol is Protocol.MULTI:
        return judgment.ranking
    if judgment.answers and len(judgment.answers) == 1:
        return str(round(judgment.answers[0].overall))
    return None
