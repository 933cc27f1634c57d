"""A run's configuration settled once for all the items it judges.

The service reads the `JudgeConfig` here and nowhere on the per-item path: the template
is looked up once, and each part gets only the settings it reads (the checks their
`ItemRules`, each decider its settings, the finishing its own). Critiques are written by
the judge's own template in generate mode, one answer order (app/judging/critique.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.formats.prompts import PromptTemplate
from app.judging.config import JudgeConfig, SecondOpinion
from app.judging.critique import Critic
from app.judging.finishing import Finishing
from app.judging.head_decider import HeadDecider, HeadSettings
from app.judging.item_checks import ItemRules
from app.judging.reply_decider import ReplyDecider, ReplySettings
from app.records import Mode
from models.backends.base import Backend, SamplingParams


@dataclass(frozen=True)
class SettledRun:
    """What judging each item of a run reads, settled from its `JudgeConfig`."""

    rules: ItemRules
    mode: Mode
    sampling: SamplingParams
    heads: HeadDecider | None  # the judge's state head decides what it can
    replies: ReplyDecider | None  # None: an unknown template, each row's error says so
    finishing: Finishing
    cascade: SecondOpinion | None
    critic: Critic  # writes each judgment's critique where one is asked for


def settle(config: JudgeConfig, backend: Backend, model_name: str) -> SettledRun:
    """`config` settled for `backend`: a native template's run in generate mode with its
    stop strings (native_generate), each part given what it reads."""
    rules = ItemRules.of(config)  # the template looked up once
    config = native_generate(config, rules.prompt_template)
    head = config.parts.head
    heads = None
    if head is not None:
        heads = HeadDecider(backend, model_name, HeadSettings.of(config, head))
    replies = None
    if rules.prompt_template is not None:
        replies = ReplyDecider(backend, ReplySettings.of(config, rules.prompt_template))
    critiques = None
    if config.judge.writes_critiques and rules.prompt_template is not None:
        explaining = replace(config, mode="generate", swap=False)
        critiques = ReplyDecider(backend, ReplySettings.of(explaining, rules.prompt_template))
    critic = Critic(
        backend,
        model_name,
        critiques,
        config.sampling,
        after_replies=config.mode == "score" and config.feedback,
        after_head=config.feedback or config.mode == "generate",
    )
    return SettledRun(
        rules=rules,
        mode=config.mode,
        sampling=config.sampling,
        heads=heads,
        replies=replies,
        finishing=Finishing.of(config),
        cascade=config.cascade,
        critic=critic,
    )


def native_generate(config: JudgeConfig, template: PromptTemplate | None) -> JudgeConfig:
    """`config` as a native `template` judges: in generate mode, whatever mode was asked
    for, since score mode reads values from a JSON reply and a native reply is free text
    (each judgment records mode "generate"); the template's stop strings added. None (an
    unknown template: every row's plan reports it) and a JSON template leave it as it is."""
    if template is None or not template.native:
        return config
    stop = config.sampling.stop + tuple(s for s in template.stop if s not in config.sampling.stop)
    return replace(config, mode="generate", sampling=replace(config.sampling, stop=stop))
