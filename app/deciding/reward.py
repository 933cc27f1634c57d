"""The trained reward model's reward of each answer, a signal a head judge's record may weigh
(`reward`, issue 64).

A reward model trained on the judge's own base (pj-qwen15-reward: a LoRA adapter and a value
head on its states) is read in the judge's engine: each answer read again as the model's reply
with the adapter on a reading context of its own, so the base's weights stay in memory once
(llama.cpp sets an adapter per context). Its reward is the reward model's head on those
states, cut as that head reads; a pair's value is A's reward minus B's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.state_head import StateHead
from app.records import JudgeItem
from models.foundation.errors import ConfigError

SETTING = "reward_model"  # the judging setting that names the reward model


@dataclass(frozen=True)
class RewardReader:
    """A reward model's adapter (a GGUF LoRA file) and head, read on a judge's weights."""

    name: str  # its registry name
    adapter: Path
    head: StateHead

    def rewards(self, item: JudgeItem, source: Any) -> list[float]:
        """Each answer's reward, read through `source` (a backend that reads answers with
        an adapter: llama.cpp's) after the request, both cut as the reward head reads."""
        head = self.head
        question = item.question[: head.question_chars]
        answers = [answer[: head.answer_chars] for answer in item.answers]
        reads = source.read_answers(question, answers, False, adapter=str(self.adapter))
        weights = np.asarray(head.weights, dtype=np.float64)
        return [float(weights @ read.states) for read in reads]


def load_reward_reader(name: str, judge_head: StateHead | None) -> RewardReader:
    """The registry's reward model `name` as a reader of the judge whose head is
    `judge_head`: it must carry a LoRA adapter and a state head fitted on the same base
    file; errors name the setting."""
    from app.deciding.state_head import load_state_head
    from models.registry import MODELS_DIR, load_registry

    def wrong(why: str) -> ConfigError:
        return ConfigError("judging settings", SETTING, f"'{name}' {why}")

    registry = load_registry()
    if name not in registry.names():
        raise wrong("is not in the registry")
    entry = registry.get(name)
    adapter = entry.lora_path()
    if adapter is None or entry.judging is None or entry.judging.state_head is None:
        raise wrong("has no LoRA adapter and state head to read a reward with")
    head = load_state_head(MODELS_DIR / entry.judging.state_head)
    if head.reads != "reply":
        raise wrong("has a head that reads plain text, not each answer as the model's reply")
    if judge_head is None:
        raise wrong("is read beside a state head, and this judge has none")
    if head.base_file != judge_head.base_file:
        raise wrong(f"was trained on {head.base_file}, this judge reads {judge_head.base_file}")
    return RewardReader(name, adapter, head)
