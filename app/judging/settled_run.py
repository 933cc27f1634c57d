"""A run's configuration settled once for all the items it judges.

The service reads the `JudgeConfig` here and nowhere on the per-item path: the template
is looked up once, and each part gets only the settings it reads (the checks their
`ItemRules`, each decider its settings, the finishing its own). A critique is written by
a run of its own, settled with it: generate mode, no head.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.judging.config import JudgeConfig, SecondOpinion
from app.judging.finishing import Finishing
from app.judging.head_decider import HeadDecider, HeadSettings
from app.judging.item_checks import ItemRules, native_generate
from app.judging.plans import Plan
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
    feedback: bool  # score mode: a critique of each judgment too
    cascade: SecondOpinion | None
    critic: SettledRun | None  # the run that writes a critique (None inside it)

    def wants_critique(self, plan: Plan) -> bool:
        """A critique is written after the decision: score mode when asked, and always for
        a decision the state head made (generate mode asks for the whole reply)."""
        if plan.by_head:
            return self.feedback or self.mode == "generate"
        return self.mode == "score" and self.feedback


def settle(
    config: JudgeConfig, backend: Backend, model_name: str, *, critic: bool = True
) -> SettledRun:
    """`config` settled for `backend`: a native template's run in generate mode with its
    stop strings (item_checks.native_generate), each part given what it reads."""
    config = native_generate(config)
    rules = ItemRules.of(config)
    head = config.parts.head
    heads = None
    if head is not None:
        heads = HeadDecider(backend, model_name, HeadSettings.of(config, head))
    replies = None
    if rules.prompt_template is not None:
        replies = ReplyDecider(backend, ReplySettings.of(config, rules.prompt_template))
    critique = None
    if critic and config.judge.writes_critiques:
        explaining = replace(config, mode="generate", parts=replace(config.parts, head=None))
        critique = settle(explaining, backend, model_name, critic=False)
    return SettledRun(
        rules=rules,
        mode=config.mode,
        sampling=config.sampling,
        heads=heads,
        replies=replies,
        finishing=Finishing.of(config),
        feedback=config.feedback,
        cascade=config.cascade,
        critic=critique,
    )
