"""Criterion scores beside a state head's decision, read on the tiny real model: a
decision-last reply scored from the model's probabilities, apart from the head's verdict,
so the two can disagree (and the judgment keeps both)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.rubrics import load_rubric
from app.deciding import criterion_reads
from app.deciding.decision import DecisionRecord
from app.deciding.state_head import StateHead
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.head_decider import reference_note
from app.judging.settings import with_changes
from app.records import JudgeItem, Judgment, Protocol, Status
from models.judge_settings import JudgeSettings
from tests.support.head_configs import (
    HEAD_CONTEXT,
    HELPFULNESS_RUBRIC,
    PLANET_PAIR,
    random_reply_head,
    record_for,
    record_of,
    tiny_service,
)

PAIR = PLANET_PAIR
CONTEXT = HEAD_CONTEXT
RUBRIC = HELPFULNESS_RUBRIC


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    yield from tiny_service(tiny_gguf_model, "tiny-head")


@pytest.fixture(scope="module")
def head(tiny) -> StateHead:
    _, backend = tiny
    return random_reply_head(backend, 2, grade_weights=())


def head_rule(**weights: float) -> DecisionRecord:
    """The head's record: its states and the PMI's mean; grades of the PMI's mean plus 5;
    `weights`: the reference's signals it weighs too."""
    return record_of({"pmi_mean": 0.5}, 5.0, states=1.0, pmi_mean=1.0, **weights)


@pytest.fixture(scope="module")
def text_head(tiny) -> StateHead:
    _, backend = tiny
    size = backend.state_features("q").shape[0]
    rng = np.random.default_rng(3)
    return StateHead(base_file="tiny.gguf", weights=tuple((0.05 * rng.normal(size=size)).tolist()))


def _config(
    head: StateHead | None, protocol: Protocol, record: DecisionRecord | None = None, **more
) -> JudgeConfig:
    """`head` deciding by `record` (default: `head_rule()` for a head reading replies)."""
    if record is None and head is not None:
        record = head_rule() if head.reads == "reply" else record_for(head)
    base = JudgeConfig(
        protocol=protocol,
        judge=JudgeSettings(template="pocketjudge-decision"),
        parts=JudgeParts(head=head, decision=record, context_tokens=CONTEXT),
    )
    return with_changes(base, more)


@pytest.mark.parametrize("kind", ["reply", "text"])
def test_the_criteria_are_read_apart_from_the_heads_verdict(tiny, head, text_head, kind):
    """By default (and always for a head on the states of a text) the criteria come from
    separate reads, one per answer and criterion, each the expected level of that answer
    graded on that criterion alone; the head's verdict is the same without them."""
    service, _ = tiny
    chosen = head if kind == "reply" else text_head
    alone = service.judge(PAIR, _config(chosen, Protocol.PAIRWISE, criterion_scores=False))
    both = service.judge(PAIR, _config(chosen, Protocol.PAIRWISE))
    assert both.verdict_probs == alone.verdict_probs and alone.criteria == ()
    keys = both.criteria
    assert keys and both.status is Status.OK
    for number, answer in enumerate(PAIR.answers):
        for key in keys[:2]:
            single = JudgeItem(id="s", question=PAIR.question, answers=(answer,))
            config = JudgeConfig(
                protocol=Protocol.SINGLE,
                choice=CriteriaChoice(scenario=both.scenario, criteria=(key,)),
                judge=JudgeSettings(template=criterion_reads.TEMPLATE, criterion_scores=False),
                parts=JudgeParts(context_tokens=CONTEXT),
            )
            read = service.judge(single, config).answers[0]
            expected = both.answers[number].expected_criteria[key]
            assert read.expected_overall == pytest.approx(expected, abs=1e-6)
            assert both.answers[number].criteria[key] == round(expected, 1)
    assert both.raw_output.count('{"overall": ') == 2 * len(keys)


def test_a_reference_reaches_the_criteria_and_not_the_verdict(tiny, head):
    service, _ = tiny
    item = PAIR.model_copy(update={"reference": "Mercury is the closest planet to the sun."})
    without = service.judge(item, _config(head, Protocol.PAIRWISE, use_reference=False))
    given = service.judge(item, _config(head, Protocol.PAIRWISE))
    assert given.verdict_probs == without.verdict_probs  # a head with no reference weight
    assert "reference" not in given.verdict_parts
    assert [a.expected_criteria for a in given.answers] != [
        a.expected_criteria for a in without.answers
    ]


