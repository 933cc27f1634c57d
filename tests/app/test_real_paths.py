"""Features that were tested only through a fake backend, on the real tiny model: a
decision-first ranking of three answers in score mode, the default judge's shipped
calibration loaded from the registry and applied to a real judgment, and a whole
judgment through the transformers backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.catalog.criteria_resolution import resolve
from app.catalog.scenarios import load_catalog
from app.formats.output_format import ReplyLayout
from app.formats.prompts import get_template
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.service import JudgeService
from app.records import JudgeItem, Protocol, Status
from models.backends.base import BackendOptions, SamplingParams
from models.judge_settings import JudgeSettings
from tests.support.replies import pair_reply_parses

THREE = JudgeItem(
    id="r",
    question="Which planet is closest to the sun?",
    answers=("Mercury.", "Venus, the hottest planet.", "It is Mars, I think."),
)


@pytest.fixture(scope="module")
def llama_service(tiny_gguf_model: Path):
    from models.backends.llama_cpp_backend import LlamaCppBackend

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=4096, n_threads=1))
    yield JudgeService(backend, "tiny")
    backend.close()


def test_a_decision_first_ranking_of_three_answers_in_score_mode(llama_service):
    config = JudgeConfig(
        protocol=Protocol.MULTI,
        mode="score",
        detect_scenario=False,
        sampling=SamplingParams(max_tokens=64),
        judge=JudgeSettings(template="pocketjudge-decision"),
    )
    judged = llama_service.judge(THREE, config)
    assert judged.status is Status.OK, judged.error
    assert judged.mode == "score"
    assert sorted(judged.ranking) == [1, 2, 3]  # a permutation of the three answers
    assert judged.entropy is not None and judged.entropy > 0  # read at the decision
    assert judged.confidence is not None and 0 < judged.confidence <= 1


def test_a_judges_calibration_from_the_registry_maps_a_real_confidence(llama_service):
    from app.judging.settings import judge_config
    from models.registry import load_registry

    registry = load_registry()
    # the default's map where it ships one (pj-qwen15-likelihood does not yet), else the
    # first judge's that does
    names = [registry.default, *registry.names()]
    entry = next(registry.get(name) for name in names if registry.get(name).judging.calibration)
    calibration = judge_config(entry).parts.calibrator
    assert calibration is not None
    pair = THREE.model_copy(update={"answers": THREE.answers[:2]})
    config = JudgeConfig(
        protocol=Protocol.PAIRWISE,
        detect_scenario=False,
        judge=JudgeSettings(template="pocketjudge-decision"),
        parts=JudgeParts(calibrator=calibration),
    )
    judged = llama_service.judge(pair, config)
    assert judged.status is Status.OK, judged.error
    assert judged.confidence is not None
    assert judged.calibrated_confidence == calibration(judged.confidence)
    assert 0 <= judged.calibrated_confidence <= 1


def test_a_whole_judgment_through_the_transformers_backend(tiny_hf_model: Path):
    from app.api import load_judge

    pair = THREE.model_copy(update={"answers": THREE.answers[:2]})
    with load_judge(
        str(tiny_hf_model), backend="transformers", threads=1, detect_scenario=False
    ) as judge:
        judged = judge.judge(pair)
        config = judge.config
    assert judged.model and judged.protocol is Protocol.PAIRWISE
    # no probabilities to score with: the backend writes the reply, which is kept
    raws = (judged.raw_output, judged.raw_output_swapped)
    assert all(raws)
    # a random model: the status must follow what its two replies hold, never be invented
    rule = resolve(config.choice, pair, load_catalog()).rule
    layout = ReplyLayout(
        decision_first=get_template(judged.template).decision_first,
        criteria=config.judge.criterion_scores,
        feedback=config.mode == "generate",
    )
    if all(pair_reply_parses(raw, rule, layout) for raw in raws):
        assert judged.status is Status.OK, judged.error
        assert judged.winner in ("A", "B", "tie", "uncertain")
    else:
        assert judged.status is Status.UNPARSED, judged
        assert judged.error and judged.winner is None
