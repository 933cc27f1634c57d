"""A judge's confidence mapped to how often such verdicts are right.

A judge's `confidence` is its own probability of its verdict: the verdict is
decided from it and the uncertainty threshold applies to it. How often a verdict
of that confidence matches a label is another number. An isotonic (monotone)
map fitted on training pairs, from the judge's confidence to the share of right
verdicts (`python -m training.heads.confidence_calibration`), turns one into the other.
For a judge read in score mode the map can start from another indicator: the
entropy of its whole next-token distribution where it decided (`entropy`), which
says how spread its belief is beyond the candidates it was allowed to write.
`indicator` in the file says which; `training.heads.confidence_calibration judge`
fits either on a judge's saved judgments of labelled pairs. It is stored with
the judge (`calibration:` in its registry entry, a JSON file under models/) and
gives each judgment a `calibrated_confidence`.

It is fitted in domain: on data unlike the training pairs (adversarial pairs,
say) it is no better than the confidence it maps, which `make eval` shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.deciding.decision import SHARED_KINDS
from models.foundation.datafiles import validate
from models.foundation.errors import ConfigError

if TYPE_CHECKING:
    from app.records import Judgment


# What a calibration reads from a judgment: its own probability of the decision (higher is
# surer), or the mean full-vocabulary entropy where it decided (lower is surer; the
# indicator of the fine-tuned-judge study in ../shared/seeds/, for judges read in score mode).
Indicator = Literal["confidence", "entropy"]


class ConfidenceCalibration(BaseModel):
    """Piecewise-linear and monotone: `right[i]` at `at[i]` of the indicator, flat outside.

    `right` rises with `confidence` and falls with `entropy`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    indicator: Indicator = "confidence"
    at: tuple[float, ...] = Field(min_length=1)
    right: tuple[float, ...] = Field(min_length=1)
    fitted_on: dict[str, float | int | str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _monotone(self) -> ConfidenceCalibration:
        if len(self.at) != len(self.right):
            raise ValueError("'at' and 'right' need the same number of points")
        if any(b < a for a, b in zip(self.at, self.at[1:])):
            raise ValueError("'at' points must be in increasing order")
        steps = list(zip(self.right, self.right[1:]))
        if self.indicator == "confidence" and any(b < a for a, b in steps):
            raise ValueError("right must not decrease as confidence rises (an isotonic map)")
        if self.indicator == "entropy" and any(b > a for a, b in steps):
            raise ValueError("right must not increase as entropy rises (an isotonic map)")
        if not all(0.0 <= v <= 1.0 for v in self.right):
            raise ValueError("every 'right' value must lie between 0 and 1")
        if self.indicator == "confidence" and not all(0.0 <= v <= 1.0 for v in self.at):
            raise ValueError("every confidence point must lie between 0 and 1")
        if self.indicator == "entropy" and any(v < 0.0 for v in self.at):
            raise ValueError("an entropy is never below 0")
        return self

    def __call__(self, value: float) -> float:
        """The share of right verdicts at this value of the indicator."""
        return round(float(np.interp(value, self.at, self.right)), 4)

    def of(self, judgment: Judgment) -> float | None:
        """The judgment's calibrated confidence; None when it lacks the indicator, or where a
        reference (or, with none, the judge's own answer) moved a head's verdict: a map is
        fitted on pairs read without either, and such a verdict has the confidence its
        decision record fitted (a rule's, or its signals')."""
        if any((judgment.verdict_parts or {}).get(kind) for kind in SHARED_KINDS):
            return None
        value = judgment.confidence if self.indicator == "confidence" else judgment.entropy
        return None if value is None else self(value)


def load_calibration(path: Path) -> ConfidenceCalibration:
    """Read and check a calibration file; ConfigError naming the file and field."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(path, "", "the calibration file is missing") from exc
    except ValueError as exc:
        raise ConfigError(path, "", f"not valid JSON: {exc}") from exc
    return validate(ConfidenceCalibration, data, path)
