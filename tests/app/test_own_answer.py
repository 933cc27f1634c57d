"""The judge's own answer for a pair without a reference (app/deciding/own_answer.py), on the
tiny real model: written greedily once per request, read on after each answer where a
reference would be, kept under signals of its own, shown on the judgment, and weighed only as
the judge's record weighs it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.deciding import criterion_reads
from app.deciding.own_answer import (
    OWN_ANSWER_TOKENS,
    OwnAnswer,
    keep,
    own_answer_messages,
    write_own_answer,
)
from app.records import JudgeItem, Protocol
from models.backends.base import Generation, SamplingParams
from tests.support.head_configs import (
    PLANET_PAIR,
    head_alone,
    random_reply_head,
    record_of,
    tiny_service,
)

PAIR = PLANET_PAIR
OWN = ("self_reference_likelihood", "self_reference_check", "self_reference_words")


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    yield from tiny_service(tiny_gguf_model, "tiny-own")


@pytest.fixture(scope="module")
def head(tiny):
    _, backend = tiny
    return random_reply_head(backend, 5)


def _differences(parts: dict[str, float]) -> set[str]:
    return {name for name in OWN if f"{name}_difference" in parts}


def test_on_writes_the_judges_answer_and_reads_each_answer_against_it(tiny, head):
    service, backend = tiny
    plain = service.judge(PAIR, head_alone(head, Protocol.PAIRWISE))
    own = service.judge(PAIR, head_alone(head, Protocol.PAIRWISE, self_reference="on"))
    assert plain.own_answer is None and not _differences(plain.verdict_parts)
    # the answer is the model's greedy reply to the request, asked to be brief
    params = SamplingParams(temperature=0.0, max_tokens=OWN_ANSWER_TOKENS)
    written = backend.generate(own_answer_messages(PAIR.question), params)
    assert own.own_answer["text"] == written.text.strip()
    assert own.own_answer["tokens"] == written.completion_tokens
    assert own.own_answer["mean_logprob"] == pytest.approx(written.mean_logprob, abs=1e-4)
    assert written.mean_logprob < 0
    # each answer read on against it as against a reference: the mean log-probability of its
    # tokens after the answer, under the own answer's name
    asked = criterion_reads.reference_turn(written.text.strip(), check=True)
    read = backend.read_answers(PAIR.question, list(PAIR.answers), True, asked)
    means = [float(np.mean(r.reference)) for r in read]
    lead = own.verdict_parts["self_reference_likelihood_difference"]
    assert lead == pytest.approx(means[0] - means[1], abs=1e-3)
    assert _differences(own.verdict_parts) == set(OWN)
    assert "reference_likelihood_difference" not in own.verdict_parts  # no reference's name
    # the same leads weighed by how sure the judge was of its answer (0 where the cap cut it)
    sure = OwnAnswer(**own.own_answer).sureness
    for name in OWN:
        gated = own.verdict_parts[f"{name}_sure_difference"]
        assert gated == pytest.approx(own.verdict_parts[f"{name}_difference"] * sure, abs=1e-6)
    # a record that weighs none of it: read and shown, the verdict as without it
    assert own.verdict_probs == plain.verdict_probs


def test_a_protocol_named_as_text_writes_it_too(tiny, head):
    """A run's protocol as a config file or the API names it ("pairwise", not the enum)."""
    service, _ = tiny
    own = service.judge(PAIR, head_alone(head, "pairwise", self_reference="on"))
    assert own.own_answer is not None and _differences(own.verdict_parts) == set(OWN)


def test_sureness_is_its_tokens_mean_probability_where_it_stopped_by_itself():
    assert OwnAnswer("56.", -0.1, 3, True).sureness == pytest.approx(np.exp(-0.1))
    assert OwnAnswer("To find", -0.1, 96, False).sureness == 0.0  # cut at the cap
    assert OwnAnswer("", None, 0, True).sureness == 0.0


def test_auto_writes_it_where_the_record_weighs_it_and_the_verdict_moves_by_its_weight(tiny, head):
    service, _ = tiny
    plain = service.judge(PAIR, head_alone(head, Protocol.PAIRWISE))
    assert plain.own_answer is None  # auto, a record that weighs none of it: none written
    weighing = record_of(states=1.0, pmi_mean=1.0, self_reference_check=2.0)
    given = service.judge(PAIR, head_alone(head, Protocol.PAIRWISE, weighing))
    alone = service.judge(PAIR, head_alone(head, Protocol.PAIRWISE, weighing, self_reference="off"))
    parts = given.verdict_parts
    lead = parts["self_reference_check_difference"]
    assert parts["self_reference_check"] == pytest.approx(2.0 * lead, abs=1e-3)
    assert parts["own_answer"] == pytest.approx(2.0 * lead, abs=1e-3)
    assert parts["score"] == pytest.approx(alone.verdict_parts["score"] + 2.0 * lead, abs=1e-3)
    assert alone.own_answer is None and given.own_answer is not None