def test_a_grade_keeps_the_heads_value_beside_the_criteria(tiny, head):
    service, _ = tiny
    single = JudgeItem(id="s", question=PAIR.question, answers=(PAIR.answers[0],))
    alone = service.judge(single, _config(head, Protocol.SINGLE, criterion_scores=False))
    both = service.judge(single, _config(head, Protocol.SINGLE))
    assert both.answers[0].overall == alone.answers[0].overall
    assert both.answers[0].expected_overall == alone.answers[0].expected_overall
    assert set(both.answers[0].criteria) == set(both.criteria) != set()


def test_a_rubric_gives_its_own_criterion_and_scale(tiny, head):
    service, _ = tiny
    rubric = load_rubric(RUBRIC)
    config = _config(head, Protocol.PAIRWISE, choice=CriteriaChoice(rubric=rubric))
    judged = service.judge(PAIR, config)
    keys = tuple(c.id for c in rubric.criteria)
    assert judged.criteria == keys
    low, high = rubric.criteria[0].scale_min, rubric.criteria[0].scale_max
    for answer in judged.answers:
        assert all(low <= value <= high for value in answer.criteria.values())


def test_a_ranking_keeps_the_heads_order_and_the_criteria_order_apart(tiny, head):
    service, _ = tiny
    three = PAIR.model_copy(update={"answers": (*PAIR.answers, "It is Mars, I think.")})
    alone = service.judge(three, _config(head, Protocol.MULTI, criterion_scores=False))
    both = service.judge(three, _config(head, Protocol.MULTI))
    assert both.ranking == alone.ranking
    assert sorted(both.criteria_ranking) == [1, 2, 3] and len(both.answers) == 3


def test_a_read_without_probabilities_leaves_the_scores_out_and_says_why():
    """Logic around the backend: a reply with no level probabilities (a backend that
    gives none) is never turned into an invented score."""
    from app.catalog.criteria_types import CriterionSpec
    from app.catalog.scoring import ScoringRule
    from models.backends.base import Generation

    head_said = Judgment(
        id="p",
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        leaning="A",
        criteria=("accuracy",),
    )
    rule = ScoringRule((CriterionSpec(key="accuracy", name="Accuracy", description="."),))
    reads = [
        criterion_reads.CriterionRead(0, "accuracy", Generation(text='{"overall": 7}')),
        criterion_reads.CriterionRead(1, "accuracy", Generation(text='{"overall": 5}')),
    ]
    judged = criterion_reads.with_criteria(head_said, reads, rule)
    assert judged.winner == "A" and judged.answers == () and judged.criteria == ()
    assert "no probabilities" in judged.criteria_note
    assert '{"overall": 7}' in judged.raw_output


def test_a_head_judge_says_where_a_reference_goes(head):
    from app.judging.head_decider import reference_note

    assert "only the criterion scores" in reference_note(_config(head, Protocol.PAIRWISE))
    weighted = head_rule(reference_words=2.0)
    said = reference_note(_config(head, Protocol.PAIRWISE, record=weighted))
    assert "what the reference states" in said
    by_count = reference_note(
        _config(head, None, record=weighted)
    )  # protocol auto: a pair reads it too
    assert "what the reference states" in by_count
    assert "only the criterion scores" in reference_note(
        _config(head, Protocol.SINGLE, record=weighted)
    )
    off = reference_note(_config(head, Protocol.PAIRWISE, criterion_scores=False))
    assert off.startswith("reads no reference")
    assert (
        reference_note(JudgeConfig(judge=JudgeSettings(template="pocketjudge"))) is None
    )  # its prompt reads it
    assert reference_note(_config(head, Protocol.PAIRWISE, use_reference=False)) is None


def _without_time(judgment: Judgment) -> dict:
    return judgment.model_dump(exclude={"latency_s"})


def test_the_verdict_comes_first_and_the_whole_judgment_equals_judging_at_once(
    tiny, text_head
) -> None:
    """Where the criteria are read apart (a head on a text's states), a page shows the
    head's verdict, with the reference's part, at a verdict's cost, then the criterion scores,
    which do not move it: the last step is the judgment `judge` gives at once, from one read
    of the head."""
    service, _ = tiny
    protocol = Protocol.PAIRWISE
    weighted = record_of(states=1.0, reference_words=4.0)
    item = PAIR.model_copy(update={"reference": "Mercury is closest to the sun."})
    config = _config(text_head, protocol, record=weighted, reference_metrics=True)
    steps = list(service.judge_in_steps(item, config))
    at_once = service.judge(item, config)
    assert len(steps) == 2
    first, last = steps
    assert first.status is Status.OK and first.criteria == () and first.reference_metrics is None
    assert all(not answer.criteria for answer in first.answers)

    assert _without_time(last) == _without_time(at_once)
    assert last.criteria and last.reference_metrics
    # the reference's part is the verdict's from the first step; the criteria leave it
    assert "reference_words_difference" in first.verdict_parts
    assert first.verdict_parts == last.verdict_parts  # one head read
    assert first.verdict_probs == last.verdict_probs
    alone = _config(text_head, protocol, record=weighted, criterion_scores=False)
    assert [j.winner for j in service.judge_in_steps(item, alone)] == [
        service.judge(item, alone).winner
    ]


