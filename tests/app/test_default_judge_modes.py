"""Score mode and full generation on the real default judge and a real Auto-J pair.

These are the default judge's model replies: for a judge with a state head, the path its
critiques and reference-anchored grades take (its verdicts come from the head, tested in
tests/app/test_default_judge_head.py), so the head is turned off here.

Full generation evaluates what it writes in the llama.cpp calls score mode makes (the
rest of the prompt with the opening text the schema forces, each chosen value with the
forced text after it), so both read the same probabilities from the same numbers: the
same verdict, confidence and margin, not merely close ones. This matters for a judge
whose verdicts hang on expected-score gaps of 1e-3, where any other evaluation order
flips near-ties. (The tiny test model's SentencePiece vocabulary writes forced text with
a space prefix the grammar refuses, so there the two modes agree within float noise:
tests/models/backends/test_score_mode.py.)
"""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import islice

import pytest

from app.io.reader import read_rows
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.judging.settings import SettingsLayer, judge_config
from app.records import Protocol, Status
from bench.cell import DEV
from models.backends.base import BackendOptions, SamplingParams, ScoreRequest
from models.loader import open_judge
from models.registry import load_registry
from tests.support.needs import need_model, shared_file

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setting():
    shared_file("autoj/pairwise_dev.jsonl")
    entry = load_registry().get()
    need_model(entry.path(), entry.name)
    # the model's own replies: the head off, and the verdict alone (the head's criterion
    # scores are always read in score mode: app/deciding/criterion_reads.py)
    replies = SettingsLayer(state_head=False, criterion_scores=False)
    config = judge_config(entry, replies, protocol=Protocol.PAIRWISE)
    row = next(islice(read_rows(DEV), 2, None))  # the third pair: short, a real label
    return entry, config, row


def _judge(entry, config: JudgeConfig, row):
    judge = open_judge(entry.name, BackendOptions(n_ctx=config.parts.context_tokens, n_threads=1))
    try:
        service = JudgeService(judge.backend, entry.name)
        return service, judge, service.judge(row.item, config, row.line)
    except BaseException:
        judge.close()
        raise


def test_generation_and_score_mode_give_the_same_verdict_from_the_same_numbers(
    setting,
) -> None:
    entry, config, row = setting
    results = {}
    for mode in ("generate", "score"):
        _, judge, judgment = _judge(entry, replace(config, mode=mode), row)
        judge.close()
        assert judgment.status is Status.OK, judgment.error
        results[mode] = judgment
    generated, scored = results["generate"], results["score"]
    assert scored.verdict_probs == generated.verdict_probs
    assert scored.margin == generated.margin
    assert scored.confidence == generated.confidence
    assert (scored.winner, scored.leaning) == (generated.winner, generated.leaning)
    for one, two in zip(scored.answers, generated.answers):
        assert one.expected_criteria == two.expected_criteria
        assert one.expected_overall == two.expected_overall


@pytest.mark.xfail(
    strict=True,
    reason="known bug (session 10): with Qwen's tokenizer, score mode feeds the value's "
    "leading space after the forced ': ' (a double space), so its verdict probabilities "
    "differ from generation's by about 0.01; held for SmolLM2, whose tokenizer has no "
    "such token",
)
def test_a_generated_reply_is_the_scored_reply_value_for_value(setting) -> None:
    """Without the critique (the same schema), generation writes what score mode writes,
    from the same probabilities."""
    entry, config, row = setting
    config = replace(config, mode="score")
    service, generating, _ = _judge(entry, config, row)
    scoring = open_judge(entry.name, BackendOptions(n_ctx=config.parts.context_tokens, n_threads=1))
    try:
        plan = service._plan(row.item, service._settle(config), row.line)
        for call in plan.calls:
            generated = generating.backend.generate(
                call.messages, SamplingParams(max_tokens=768), call.output
            )
            request = ScoreRequest(tuple(call.messages), call.output, SamplingParams())
            [scored] = scoring.backend.score([request])
            # the same reply; with Qwen's tokenizer score mode writes the value's own
            # leading space after the forced ": " (a double space), so compare the JSON
            assert json.loads(scored.text) == json.loads(generated.text)
            assert [d.probs for d in scored.distributions] == [
                d.probs for d in generated.distributions
            ]
    finally:
        generating.close()
        scoring.close()


def test_every_dev_pair_fits_the_default_judges_context(setting) -> None:
    """Whole items are cut to the context by tokens, with room for the reply. The service
    kept an estimate of the reply free (200 tokens for this judge's 19 values) where the
    backend refuses a prompt unless its own bound (235) is free: pair 101 of Auto-J dev
    failed in the full evaluation. The service now asks the backend for that bound."""
    entry, config, _ = setting
    config = replace(config, mode="score", parts=replace(config.parts, context_tokens=4096))
    judge = open_judge(entry.name, BackendOptions(n_ctx=4096, n_threads=1))
    try:
        service = JudgeService(judge.backend, entry.name)
        over = []
        for row in read_rows(DEV):
            plan = service._plan(row.item, service._settle(config), row.line)
            for call in plan.calls:
                reply = judge.backend.score_reply_tokens(call.output)  # what score() checks
                if judge.backend.count_tokens(call.messages) + reply > 4096:
                    over.append(row.line)
        assert over == []
    finally:
        judge.close()
