"""The judging settings a model brings with it, for every place that builds a JudgeConfig.

A trained judge only works with the prompt template it was trained on, the way
its two answer orders are combined, the tie margin tuned for it and the input
length it learned to read; the registry entry records them. The CLI, the
evaluation and the app all start from here and apply their own overrides.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.prompts import DEFAULT_TEMPLATE
from app.verdicts import PairCombine
from models.registry import ModelEntry


@dataclass(frozen=True)
class ModelJudgeSettings:
    template: str = DEFAULT_TEMPLATE
    pair_combine: PairCombine = "agree"
    tie_margin: float = 0.0
    max_input_chars: int | None = None  # None: whatever fits the context window
    # Verdicts with less than this probability (averaged over both orders) are reported as
    # uncertain: a decision needs more than half of the judge's probability by default.
    uncertain_below: float = 0.5
    critiques: bool = True  # False: the judge is known to write none
    criteria: bool = True  # False: read the decision alone (a judge trained without criteria)

    def config_fields(self) -> dict:
        """Keyword arguments for JudgeConfig."""
        return {
            "template": self.template,
            "pair_combine": self.pair_combine,
            "tie_margin": self.tie_margin,
            "max_input_chars": self.max_input_chars,
            "uncertain_below": self.uncertain_below,
            "critiques": self.critiques,
            "criteria": self.criteria,
        }


def model_judge_settings(
    entry: ModelEntry | None,
    *,
    template: str | None = None,
    pair_combine: PairCombine | None = None,
    tie_margin: float | None = None,
    max_input_chars: int | None = None,
    uncertain_below: float | None = None,
    criteria: bool | None = None,
) -> ModelJudgeSettings:
    """The entry's settings (defaults for a bare model file); a given value wins over both."""
    own = (
        ModelJudgeSettings(
            template=entry.template or DEFAULT_TEMPLATE,
            pair_combine=entry.pair_combine,
            tie_margin=entry.tie_margin,
            max_input_chars=entry.max_input_chars,
            uncertain_below=entry.uncertain_below,
            critiques=entry.critiques,
            criteria=entry.criteria,
        )
        if entry is not None
        else ModelJudgeSettings()
    )
    return ModelJudgeSettings(
        template=template or own.template,
        pair_combine=pair_combine or own.pair_combine,
        tie_margin=own.tie_margin if tie_margin is None else tie_margin,
        max_input_chars=max_input_chars or own.max_input_chars,
        uncertain_below=own.uncertain_below if uncertain_below is None else uncertain_below,
        critiques=own.critiques,
        criteria=own.criteria if criteria is None else criteria,
    )
