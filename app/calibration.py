"""A judge's confidence mapped to how often such verdicts are right.

A judge's `confidence` is its own probability of its verdict: the verdict is
decided from it and the uncertainty threshold applies to it. How often a verdict
of that confidence matches a label is another number. An isotonic (monotone)
map fitted on training pairs, from the judge's confidence to the share of right
verdicts (`python -m training.confidence_calibration`), turns one into the other.
It is stored with the judge (`calibration:` in its registry entry, a JSON file
under models/) and gives each judgment a `calibrated_confidence`.

It is fitted in domain: on data unlike the training pairs (adversarial pairs,
say) it is no better than the confidence it maps, which `make eval` shows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.datafiles import validate
from app.errors import ConfigError


class ConfidenceCalibration(BaseModel):
    """Piecewise-linear and non-decreasing: `right[i]` at `confidence[i]`, flat outside."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    confidence: tuple[float, ...] = Field(min_length=1)
    right: tuple[float, ...] = Field(min_length=1)
    fitted_on: dict[str, float | int | str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _monotone(self) -> ConfidenceCalibration:
        if len(self.confidence) != len(self.right):
            raise ValueError("confidence and right need the same number of points")
        if any(b < a for a, b in zip(self.confidence, self.confidence[1:])):
            raise ValueError("confidence points must be in increasing order")
        if any(b < a for a, b in zip(self.right, self.right[1:])):
            raise ValueError("right must not decrease (an isotonic map)")
        if not all(0.0 <= v <= 1.0 for v in (*self.confidence, *self.right)):
            raise ValueError("every point must lie between 0 and 1")
        return self

    def __call__(self, confidence: float) -> float:
        return round(float(np.interp(confidence, self.confidence, self.right)), 4)


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
