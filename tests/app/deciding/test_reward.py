"""The judging setting `reward_model` (app/deciding/reward.py): a registry reward model on the
judge's base, loaded as the reader of the `reward` signal, with errors naming the setting. The
reads themselves run on the tiny model in tests/training/lora/test_reward_model.py."""

from __future__ import annotations

import pytest

from app.deciding.reward import SETTING, load_reward_reader
from app.deciding.state_head import StateHead
from models.foundation.errors import ConfigError
from models.registry import STORE_DIR

QWEN = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def head_on(base_file: str) -> StateHead:
    return StateHead(base_file=base_file, reads="reply", weights=(0.0, 0.0))


def test_the_trained_reward_model_is_read_with_its_adapter_and_its_own_head():
    reader = load_reward_reader("pj-qwen15-reward", head_on(QWEN))
    assert reader.adapter.parent == STORE_DIR
    assert reader.adapter.name.startswith("pj-qwen15-reward") and reader.adapter.suffix == ".gguf"
    assert reader.head.base_file == QWEN and len(reader.head.weights) == 3072


@pytest.mark.parametrize(
    ("name", "judge_head", "said"),
    [
        ("no-such-model", head_on(QWEN), "is not in the registry"),
        ("pj-qwen15-pmi", head_on(QWEN), "has no LoRA adapter and state head"),
        ("pj-qwen15-reward", head_on("other.gguf"), "was trained on " + QWEN),
        ("pj-qwen15-reward", None, "this judge has none"),
    ],
)
def test_a_reward_model_that_cannot_be_read_on_the_judge_is_refused_by_name(
    name: str, judge_head: StateHead | None, said: str
):
    with pytest.raises(ConfigError) as raised:
        load_reward_reader(name, judge_head)
    assert raised.value.field == SETTING
    assert name in str(raised.value) and said in str(raised.value)
