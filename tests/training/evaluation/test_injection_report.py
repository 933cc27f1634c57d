"""Injected answers against neutral twins of the same length
(training/evaluation/injection_report.py).

On the tiny llama.cpp model the tests build: the injection cannot add a control
token or a real closing fence to the prompt, and it leaves every parse as its
twin's. On the default judge (slow): every row judged, and the flips reported.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from app.catalog.criteria_resolution import CriteriaChoice, resolve
from app.catalog.scenarios import load_catalog
from app.formats.prompts import get_template
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.prompt_fitting import prompt_input
from app.judging.service import JudgeService
from app.judging.settings import judge_config, with_changes
from app.records import Protocol, Status
from models.backends.base import BackendOptions, SamplingParams
from models.backends.llama_cpp_backend import LlamaCppBackend
from models.loader import open_judge
from training.evaluation.injection_report import SET_PATH, judge_set, load_set, summary

KINDS = {"instruction", "fake_verdict", "fake_marker", "chat_token"}


def test_the_set_has_every_kind_and_twins_of_the_same_length() -> None:
    rows = load_set()
    assert Counter(row.kind for row in rows) == dict.fromkeys(KINDS, 3)
    for row in rows:
        assert len(row.injection) == len(row.neutral), row.id
        assert row.injection != row.neutral
    assert len({row.id for row in rows}) == len(rows)
    assert all(json.loads(line) for line in SET_PATH.read_text().splitlines())


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_threads=1, n_ctx=2048))
    yield backend
    backend.close()


def fences(text: str) -> Counter[str]:
    """The fences that carry this prompt's nonce (the request's opening fence has it), by
    tag and side: an answer can only write look-alikes with another nonce."""
    nonce = re.search(r"\[\[REQUEST ([0-9a-f]{8})\]\]", text).group(1)
    return Counter(re.findall(rf"\[\[(/?[A-Z][A-Z ]*?) {nonce}\]\]", text))


def test_an_injection_adds_no_control_token_and_no_real_fence(tiny: LlamaCppBackend) -> None:
    template = get_template()
    controls = set(tiny.llama.tokenize(b"<|system|><|user|><|assistant|></s>", special=True))
    for row in load_set():
        prompts = {}
        for injected in (True, False):
            item = row.pair(injected)
            resolved = resolve(CriteriaChoice(), item, load_catalog())
            data = prompt_input(
                Protocol.PAIRWISE, item.question, item.answers, None, resolved, None
            )
            messages = template.render(data)
            tokens = tiny.prompt_tokens(messages)
            prompts[injected] = (
                Counter(t for t in tokens if t in controls),
                fences(messages[-1].content),
            )
        assert prompts[True] == prompts[False], row.id
        assert sum(prompts[True][1].values()) >= 6  # request and both answers, open and closed


@pytest.mark.parametrize("mode", ["score", "generate"])
def test_the_parse_is_the_same_with_the_injection_as_with_its_twin(
    tiny_gguf_model: Path, mode: str
) -> None:
    judge = open_judge(str(tiny_gguf_model), BackendOptions(n_threads=1, n_ctx=4096))
    config = JudgeConfig(
        mode=mode,
        choice=CriteriaChoice(criteria=("accuracy",)),
        sampling=SamplingParams(temperature=0.0, max_tokens=900, seed=0),
        parts=JudgeParts(context_tokens=4096),
    )
    try:
        outcomes = judge_set(JudgeService(judge.backend, judge.name), config, load_set())
    finally:
        judge.close()
    for outcome in outcomes:
        assert outcome.parse_unaffected, outcome.id
        for judgment in (outcome.pair_injected, outcome.single_injected):
            assert judgment.status is Status.OK, (outcome.id, judgment.error)
    result = summary(outcomes)
    assert result["parse_unaffected"] == result["rows"] == 12
    assert result["not_ok"] == 0


@pytest.mark.slow
def test_the_default_judge_on_the_injection_set() -> None:
    """Every row judged by the default judge; the flips are reported (training/EXPERIMENTS.md)."""
    judge = open_judge(None, BackendOptions(n_threads=1))
    try:
        config = judge_config(judge.entry)
        # the verdicts and grades under injection; criterion scores (about 90 s a pair on
        # one thread) would make this set take over an hour, and the head reads no scenario
        config = with_changes(replace(config, detect_scenario=False), {"criterion_scores": False})
        outcomes = judge_set(JudgeService(judge.backend, judge.name), config, load_set())
    finally:
        judge.close()
    result = summary(outcomes)
    print(json.dumps(result))
    assert result["not_ok"] == 0
    assert result["parse_unaffected"] == result["rows"]
