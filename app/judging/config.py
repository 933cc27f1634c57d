"""What one judging run is: the judge's settings and loaded parts, and what the run asks.

`JudgeSettings` (models/judge_settings.py) is how the judge model judges, declared once
and embedded in its registry entry; `JudgeParts` are the files it names, loaded, with the
context the model was loaded with; the rest of `JudgeConfig` is what this run asks of it
(protocol, scenario and criteria, reference, swap, mode, sampling). `app.judging.settings`
builds one from a registry entry and the user's overrides, and changes one
(`with_changes`: a changed judge file is loaded too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol as TypingProtocol

from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.scenario_detection import ScenarioClassifier
from app.deciding.calibration import ConfidenceCalibration
from app.deciding.criterion_head import CriterionHead
from app.deciding.decision import DecisionRecord, GradeRule
from app.deciding.reward import RewardReader
from app.deciding.state_head import StateHead
from app.records import JudgeItem, Judgment, Mode, Protocol
from models.backends.base import SamplingParams, run_sampling
from models.judge_settings import JudgeSettings
from models.run_settings import RUN_DEFAULTS, SelfReference

DEFAULT_CONTEXT_TOKENS = RUN_DEFAULTS.n_ctx


class ItemJudge(TypingProtocol):
    """What judges one item with a run's configuration: a loaded judge (app.api.Judge), or
    the service over a backend (app.judging.service.JudgeService)."""

    @property
    def model_name(self) -> str: ...

    def judge(self, item: JudgeItem, config: JudgeConfig, line: int | None = None) -> Judgment: ...


class SecondOpinion(TypingProtocol):
    """What a judgment this judge is unsure of goes to (app.judging.cascade.Cascade): it keeps
    the judgment or replaces it with a second judge's."""

    def reconsider(self, item: JudgeItem, first: Judgment) -> Judgment: ...


@dataclass(frozen=True)
class JudgeParts:
    """The judge's files (its settings name them) loaded, and the context it runs with."""

    context_tokens: int = DEFAULT_CONTEXT_TOKENS  # the model's context: items fit in it
    # verdicts, rankings (and grades, with a grade head) read from the model's states
    head: StateHead | None = None
    # the head's pairwise rule (app/deciding/decision.py); None: the weights in its own file
    decision: DecisionRecord | None = None
    # the judge's confidence mapped to the share of right verdicts (app/deciding/calibration.py)
    calibrator: ConfidenceCalibration | None = None
    # scenario "auto": the judge's own classifier (reading its states); None: MiniLM's
    classifier: ScenarioClassifier | None = None
    # criterion levels from the verdict's read (app/deciding/criterion_head.py)
    criterion_levels: CriterionHead | None = None
    # a single answer's rubric grade with a reference (app/deciding/rubric_grade.py)
    rubric_combination: GradeRule | None = None
    # a trained reward model read on the judge's weights (app/deciding/reward.py)
    reward: RewardReader | None = None


@dataclass(frozen=True)
class JudgeConfig:
    """The judge (`judge`, `parts`) and what this run asks of it (every other field)."""

    judge: JudgeSettings = field(default_factory=JudgeSettings)
    parts: JudgeParts = field(default_factory=JudgeParts)
    protocol: Protocol | None = None  # None: by answer count (1 single, 2 pairwise, 3+ multi)
    choice: CriteriaChoice = field(default_factory=CriteriaChoice)
    # what the run asks: the defaults are the declared ones (models/run_settings.py)
    use_reference: bool = RUN_DEFAULTS.use_reference
    # a reference function: each answer's function run beside it in the jail (app/code_run/)
    run_code: bool = RUN_DEFAULTS.run_code
    # no reference in use: the judge's own answer read in its place (app/deciding/own_answer.py)
    self_reference: SelfReference = RUN_DEFAULTS.self_reference
    swap: bool = RUN_DEFAULTS.swap  # pairwise: judge both orders
    sampling: SamplingParams = field(default_factory=run_sampling)
    reference_metrics: bool = RUN_DEFAULTS.reference_metrics  # ROUGE / BLEU / BERTScore
    # score: the decision (and criterion scores) read from probabilities, no free text;
    # generate: the whole reply generated, critique included.
    mode: Mode = RUN_DEFAULTS.mode
    feedback: bool = RUN_DEFAULTS.feedback  # score mode: also a critique of each judgment
    # scenario "auto" and a row without one: the scenario classifier picks it (else default)
    detect_scenario: bool = RUN_DEFAULTS.detect_scenario
    # a second judge for the judgments this one is unsure of (app/judging/cascade.py)
    cascade: SecondOpinion | None = None
