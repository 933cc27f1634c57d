"""Criterion reads and request states made in torch (for a GPU machine without llama.cpp)
against the engine's own, on the tiny real model: from the token ids llama.cpp gives, the
replies walked here over the logits torch read must be the engine's score-mode replies
(value and probabilities), reach a score cache that an evaluation serves, and the request
states must be the engine's `state_features`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.rubrics import load_rubric
from app.deciding.decision import load_decision
from app.deciding.state_head import (
    LIKELIHOOD_DECISION_FILE,
    LIKELIHOOD_HEAD,
    likelihood_judge_head,
)
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.records import JudgeItem, Protocol
from models.backends.base import BackendOptions
from models.judge_settings import JudgeSettings
from tests.support.head_configs import record_of

CONTEXT = 4096
RUBRIC = Path(__file__).parents[3] / "scenarios" / "rubrics" / "helpfulness_1to5.yaml"
PAIR = JudgeItem(
    id="p",
    question="Which planet is closest to the sun?",
    answers=("Mercury.", "Venus is the hottest planet, but the closest one is Mercury."),
    reference="Mercury.",
)
TEXTS = ["Which planet is closest to the sun?", "Write a haiku about rain."]


@pytest.fixture(scope="module")
def engine(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=CONTEXT, n_threads=1))
    yield backend, JudgeService(backend, "tiny")
    backend.close()


# the likelihood judge's rule (its five likelihood weights), and one that grades by the
# PMI's mean times 0.5 plus 5
RULE = load_decision(LIKELIHOOD_HEAD.with_name(LIKELIHOOD_DECISION_FILE))
GRADING = record_of({"pmi_mean": 0.5}, 5.0, pmi_mean=1.0)


def _jobs() -> list[tuple[JudgeItem, JudgeConfig]]:
    config = JudgeConfig(
        protocol=Protocol.PAIRWISE,
        judge=JudgeSettings(template="pocketjudge-decision"),
        parts=JudgeParts(head=likelihood_judge_head(), decision=RULE, context_tokens=CONTEXT),
    )
    single = PAIR.model_copy(update={"answers": PAIR.answers[:1]})
    graded = JudgeConfig(
        protocol=Protocol.SINGLE,
        choice=CriteriaChoice(rubric=load_rubric(RUBRIC)),
        judge=JudgeSettings(template="pocketjudge-decision"),
        parts=JudgeParts(
            head=likelihood_judge_head(),
            decision=RULE.model_copy(update={"grade": GRADING.grade}),
            context_tokens=CONTEXT,
        ),
    )
    return [(PAIR, config), (single, graded)]


@pytest.fixture(scope="module")
def read(engine, tiny_gguf_model: Path, tmp_path_factory: pytest.TempPathFactory):
    from training.device.gpu_levels import build_table, write_reads
    from training.device.gpu_reads import load_model

    backend, service = engine
    table = build_table(backend, service, _jobs(), TEXTS)
    out = tmp_path_factory.mktemp("reads")
    write_reads(load_model(tiny_gguf_model, "cpu"), table, out, float("inf"))
    return table, out


def test_the_table_holds_every_criterion_read_once(engine, read):
    _backend, service = engine
    table, _ = read
    requests = [r for item, config in _jobs() for r in service.score_requests(item, config)]
    assert len(table.keys) == len(requests) > 4
    assert table.lengths.sum() == len(table.flat) and len(table.lengths) > len(table.keys)
    # a 1-10 criterion looks one token ahead ("1" starts 1 and 10); a 1-5 rubric does not
    assert (table.seq_ahead >= 0).any() and (table.seq_ahead < 0).any()


def test_replies_walked_over_torch_logits_are_the_engines(engine, read, tmp_path: Path):
    from training.device.gpu_levels import merge_replies
    from training.device.score_cache import CachedScores, ScoreCache

    backend, service = engine
    table, out = read
    cache = ScoreCache(tmp_path / "cache")
    assert merge_replies(backend, service, _jobs(), table, out, cache) == len(table.keys)
    served = CachedScores(backend.score, backend.prompt_tokens, ScoreCache(tmp_path / "cache"))
    for item, config in _jobs():
        requests = service.score_requests(item, config)
        engine_replies = backend.score(requests)
        cached = served(requests)
        for ours, theirs in zip(cached, engine_replies):
            assert ours.text == theirs.text
            (mine,), (its,) = ours.distributions, theirs.distributions
            assert mine.path == its.path and set(mine.probs) == set(its.probs)
            for level, p in its.probs.items():
                assert mine.probs[level] == pytest.approx(p, abs=2e-3)
            assert mine.entropy == pytest.approx(its.entropy, abs=2e-3)
    assert served.hits == len(table.keys)


def test_request_states_are_the_engines(engine, read):
    from training.device.gpu_levels import text_key, text_states

    backend, _ = engine
    table, out = read
    states = text_states(table, out)
    for text in TEXTS:
        ours, theirs = states[text_key(text)], backend.state_features(text)
        scale = np.abs(np.stack(list(states.values()))).max(axis=0) / 127
        assert np.abs(ours - theirs).max() <= scale.max() + 1e-3
