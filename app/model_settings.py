"""The judging settings, resolved once for every place that builds a JudgeConfig.

A trained judge only works with the prompt template it was trained on, the way
its two answer orders are combined, the tie margin tuned for it and the input
length it learned to read; the registry entry records them. Settings come in
layers, each a `SettingsLayer` in which None means "not set here": the built-in
defaults, then the model's registry entry, then the user's overrides (command
line, sidebar, evaluation flags), then the context limit the model is loaded
with. `model_judge_settings` merges them, and the CLI, the app, the Python API
and the evaluation all call it (the way inspect_ai's `GenerateConfig.merge`
works). The last cut, an item's characters to what its context leaves for the
reply, depends on the item and is made by the service from `context_tokens`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Literal, Protocol

from app.calibration import ConfidenceCalibration, load_calibration
from app.prompts import DEFAULT_TEMPLATE
from app.scenario_detection import ScenarioClassifier, load_classifier
from app.state_head import StateHead, load_state_head
from models.backends.base import SamplingParams
from models.registry import MODELS_DIR, ModelEntry
from models.verdict_settings import PairCombine, RelevanceJoin


@dataclass(frozen=True)
class SettingsLayer:
    """One layer of judging settings; None: not set here, the layer below stands."""

    template: str | None = None
    pair_combine: PairCombine | None = None
    tie_margin: float | None = None
    max_input_chars: int | None = None  # a cap on the item's characters
    uncertain_below: float | None = None
    critiques: bool | None = None
    criteria: bool | None = None
    context_tokens: int | None = None  # the context the model is loaded with
    relevance_join: RelevanceJoin | Literal[False] | None = None  # False: turned off
    state_head: StateHead | Literal[False] | None = None  # False: turned off
    calibration: ConfidenceCalibration | None = None
    scenario_classifier: ScenarioClassifier | None = None

    def merge(self, over: SettingsLayer) -> SettingsLayer:
        """This layer with every value `over` sets put over it."""
        given = {f.name: getattr(over, f.name) for f in fields(over)}
        return replace(self, **{name: value for name, value in given.items() if value is not None})

    @classmethod
    def of_entry(cls, entry: ModelEntry) -> SettingsLayer:
        """What a registry entry says about judging with its model."""
        return cls(
            template=entry.template,
            pair_combine=entry.pair_combine,
            tie_margin=entry.tie_margin,
            max_input_chars=entry.max_input_chars,
            uncertain_below=entry.uncertain_below,
            critiques=entry.critiques,
            criteria=entry.criteria,
            context_tokens=entry.context,
            relevance_join=entry.relevance_join,
            state_head=load_state_head(MODELS_DIR / entry.state_head) if entry.state_head else None,
            calibration=(
                load_calibration(MODELS_DIR / entry.calibration) if entry.calibration else None
            ),
            scenario_classifier=(
                load_classifier(MODELS_DIR / entry.scenario_classifier)
                if entry.scenario_classifier
                else None
            ),
        )


@dataclass(frozen=True)
class ModelJudgeSettings:
    """The settings resolved: every value set (`max_input_chars` None: whatever fits)."""

    template: str = DEFAULT_TEMPLATE
    pair_combine: PairCombine = "agree"
    tie_margin: float = 0.0
    max_input_chars: int | None = None
    # Verdicts with less than this probability (averaged over both orders) are reported as
    # uncertain: a decision needs more than half of the judge's probability by default.
    uncertain_below: float = 0.5
    critiques: bool = True  # False: the judge is known to write none
    criteria: bool = True  # False: read the decision alone (a judge trained without criteria)
    context_tokens: int = 4096
    relevance_join: RelevanceJoin | None = None  # pairwise verdicts joined with relevance
    state_head: StateHead | None = None  # verdicts read from the model's states by a head
    calibration: ConfidenceCalibration | None = None  # confidence -> share of right verdicts
    scenario_classifier: ScenarioClassifier | None = None  # None: the shipped MiniLM one

    def config_fields(self) -> dict:
        """Keyword arguments for JudgeConfig."""
        return dict(vars(self))  # not asdict: it would deep-copy the state head


BUILT_IN = SettingsLayer(**asdict(ModelJudgeSettings()))  # the bottom layer, written once


def model_judge_settings(
    entry: ModelEntry | None,
    overrides: SettingsLayer | None = None,
    *,
    context_tokens: int | None = None,
) -> ModelJudgeSettings:
    """The built-in defaults, the entry's settings (none for a bare model file), the
    user's `overrides`, then the context the model was loaded with, merged in that order."""
    layers = BUILT_IN
    if entry is not None:
        layers = layers.merge(SettingsLayer.of_entry(entry))
    if overrides is not None:
        layers = layers.merge(overrides)
    layers = layers.merge(SettingsLayer(context_tokens=context_tokens))
    turned_off = {
        "relevance_join": layers.relevance_join or None,
        "state_head": layers.state_head or None,
    }
    return ModelJudgeSettings(**{**vars(layers), **turned_off})


class SamplingSource(Protocol):
    """Anything that names the sampling settings: parsed arguments, the app's settings."""

    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    repeat_penalty: float


def sampling_of(source: SamplingSource) -> SamplingParams:
    """The sampling settings a front end holds, as the engine takes them."""
    return SamplingParams(
        temperature=source.temperature,
        top_p=source.top_p,
        max_tokens=source.max_tokens,
        seed=source.seed,
        repeat_penalty=source.repeat_penalty,
    )