def test_a_record_weighing_only_computed_answers_pays_for_no_written_one(tiny, head):
    service, _ = tiny
    weighing = record_of(states=1.0, pmi_mean=1.0, self_reference_check_computed=2.0)
    pair = PAIR.model_copy(update={"question": PAIR.question + " Say it briefly."})  # unkept
    given = service.judge(pair, head_alone(head, Protocol.PAIRWISE, weighing))
    # the tiny model computes no answer to the planet's request: nothing written, nothing read
    assert given.own_answer is None and not _differences(given.verdict_parts)
    shown = service.judge(pair, head_alone(head, Protocol.PAIRWISE, weighing, self_reference="on"))
    assert shown.own_answer is not None and shown.own_answer["text"]  # on: written and shown


def test_no_own_answer_where_a_reference_is_in_use_or_for_one_answer(tiny, head):
    service, _ = tiny
    given = PAIR.model_copy(update={"reference": "Mercury is the closest planet to the sun."})
    with_reference = service.judge(given, head_alone(head, Protocol.PAIRWISE, self_reference="on"))
    assert with_reference.own_answer is None and not _differences(with_reference.verdict_parts)
    unused = head_alone(head, Protocol.PAIRWISE, self_reference="on", use_reference=False)
    assert service.judge(given, unused).own_answer is not None  # its reference turned off


class _Counting:
    """A backend's generate, counted (logic around a backend: what is written once)."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, messages, params, output=None) -> Generation:
        self.calls += 1
        return Generation(text=" 4. ", completion_tokens=2, finish_reason="stop", mean_logprob=-0.5)


def test_an_answer_is_written_once_per_judge_and_request():
    backend = _Counting()
    first = write_own_answer(backend, "What is 2 + 2?", judge="counting")
    again = write_own_answer(backend, "What is 2 + 2?", judge="counting")
    assert first == again == OwnAnswer("4.", -0.5, 2, True) and backend.calls == 1
    write_own_answer(backend, "What is 2 + 2?", judge="another judge")
    write_own_answer(backend, "What is 2 + 2?", cap=8, judge="counting")
    assert backend.calls == 3
    kept = OwnAnswer("Four.", -0.1, 2, True)  # a fit's reads keep the answers written before
    keep("counting", "What is 3 + 1?", OWN_ANSWER_TOKENS, kept)
    assert write_own_answer(backend, "What is 3 + 1?", judge="counting") is kept
    assert backend.calls == 3


def test_a_front_end_says_once_where_the_judge_writes_its_own_answer(head):
    from app.judging.head_decider import own_answer_note

    weighing = record_of(states=1.0, self_reference_words=1.0)
    assert own_answer_note(head_alone(head, Protocol.PAIRWISE)) is None  # auto, not weighed
    shown = own_answer_note(head_alone(head, Protocol.PAIRWISE, self_reference="on"))
    assert "writes its own short answer" in shown and "does not weigh it" in shown
    assert "weighs it as its decision record says" in own_answer_note(
        head_alone(head, Protocol.PAIRWISE, weighing)
    )
    computing = record_of(states=1.0, self_reference_words_computed=1.0)
    said = own_answer_note(head_alone(head, Protocol.PAIRWISE, computing))
    assert said.startswith("computes its own answer") and "jail" in said  # auto: no written one
    on = own_answer_note(head_alone(head, Protocol.PAIRWISE, computing, self_reference="on"))
    assert "weighs it where a program computed it (a written one is shown, not counted)" in on
    assert (
        own_answer_note(head_alone(head, Protocol.PAIRWISE, weighing, self_reference="off")) is None
    )


def test_the_order_of_the_requests_items_in_the_judges_own_answer_tells_a_sorted_answer():
    """Both answers state every number, so the own answer's words cannot tell them apart;
    its order can (as a reference's does: app/deciding/reference_order.py)."""
    from app.deciding.signals import PairReads, pair_values

    item = JudgeItem(
        id="s",
        question="Sort these numbers from smallest to largest: 25, 54, 86, 49, 87.",
        answers=("The answer is 25, 49, 54, 86, 87.", "Sorted: **25, 54, 49, 86, 87**."),
    )
    own = OwnAnswer("[25, 49, 54, 86, 87]", -0.05, 20, True, computed=True)
    names = ("self_reference_words_computed", "self_reference_order_computed")
    found = pair_values(names, PairReads(item, own_answer=own))
    assert found == {"self_reference_order_computed": pytest.approx(0.2)}  # 5/5 against 4/5
    written = OwnAnswer("[25, 49, 54, 86, 87]", -0.05, 20, True)
    assert pair_values(names, PairReads(item, own_answer=written)) == {
        "self_reference_order_computed": 0.0
    }