def test_the_reference_likelihood_after_each_answer_moves_the_verdict(tiny, head):
    """With a reference, the verdict adds the weight times A's lead in the mean
    log-probability of the reference's tokens after each answer (read on from the head's
    reads, with the criteria read apart or none: the reference comes first in the turn, so
    the same); the lead is kept in the verdict's parts, and without a
    weight nothing moves."""
    service, backend = tiny
    item = PAIR.model_copy(update={"reference": "Mercury is the closest planet to the sun."})
    weighted = head_rule(reference_likelihood=2.0)
    plain = service.judge(item, _config(head, Protocol.PAIRWISE))
    given = service.judge(item, _config(head, Protocol.PAIRWISE, record=weighted))
    asked = criterion_reads.reference_turn(item.reference)
    means = [
        float(np.mean(r.reference))
        for r in backend.read_answers(item.question, list(item.answers), True, asked)
    ]
    lead = given.verdict_parts["reference_likelihood_difference"]
    assert lead == pytest.approx(means[0] - means[1], abs=1e-3)
    # no weight: not read (criteria apart), and the head's verdict alone
    assert "reference_likelihood_difference" not in plain.verdict_parts
    assert "reference" not in plain.verdict_parts
    assert given.verdict_parts["reference"] == pytest.approx(2.0 * lead, abs=1e-3)
    assert given.verdict_parts["score"] == pytest.approx(
        plain.verdict_parts["score"] + 2.0 * lead, abs=1e-3
    )
    assert given.verdict_parts["states"] == plain.verdict_parts["states"]
    assert "how likely the reference is after each answer" in reference_note(
        _config(head, Protocol.PAIRWISE, record=weighted)
    )
    other = service.judge(
        item, _config(head, Protocol.PAIRWISE, record=weighted, criterion_scores=False)
    )
    assert other.verdict_parts["reference_likelihood_difference"] == pytest.approx(lead, abs=1e-3)
    assert other.verdict_parts["reference"] == pytest.approx(2.0 * lead, abs=1e-3)
    off = service.judge(
        item, _config(head, Protocol.PAIRWISE, record=weighted, use_reference=False)
    )
    assert "reference" not in off.verdict_parts
    assert "reference_likelihood_difference" not in off.verdict_parts


def test_the_reference_words_each_answer_states_move_the_verdict(tiny, head):
    """A record's `reference_words` weight adds it times A's lead in the share of the
    reference's own words each answer states, read from the text; the verdict's first step
    (before the criterion scores) holds it already, and the page says where it turned the
    verdict."""
    from app.deciding.state_head import reference_decided
    from app.ui.views import head_note

    service, _ = tiny
    item = PAIR.model_copy(
        update={
            "answers": ("Venus.", "Mercury."),
            "reference": "Mercury is the closest planet to the sun.",
        }
    )
    worded = head_rule(reference_words=50.0)
    plain = service.judge(item, _config(head, Protocol.PAIRWISE, criterion_scores=False))
    given = service.judge(
        item, _config(head, Protocol.PAIRWISE, record=worded, criterion_scores=False)
    )
    parts = given.verdict_parts
    assert parts["reference_words_difference"] == -1.0  # "mercury": B states it, A does not
    assert parts["reference_words"] == -50.0 == parts["reference"]
    assert parts["score"] == pytest.approx(plain.verdict_parts["score"] - 50.0, abs=1e-3)
    assert given.leaning == "B"
    leaned = plain.leaning if plain.leaning == "A" else None
    assert reference_decided(parts) == leaned
    assert ("The reference decided this verdict" in head_note(parts)) is (leaned is not None)
    first, whole = service.judge_in_steps(item, _config(head, Protocol.PAIRWISE, record=worded))
    assert first.verdict_parts["reference_words"] == -50.0 and first.criteria == ()
    assert whole.verdict_parts["reference_words"] == -50.0 and whole.criteria != ()
