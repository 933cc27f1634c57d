"""Before judging, on both pages: load the shared model, ready the metrics, open its judge."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app import metrics
from app.api import Judge
from app.judging.cascade import Cascade
from app.judging.config import JudgeConfig
from app.judging.settings import SettingsLayer
from app.ui.model_cache import SharedJudge, shared_judge, shared_second_judge
from app.ui.settings import Settings, model_label
from models.foundation.errors import PocketJudgeError


def prepare_run(
    settings: Settings, needs_metrics: bool, what: str
) -> tuple[SharedJudge, Judge, JudgeConfig] | None:
    """The shared model, its loaded judge and the config; None after showing a load error.

    `needs_metrics`: some input has a reference, so reference metrics would be computed;
    when they cannot load, the run goes on without them and says so (`what`: "run", ...).
    """
    config = settings.judge_config()
    try:
        loading = f"Loading the judge model `{model_label(settings.model)}`..."
        with st.spinner(loading, show_time=True):
            shared = shared_judge(settings)
    except PocketJudgeError as exc:
        st.error(str(exc))
        return None
    if config.reference_metrics and needs_metrics:
        try:
            with st.spinner("Loading the reference metrics..."):
                metrics.preload()  # looked up at call time (tests replace it)
        except metrics.MetricsUnavailable as exc:
            st.warning(f"Reference metrics are off for this {what}: {exc}")
            config = replace(config, reference_metrics=False)
    try:
        config = with_cascade(settings, config)
    except PocketJudgeError as exc:
        st.error(f"The second judge could not be loaded: {exc}")
        return None
    return shared, shared.judge, config


def with_cascade(settings: Settings, config: JudgeConfig) -> JudgeConfig:
    """`config` with the sidebar's second judge for unsure verdicts, if one is chosen."""
    if not settings.cascade_model:
        return config
    with st.spinner("Loading the second judge..."):
        second = shared_second_judge(settings)
    assert second is not None
    # the second judge keeps its own registry settings; criterion scores as the sidebar says
    kept = SettingsLayer(criterion_scores=settings.judging.criterion_scores)
    chosen = replace(settings, model=settings.cascade_model, judging=kept, cascade_model="")
    cascade = Cascade(
        second.judge,
        chosen.judge_config(),
        settings.cascade_below,
        lock=second.lock,
    )
    return replace(config, cascade=cascade)
