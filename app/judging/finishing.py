"""What every decided judgment goes through before it is given out, whoever decided it:
the relevance join, the uncertainty mark, the calibrated confidence, the reference metrics."""

from __future__ import annotations

from dataclasses import dataclass

from app.deciding.calibration import ConfidenceCalibration
from app.deciding.verdicts import mark_uncertain
from app.judging.config import JudgeConfig
from app.judging.plans import Plan
from app.records import Judgment, Status
from models.verdict_settings import RelevanceJoin


@dataclass(frozen=True)
class Finishing:
    """What finishing a judgment reads of a run."""

    relevance: RelevanceJoin | None  # a reply's verdict joined with request relevance
    doubt_below: float  # a confidence below it: uncertain
    calibrator: ConfidenceCalibration | None
    reference_metrics: bool  # ROUGE / BLEU / BERTScore beside a reference

    @classmethod
    def of(cls, config: JudgeConfig) -> Finishing:
        return cls(
            relevance=config.judge.relevance_join,
            doubt_below=config.judge.uncertain_below,
            calibrator=config.parts.calibrator,
            reference_metrics=config.reference_metrics,
        )

    def finished(self, plan: Plan, judgment: Judgment, metrics: bool = True) -> Judgment:
        """The decided `judgment` of `plan` given its relevance join, uncertainty mark,
        calibrated confidence and (`metrics`) reference metrics."""
        if self.relevance is not None and not plan.by_head:
            from app.deciding.relevance import join_relevance

            judgment = join_relevance(judgment, plan.item, self.relevance)
        judgment = mark_uncertain(judgment, self.doubt_below)
        calibration = self.calibrator
        if calibration is not None and (calibrated := calibration.of(judgment)) is not None:
            judgment = judgment.model_copy(update={"calibrated_confidence": calibrated})
        item = plan.item
        wanted = metrics and self.reference_metrics
        if wanted and item.reference and judgment.status is not Status.ERROR:
            from app.metrics import reference_metrics

            scores = reference_metrics(list(item.answers), item.reference)
            judgment = judgment.model_copy(update={"reference_metrics": tuple(scores)})
        return judgment
