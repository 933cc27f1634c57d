"""The judging settings resolved once, for every front end that builds a JudgeConfig.

Settings come in layers of the one `JudgeSettings` model (models/judge_settings.py):
the built-in defaults (its field defaults), the model's registry entry (its `judging:`
block), then the user's overrides (command line, sidebar, evaluation flags, Python keyword
arguments), each a `SettingsLayer` that sets some fields and leaves the rest to the layer
below (the way inspect_ai's `GenerateConfig.merge` works). `judge_config` merges them,
loads the files the result names into the judge's parts, and adds what the run asks; the
CLI, the app, the Python API and the evaluation all call it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from app.catalog.scenario_detection import load_classifier
from app.deciding.calibration import load_calibration
from app.deciding.criterion_head import load_criterion_head
from app.deciding.decision import DecisionRecord, load_decision
from app.deciding.reward import load_reward_reader
from app.deciding.state_head import StateHead, load_state_head
from app.judging.config import DEFAULT_CONTEXT_TOKENS, JudgeConfig, JudgeParts
from models.foundation.errors import ConfigError
from models.judge_settings import JUDGE_FILES, SETTING_NAMES, JudgeSettings
from models.registry import MODELS_DIR, ModelEntry

TURNED_OFF = False  # a layer's value for "none" where None means "not set here"


class SettingsLayer(Mapping[str, Any]):
    """Some judging settings by their `JudgeSettings` names; a name left out (or None) is
    not set here, so the layer below stands. False turns off a judge file or the relevance
    join (their "none")."""

    def __init__(self, **given: Any) -> None:
        unknown = sorted(set(given) - set(SETTING_NAMES))
        if unknown:
            raise TypeError(f"not judging settings: {unknown}; known: {list(SETTING_NAMES)}")
        self._given = {name: value for name, value in given.items() if value is not None}

    def __getitem__(self, name: str) -> Any:
        return self._given[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)

    def __getattr__(self, name: str) -> Any:
        if name in SETTING_NAMES:
            return self._given.get(name)
        raise AttributeError(name)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._given.items())))

    def __repr__(self) -> str:
        return f"SettingsLayer({', '.join(f'{k}={v!r}' for k, v in self._given.items())})"

    def merge(self, over: SettingsLayer) -> SettingsLayer:
        """This layer with every value `over` sets put over it."""
        return SettingsLayer(**{**self._given, **over._given})

    def over(self, settings: JudgeSettings, source: str = "overrides") -> JudgeSettings:
        """`settings` with this layer's values put over them, validated as a registry
        block is; ConfigError naming the setting when a value does not fit."""
        given = {k: (None if v is TURNED_OFF and k not in _BOOLS else v) for k, v in self.items()}
        try:
            return JudgeSettings.model_validate({**settings.model_dump(), **given})
        except ValidationError as error:
            first = error.errors()[0]
            raise ConfigError(source, ".".join(map(str, first["loc"])), first["msg"]) from None


# the settings whose change loads the judge's parts again: its files and its reward model
PART_SETTINGS = (*JUDGE_FILES, "reward_model")
_BOOLS = {name for name, info in JudgeSettings.model_fields.items() if info.annotation is bool}


def judge_settings(
    entry: ModelEntry | None, overrides: SettingsLayer | None = None
) -> JudgeSettings:
    """The entry's judging block (the defaults for a bare model file) with `overrides` over it."""
    settings = entry.judging if entry is not None else JudgeSettings()
    return overrides.over(settings) if overrides else settings


def _decision(settings: JudgeSettings, head: StateHead | None) -> DecisionRecord | None:
    """The decision record a judge's head decides by (none where no head decides: a run that
    turns the head off decides from the reply)."""
    if head is None:
        return None
    if settings.decision_record is None:
        raise ConfigError(
            "judging settings",
            "decision_record",
            f"the state head {settings.state_head} decides by a decision record (its signals' "
            "weights), and none is named",
        )
    return load_decision(MODELS_DIR / settings.decision_record)


def load_parts(settings: JudgeSettings, context_tokens: int = DEFAULT_CONTEXT_TOKENS) -> JudgeParts:
    """The files `settings` name, loaded and validated (errors name the file and field)."""
    if settings.criteria_read == "head" and not settings.criterion_head:
        raise ConfigError(
            "judging settings",
            "criteria_read",
            "'head' needs the judge's criterion_head file and this judge has none; "
            "read the criteria 'apart' (--criteria-apart)",
        )
    head = load_state_head(MODELS_DIR / settings.state_head) if settings.state_head else None
    decision = _decision(settings, head)
    if decision is not None and decision.uses("reward") and not settings.reward_model:
        raise ConfigError(
            "judging settings",
            "reward_model",
            f"the decision record {settings.decision_record} weighs a reward model's reward, "
            "and none is named to read it",
        )
    return JudgeParts(
        context_tokens=context_tokens,
        head=head,
        decision=decision,
        calibrator=(
            load_calibration(MODELS_DIR / settings.calibration) if settings.calibration else None
        ),
        classifier=(
            load_classifier(MODELS_DIR / settings.scenario_classifier)
            if settings.scenario_classifier
            else None
        ),
        criterion_levels=(
            load_criterion_head(MODELS_DIR / settings.criterion_head)
            if settings.criterion_head
            else None
        ),
        rubric_combination=decision.rubric_grade if decision is not None else None,
        reward=load_reward_reader(settings.reward_model, head) if settings.reward_model else None,
    )


def judge_config(
    entry: ModelEntry | None,
    overrides: SettingsLayer | None = None,
    *,
    context_tokens: int | None = None,
    **run: Any,
) -> JudgeConfig:
    """The entry's settings with `overrides` over them, their files loaded, the model's
    context (`context_tokens`, else the entry's) and what the run asks (`run`: JudgeConfig's
    other fields)."""
    settings = judge_settings(entry, overrides)
    context = context_tokens or (entry.context if entry is not None else DEFAULT_CONTEXT_TOKENS)
    return JudgeConfig(judge=settings, parts=load_parts(settings, context), **run)


def with_changes(config: JudgeConfig, changes: Mapping[str, Any]) -> JudgeConfig:
    """`config` with keyword changes (the Python API's): judging settings (JudgeSettings'
    names) go over the judge's settings, a changed judge file is loaded, the rest are the
    run's fields."""
    judging = {name: value for name, value in changes.items() if name in SETTING_NAMES}
    run = {name: value for name, value in changes.items() if name not in SETTING_NAMES}
    config = replace(config, **run) if run else config
    if not judging:
        return config
    settings = SettingsLayer(**judging).over(config.judge)
    files = {name: getattr(settings, name) for name in PART_SETTINGS}
    if files == {name: getattr(config.judge, name) for name in PART_SETTINGS}:
        return replace(config, judge=settings)
    return replace(config, judge=settings, parts=load_parts(settings, config.parts.context_tokens))


def config_of(**fields: Any) -> JudgeConfig:
    """A JudgeConfig from keyword arguments, each a run's field or a judging setting."""
    return with_changes(JudgeConfig(), fields)
