"""The judging settings: declared here once, for every place that reads or sets them.

A trained judge only works with the prompt template it was trained on, the way its two
answer orders are combined, the tie margin tuned for it, the input length it learned to
read and the heads fitted on it. A registry entry embeds these as its `judging:` block
(models/registry.yaml); the user's overrides (CLI flags, sidebar widgets, evaluation
flags, Python keyword arguments) are layers of the same fields, merged over the block
(app/judging/settings.py, as inspect_ai's `GenerateConfig.merge`); the judge's files named
here are loaded by the core into its parts. What one run asks (protocol, scenario,
criteria, mode, swap, reference) is not a judging setting: app/judging/config.py.

It lives with the registry (the models layer) so the registry needs nothing of the core.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.foundation.errors import ConfigError
from models.verdict_settings import PairCombine, RelevanceJoin

DEFAULT_TEMPLATE = "pocketjudge"
_MODELS_DIR = Path(__file__).resolve().parent
# files under models/
JUDGE_FILES = (
    "state_head",
    "decision_record",
    "calibration",
    "scenario_classifier",
    "criterion_head",
)


class JudgeSettings(BaseModel):
    """How a judge model judges; every field has the value a bare model file gets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    template: str = DEFAULT_TEMPLATE  # the prompt template the model was trained on
    # How the two orders of a pair make one verdict: "agree" (a verdict both orders give,
    # else a flagged tie) or "calibrated" (their expected scores averaged).
    pair_combine: PairCombine = "agree"
    tie_margin: float = Field(default=0.0, ge=0)  # |expected A - B| up to this is a tie
    max_input_chars: int | None = Field(default=None, ge=200)  # a cap; None: what fits
    # Pairwise verdicts and rankings less confident than this (averaged over both orders)
    # are reported as uncertain: a decision needs more than half the judge's probability.
    uncertain_below: float = Field(default=0.5, ge=0, le=1)
    writes_critiques: bool = True  # False: the judge writes none; "Explain" says so
    # False: trained on the decision alone (decision-first templates), so criterion scores
    # are not read from it (they would be untrained guesses)
    criterion_scores: bool = True
    # Where a head reads each answer as the model's reply: "apart" (each criterion its own
    # read, app/deciding/criterion_reads.py) or "head" (no read: the judge's criterion head
    # maps the verdict's read to the levels the reads apart give; items with a reference,
    # and criteria with level texts, are still read apart)
    criteria_read: Literal["apart", "head"] = "apart"
    # Pairwise verdicts joined with MiniLM request relevance (weights fitted on training-split
    # pairs by training.heads.relevance_join); None: the judge's own verdict.
    relevance_join: RelevanceJoin | None = None
    # Verdicts, rankings (and grades, where it has a grade head) read from the model's own
    # hidden states by a fitted linear head: a JSON file under models/ (app/deciding/state_head.py,
    # fitted by training.heads.state_head); None: decided from the generated or scored reply.
    state_head: str | None = None
    # The state head's whole pairwise rule: its signals, weights, rules and tie threshold, a
    # YAML file under models/ (app/deciding/decision.py, fitted by training.decision.fit);
    # None: the weights the head's own file holds.
    decision_record: str | None = None
    # Its confidence mapped to how often such verdicts are right (app/deciding/calibration.py): a
    # JSON file under models/, fitted by training.heads.confidence_calibration; None: none.
    calibration: str | None = None
    # `scenario: auto` read from the judge model's own states of the request: a classifier
    # file under models/ (app/catalog/scenario_detection.py, fitted by
    # training.heads.scenario_classifier --states); None: the shipped MiniLM classifier.
    scenario_classifier: str | None = None
    # `criteria_read: head`: the criterion head, an .npz file under models/
    # (app/deciding/criterion_head.py, fitted by training.heads.criterion_head)
    criterion_head: str | None = None
    # The registry name of a reward model on the same base (a LoRA adapter and a state head,
    # app/deciding/reward.py) whose reward lead is the record's `reward` signal: read only
    # where the decision record weighs it; None: none.
    reward_model: str | None = None

    @model_validator(mode="after")
    def _judge_files_exist(self) -> JudgeSettings:
        """The files a judge reads beside its model are there. What is in them is checked
        where they are read (app.judging.settings), with errors naming the file and field."""
        for field_name in JUDGE_FILES:
            relative = getattr(self, field_name)
            if relative is not None and not (_MODELS_DIR / relative).is_file():
                missing = ConfigError(_MODELS_DIR / relative, field_name, "file not found")
                raise ValueError(f"{field_name}: {missing}")
        return self


SETTING_NAMES = tuple(JudgeSettings.model_fields)
JUDGE_DEFAULTS = JudgeSettings()  # what a bare model file gets
