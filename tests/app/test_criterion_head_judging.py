"""Criterion scores from a criterion head on the tiny real model: no read of their own, the
levels the head gives from the verdict's read of each answer, moved by what a reference in
use shows of each answer where the head reads one; read apart where it cannot (a reference
a head without reference weights cannot read, a single answer with one, a rubric's level
texts)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from app.catalog.criteria_resolution import CriteriaChoice, resolve
from app.catalog.criteria_types import CriterionSpec
from app.catalog.rubrics import load_rubric
from app.catalog.scenarios import load_catalog
from app.code_run import jail
from app.deciding.criterion_head import (
    CriterionHead,
    head_levels,
    level_caps,
    load_criterion_head,
    reference_shift,
    reference_spread,
)
from app.deciding.decision import DecisionRecord, Fitted, Rule
from app.deciding.signals import AnswerReads
from app.deciding.state_head import StateHead, reference_signals
from app.io.reader import InputRow
from app.judging import head_decider
from app.judging.config import JudgeConfig, JudgeParts
from app.judging.head_decider import moved_by, reference_note
from app.judging.settings import SettingsLayer, judge_config, with_changes
from app.records import JudgeItem, Protocol, Status
from app.ui.code_run_note import code_run_details
from app.ui.views import criteria_agreement_note, head_note
from models.foundation.errors import ConfigError
from models.judge_settings import JudgeSettings
from models.readings import FEATURES
from tests.support.head_configs import (
    HEAD_CONTEXT,
    HELPFULNESS_RUBRIC,
    PLANET_PAIR,
    moving,
    record_of,
    tiny_service,
)
from tests.support.needs import need_jail


@pytest.fixture(scope="module")
def tiny(tiny_gguf_model: Path):
    yield from tiny_service(tiny_gguf_model, "tiny-criterion-head")


@pytest.fixture(scope="module")
def heads(tiny) -> tuple[StateHead, CriterionHead]:
    _, backend = tiny
    size = backend.read_answers("q", ["a"])[0].states.shape[0]
    rng = np.random.default_rng(4)
    verdict = StateHead(
        base_file="tiny.gguf",
        reads="reply",
        weights=tuple((0.05 * rng.normal(size=size)).tolist()),
    )
    # standardized on reads of the tiny model, so its levels stay inside the scale
    readings = backend.read_answers("q", ["a", "b c", "Mercury is closest."])
    states = np.array([r.states for r in readings])
    basis = rng.normal(size=(3, size)) / np.sqrt(size)
    raw = np.column_stack(
        [
            (states - states.mean(axis=0)) @ basis.T,
            [[r.features()[f] for f in FEATURES] for r in readings],
            np.log([1, 3, 19]),
        ]
    )
    width = raw.shape[1]
    criteria = CriterionHead(
        state_mean=states.mean(axis=0),
        state_basis=basis,
        z_mean=raw.mean(axis=0),
        z_scale=raw.std(axis=0) + 1.0,
        weights=0.3 * rng.normal(size=width),
        criteria=("accuracy",),
        means=np.array([8.0]),
        overall=6.5,
        cross=rng.normal(size=2 * 2),
        cross_components=2,
        e_mean=np.zeros(384),
        e_basis=rng.normal(size=(2, 384)),
    )
    return verdict, criteria


def _rule(grades: bool = False, **weights: float) -> DecisionRecord:
    """The verdict head's record: its states and the PMI's mean, and `weights` (the
    reference's signals); with `grades`, an answer's grade is its PMI's mean times 0.5."""
    return record_of({"pmi_mean": 0.5} if grades else None, states=1.0, pmi_mean=1.0, **weights)


# the weights of a verdict that reads the reference
READING = {"reference_words": 2.0, "reference_likelihood": 1.0}
# how the reference moves the criterion head's levels (the record's criterion_shift)
MOVING = {"reference_words": 1.0, "reference_likelihood": 0.5}
BEHAVIOUR = _rule(**READING, reference_behaviour=60.0)


def _config(
    heads, protocol: Protocol = Protocol.PAIRWISE, record: DecisionRecord | None = None, **more
) -> JudgeConfig:
    """The verdict head deciding by `record` (default: `_rule()`) beside the criterion head."""
    verdict, criteria = heads
    parts = JudgeParts(
        head=verdict,
        decision=record or _rule(),
        criterion_levels=criteria,
        context_tokens=HEAD_CONTEXT,
    )
    base = JudgeConfig(
        protocol=protocol,
        judge=JudgeSettings(template="pocketjudge-decision", criteria_read="head"),
        parts=parts,
    )
    return with_changes(base, more)


def test_the_head_gives_every_criterion_from_the_verdicts_read(tiny, heads):
    service, backend = tiny
    alone = service.judge(PLANET_PAIR, _config(heads, criterion_scores=False))
    judged = service.judge(PLANET_PAIR, _config(heads))
    assert judged.status is Status.OK
    assert judged.verdict_probs == alone.verdict_probs  # the verdict is the head's alone
    keys = judged.criteria
    assert keys and all(tuple(a.criteria) == keys for a in judged.answers)
    assert '{"overall": ' not in judged.raw_output  # no criterion was read apart
    assert judged.raw_output.count("criterion head") == 2 * len(keys)
    assert judged.criteria_by_head is True and alone.criteria_by_head is None
    assert "criterion head's estimate" in criteria_agreement_note(judged)  # the page says so
    # the levels are the criterion head's on the very read the verdict made
    _, criteria = heads
    rule = resolve(CriteriaChoice(scenario=judged.scenario), PLANET_PAIR, service.catalog).rule
    readings = backend.read_answers(PLANET_PAIR.question, list(PLANET_PAIR.answers), True)
    read = AnswerReads([r.states for r in readings], [r.features() for r in readings], [], [])
    expected = head_levels(criteria, rule.specs, read, PLANET_PAIR.answers)
    for number, answer in enumerate(judged.answers):
        for key in keys:
            assert answer.expected_criteria[key] == pytest.approx(expected[number][key], abs=1e-6)
            assert 1.0 <= answer.criteria[key] <= 10.0
    overall = [a.expected_overall for a in judged.answers]
    assert judged.criteria_verdict == ("A" if overall[0] > overall[1] else "B")


def test_different_criteria_get_different_levels(tiny, heads):
    service, _ = tiny
    judged = service.judge(PLANET_PAIR, _config(heads))
    levels = judged.answers[0].expected_criteria
    assert len(set(round(v, 6) for v in levels.values())) > 1  # the crossing sees each text


def test_a_reference_in_use_is_read_apart(tiny, heads):
    service, _ = tiny
    item = PLANET_PAIR.model_copy(update={"reference": "Mercury is the closest planet to the sun."})
    given = service.judge(item, _config(heads))
    assert given.raw_output.count('{"overall": ') == 2 * len(given.criteria)
    assert given.criteria_by_head is None
    unused = service.judge(item, _config(heads, use_reference=False))
    assert "criterion head" in unused.raw_output


CAPITAL_PAIR = JudgeItem(
    id="c",
    question="What is the capital of Australia?",
    answers=("Sydney is the capital of Australia, a vibrant harbour city.", "Canberra."),
    reference="Canberra is the capital.",
)


def test_a_head_that_reads_the_reference_moves_each_answer_with_it(tiny, heads):
    service, _ = tiny
    reading = moving(_rule(**READING), **MOVING)
    judged = service.judge(CAPITAL_PAIR, _config(heads, record=reading))
    unused = service.judge(CAPITAL_PAIR, _config(heads, record=reading, use_reference=False))
    assert judged.status is Status.OK and judged.criteria_by_head is True
    assert '{"overall": ' not in judged.raw_output  # nothing read apart
    assert judged.raw_output.count("the reference moved it") == 2 * len(judged.criteria)
    parts = judged.verdict_parts
    # the verdict adds the reference's own two signals, not the head criteria's lead
    assert parts["reference_words"] == pytest.approx(2.0 * -1.0)
    assert "reference_likelihood" in parts
    # each criterion's gap moves by the weights times the two leads (A states none of it)
    moved = 1.0 * -1.0 + 0.5 * parts["reference_likelihood_difference"]
    spread = _spread(judged)
    checked = 0
    for key in judged.criteria:
        with_it = [a.expected_criteria[key] for a in judged.answers]
        without = [a.expected_criteria[key] for a in unused.answers]
        if all(1.0 < v < 10.0 for v in with_it + without):
            gap = (with_it[0] - with_it[1]) - (without[0] - without[1])
            assert gap == pytest.approx(moved * spread[key], abs=2e-3)
            checked += 1
    assert checked  # at least one criterion inside the scale's bounds
    note = criteria_agreement_note(judged)
    assert "moved by what the reference shows" in note


def test_a_head_that_weighs_the_check_reads_it_and_adds_its_share(tiny, heads):
    service, _ = tiny
    checking = moving(_rule(**READING, reference_check=3.0), **MOVING)
    judged = service.judge(CAPITAL_PAIR, _config(heads, record=checking))
    plain = service.judge(CAPITAL_PAIR, _config(heads, record=moving(_rule(**READING), **MOVING)))
    parts, before = judged.verdict_parts, plain.verdict_parts
    lead = parts["reference_check_difference"]
    assert lead != 0.0 and "reference_check_difference" not in before
    assert parts["reference_check"] == pytest.approx(3.0 * lead, abs=1e-3)
    assert parts["reference"] == pytest.approx(before["reference"] + 3.0 * lead, abs=2e-3)
    assert "reference_check" in reference_signals(parts)
    assert "the judge's check of each answer" in (
        reference_note(_config(heads, record=checking)) or ""
    )


CODE_PAIR = JudgeItem(
    id="code",
    question="Write a Python function `second_largest` that returns the second largest "
    "distinct value of a list, or None when there are fewer than two.",
    answers=(  # A: polished, sorts in place and repeats a duplicate; B: right
        "Here is a clean solution!\n\n```python\ndef second_largest(xs):\n    xs.sort()\n"
        "    return xs[-2]\n```\n\nIt sorts the list and takes the second to last.",
        "def second_largest(values):\n    found = sorted(set(values))\n"
        "    return found[-2] if len(found) > 1 else None",
    ),
    reference="def second_largest(xs):\n    distinct = sorted(set(xs))\n"
    "    return distinct[-2] if len(distinct) >= 2 else None",
)


def test_a_reference_function_decides_by_behaviour_run_in_the_jail(tiny, heads):
    need_jail()
    service, _ = tiny
    verdict, criteria = heads
    weighing = (  # level: the criterion's mean (the tiny model's reads of code are far out)
        verdict,
        replace(
            criteria, weights=np.zeros_like(criteria.weights), cross=np.zeros_like(criteria.cross)
        ),
    )
    behaviour = moving(BEHAVIOUR, reference_behaviour=2.0)  # the criteria move by it alone
    ran = service.judge(CODE_PAIR, _config(weighing, record=behaviour))  # run in the jail
    with pytest.MonkeyPatch.context() as patch:  # the same judge where no behaviour is read
        patch.setattr(head_decider, "behaviour_reading", lambda *args, **kwargs: None)
        unweighed = service.judge(CODE_PAIR, _config(weighing, record=behaviour))
    parts = ran.verdict_parts
    lead = parts["reference_behaviour_difference"]
    assert lead < -0.3 and parts["reference_behaviour_inputs"] >= 10  # B gives its results
    assert ran.code_run is not None and ran.code_run["function"] == "second_largest"
    assert ran.code_run["shares"][1] == 1.0 and ran.code_run["inputs"] == 27  # the lists
    assert parts["reference_behaviour"] == pytest.approx(60.0 * lead, abs=1e-2)  # lead: rounded
    assert ran.winner == "B" and "reference_behaviour" in reference_signals(parts)
    assert "reference_behaviour_difference" not in unweighed.verdict_parts
    assert parts["score"] == pytest.approx(unweighed.verdict_parts["score"] + 60.0 * lead, abs=1e-2)
    # each criterion's gap moves by the same reading, but for style and format criteria
    specs = load_catalog().specs_for(ran.scenario)
    categories = {spec.category for spec in specs}
    assert "content" in categories and categories & {"style", "format"}
    weights = np.array([spec.weight for spec in specs])
    gaps = []
    for spec in specs:
        with_it = [a.expected_criteria[spec.key] for a in ran.answers]
        without = [a.expected_criteria[spec.key] for a in unweighed.answers]
        gaps.append((with_it[0] - with_it[1]) - (without[0] - without[1]))
        if spec.category in ("style", "format"):
            assert gaps[-1] == pytest.approx(0.0, abs=1e-6), spec.key
        else:
            assert gaps[-1] < 2.0 * lead - 0.1, spec.key  # more than their share, toward B
    # the criteria's weighted mean moves as fitted
    assert weights @ np.array(gaps) / weights.sum() == pytest.approx(2.0 * lead, abs=2e-3)
    assert "in a jail (bubblewrap" in (reference_note(_config(weighing, record=behaviour)) or "")
    assert not {"reference_code_not_run", "reference_code_unread"} & set(parts)
    assert "run beside the reference function in the jail" in head_note(parts)
    # code running off: none of it runs, and the page says so and how to turn it on
    off = service.judge(CODE_PAIR, _config(weighing, record=behaviour, run_code=False))
    assert "reference_behaviour_difference" not in off.verdict_parts
    assert off.verdict_parts["reference_code_not_run"] == 1.0
    assert "code running is off" in head_note(off.verdict_parts)
    assert "code running is off" in (
        reference_note(_config(weighing, record=behaviour, run_code=False)) or ""
    )
    assert off.code_run is not None and "turn on" in off.code_run["fix"]


SORT_PAIR = JudgeItem(
    id="sort",
    question="Sort these numbers in ascending order: 25, 6, 91, 40.",
    answers=("In ascending order: 91, 40, 25, 6.", "In ascending order: 6, 25, 40, 91"),
    reference="In ascending order: 6, 25, 40, 91.",
)


def test_where_the_order_rule_decides_the_share_in_order_holds_the_levels(tiny, heads):
    """The record's rule `reference_order` (criterion_shift.caps) holds the criterion levels
    where it decides: the answer stating the numbers in reverse (A: half of the reference's
    items in its order) at most at 1 + 4.5 x 0.5 on each criterion a reference judges; the
    sorted answer's levels, and A's style and format, as the head gave them; the raw text
    says why."""
    service, _ = tiny
    verdict, criteria = heads
    high = replace(criteria, weights=np.zeros_like(criteria.weights), means=np.array([9.0]))
    ordered = moving(_rule(), caps=["reference_order"])
    held = service.judge(SORT_PAIR, _config((verdict, high), record=ordered))
    # the same head where the order rule is not among its caps (no function: no behaviour)
    unordered = moving(_rule(), caps=["reference_behaviour"])
    unheld = service.judge(SORT_PAIR, _config((verdict, high), record=unordered))
    specs = load_catalog().specs_for(held.scenario)
    for spec in specs:
        before = [a.expected_criteria[spec.key] for a in unheld.answers]
        after = [a.expected_criteria[spec.key] for a in held.answers]
        assert after[1] == pytest.approx(before[1])  # in order: as given
        if spec.category in ("style", "format"):
            assert after[0] == pytest.approx(before[0]), spec.key
        else:
            assert after[0] == pytest.approx(1 + 4.5 * 0.5) and before[0] > after[0], spec.key
    assert "50% of the request's items in the reference's order" in (held.raw_output or "")


def test_where_the_behaviour_rule_decides_each_functions_share_holds_its_levels(tiny, heads):
    """The record's rule `reference_behaviour` (criterion_shift.caps) holds the criterion
    levels where it decides: the wrong function (A) at most at 1 + 4.5 x its share of the
    reference's results on each criterion a reference judges; its style and format, and the
    right function's levels, as the head gave them; the page says why."""
    need_jail()
    service, _ = tiny
    verdict, criteria = heads
    high = replace(criteria, weights=np.zeros_like(criteria.weights), means=np.array([9.0]))
    holding = moving(_rule(), caps=["reference_behaviour"])
    held = service.judge(CODE_PAIR, _config((verdict, high), record=holding))
    with pytest.MonkeyPatch.context() as patch:  # the same judge where no behaviour is read
        patch.setattr(head_decider, "behaviour_reading", lambda *args, **kwargs: None)
        unheld = service.judge(CODE_PAIR, _config((verdict, high), record=holding))
    assert held.code_run is not None
    shares = held.code_run["shares"]
    assert shares[1] == 1.0 and shares[0] < 0.5
    specs = load_catalog().specs_for(held.scenario)
    for spec in specs:
        before = [a.expected_criteria[spec.key] for a in unheld.answers]
        after = [a.expected_criteria[spec.key] for a in held.answers]
        assert after[1] == pytest.approx(before[1])  # the right function: as given
        if spec.category in ("style", "format"):
            assert after[0] == pytest.approx(before[0]), spec.key
        else:
            assert after[0] <= 1 + 4.5 * shares[0] + 1e-3 < before[0], spec.key
    assert "reference function's results" in (held.raw_output or "")


def test_the_level_caps_hold_only_where_their_rule_decides():
    specs = [
        CriterionSpec(key="right", name="R", description="d", category="content"),
        CriterionSpec(key="look", name="L", description="d", category="style"),
    ]
    record = moving(_rule(), caps=["reference_behaviour", "reference_order"])

    def held(shares):  # by each deciding rule's name, its caps
        return {name: found.tolist() for name, found in level_caps(record, specs, shares)}

    assert held({"reference_behaviour": [0.25, 1.0]}) == {
        "reference_behaviour": [[1 + 4.5 * 0.25, 10.0], [10.0, 10.0]]
    }
    both = held({"reference_behaviour": [0.25, 0.75]})  # both wrong somewhere: both held
    assert [row[0] for row in both["reference_behaviour"]] == [1 + 4.5 * 0.25, 1 + 4.5 * 0.75]
    assert held({"reference_behaviour": [0.95, 1.0]}) == {}  # below the rule's threshold
    assert held({"reference_behaviour": [None, 1.0]}) == {}
    # a sorted list against the same items in reverse: the order rule holds the reverse
    order = held({"reference_order": [1.0, 0.25], "reference_behaviour": None})
    assert order == {"reference_order": [[10.0, 10.0], [1 + 4.5 * 0.25, 10.0]]}
    assert level_caps(_rule(), specs, {"reference_behaviour": [0.0, 1.0]}) == []  # no rule


def test_a_page_judging_in_steps_weighs_the_code_run_as_judging_at_once(tiny, heads):
    """With the criteria read apart, the page's first step (the head's verdict) already
    holds what running the code found, and its last is the judgment `judge` gives."""
    need_jail()
    service, _ = tiny
    config = _config(heads, record=BEHAVIOUR, criteria_read="apart")
    first, last = service.judge_in_steps(CODE_PAIR, config)
    at_once = service.judge(CODE_PAIR, config)
    assert first.criteria == () and last.criteria
    for judged in (first, last):
        assert judged.code_run is not None and judged.code_run["function"] == "second_largest"
        assert judged.verdict_parts["reference_behaviour_difference"] < -0.3
        assert judged.winner == "B"
    assert last.model_dump(exclude={"latency_s"}) == at_once.model_dump(exclude={"latency_s"})


def test_where_no_jail_works_no_answers_code_runs_and_the_page_says_what_to_do(
    tiny, heads, tmp_path: Path, monkeypatch
):
    service, _ = tiny
    verdict, _ = heads
    running = (verdict, heads[1])
    monkeypatch.setattr("app.code_run.jail.shutil.which", lambda name: None)  # no bwrap
    jail.jail_status.cache_clear()
    try:
        marker = tmp_path / "ran"
        touching = f"def second_largest(xs):\n    open({str(marker)!r}, 'w').close()\n    return 1"
        item = CODE_PAIR.model_copy(update={"answers": (touching, CODE_PAIR.answers[1])})
        judged = service.judge(item, _config(running, record=BEHAVIOUR))
        note = reference_note(_config(running, record=BEHAVIOUR)) or ""
    finally:
        jail.jail_status.cache_clear()
    assert judged.status is Status.OK and not marker.exists()  # nothing of A ran
    assert judged.verdict_parts["reference_code_no_jail"] == 1.0
    assert "reference_behaviour_difference" not in judged.verdict_parts
    assert "bwrap" in judged.code_run["unread"] and "bubblewrap" in judged.code_run["fix"]
    assert "no jail to run the answers' code in works" in head_note(judged.verdict_parts)
    shown = code_run_details(judged.code_run, ["A", "B"])
    assert shown.startswith("Code not run: no jail works here") and "make setup" in shown
    assert "no jail works here" in note and "install bubblewrap" in note


ESCAPING = {  # answer A of a code pair whose function tries to get out (tests/app/code_run/)
    "fork bomb": "import os\ndef second_largest(xs):\n    while True:\n        os.fork()",
    "shell": "import subprocess\ndef second_largest(xs):\n    subprocess.run(['sh', '-c', 'id'])",
    "memory": "def second_largest(xs):\n    return bytearray(3 * 1024**3)",
    "dies": "import os\ndef second_largest(xs):\n    os.kill(os.getpid(), 9)",
}


def test_a_batch_goes_on_past_answers_whose_code_tries_to_get_out(tiny, heads):
    need_jail()
    service, _ = tiny
    verdict, _ = heads
    running = (verdict, heads[1])
    items = [
        CODE_PAIR.model_copy(update={"id": name, "answers": (code, CODE_PAIR.answers[1])})
        for name, code in ESCAPING.items()
    ]
    rows = [InputRow(n + 1, item, None, None) for n, item in enumerate([*items, CAPITAL_PAIR])]
    judged = service.judge_many(rows, _config(running, record=BEHAVIOUR))
    assert [j.status for j in judged] == [Status.OK] * len(rows)
    for judgment in judged[: len(items)]:  # each a reading: A none of the results, B all
        assert judgment.code_run["shares"] == [0.0, 1.0], judgment.id
        assert judgment.code_run["notes"][0], judgment.id  # why A has no count, in words
        assert judgment.winner == "B", judgment.id
    notes = {j.id: j.code_run["notes"][0] for j in judged[: len(items)]}
    assert notes["fork bomb"] == notes["shell"]
    assert notes["shell"].startswith("raised PermissionError on every input (the jail refused")
    assert notes["memory"] == "raised MemoryError on every input"
    assert "SIGKILL" in notes["dies"]
    assert judged[-1].code_run is None and judged[-1].status is Status.OK


def test_a_reference_function_no_answer_matches_is_said_to_be_unread(tiny, heads):
    service, _ = tiny
    verdict, _ = heads
    running = (verdict, heads[1])
    prose = CODE_PAIR.model_copy(update={"answers": ("Sort it and take one.", "Use a set.")})
    judged = service.judge(prose, _config(running, record=BEHAVIOUR))
    assert "reference_behaviour_difference" not in judged.verdict_parts
    assert judged.verdict_parts["reference_code_unread"] == 1.0
    assert "no answer's function could be run" in head_note(judged.verdict_parts)
    assert "no answer defines a function" in judged.code_run["unread"]
    # a reference that is no function: nothing to say
    capital = service.judge(CAPITAL_PAIR, _config(running, record=BEHAVIOUR))
    assert not {"reference_code_unread", "reference_code_not_run"} & set(capital.verdict_parts)
    assert capital.code_run is None


SORTING_PAIR = JudgeItem(
    id="sorting",
    question="Sort these numbers from smallest to largest: 80, 41, 85, 16, 93, 39.",
    answers=(  # A: polished, two swapped; B: right
        "Certainly! Comparing them one by one puts them in order. **Answer: 16, 39, 41, 80, "
        "93, 85**",
        "16, 39, 41, 80, 85, 93.",
    ),
    reference="In order: 16, 39, 41, 80, 85, 93.",
)


def test_a_head_that_weighs_the_order_reads_it_through_the_engine(tiny, heads):
    service, _ = tiny
    verdict, _ = heads
    criteria = heads[1]
    ordering = (
        verdict,
        replace(
            criteria, weights=np.zeros_like(criteria.weights), cross=np.zeros_like(criteria.cross)
        ),
    )
    record = moving(_rule(**READING, reference_order=30.0), reference_order=6.0)  # order alone
    judged = service.judge(SORTING_PAIR, _config(ordering, record=record))
    plain = service.judge(SORTING_PAIR, _config(heads))  # reads no order
    parts = judged.verdict_parts
    lead = parts["reference_order_difference"]
    assert lead == pytest.approx(-1 / 6, abs=1e-4) and "reference_order" not in plain.verdict_parts
    assert parts["reference_order"] == pytest.approx(30.0 * lead, abs=1e-2)
    assert judged.winner == "B" and "reference_order" in reference_signals(parts)
    assert "answer B states 17% more of them in that order" in head_note(parts)
    spread = _spread(judged)
    for key in judged.criteria:  # each criterion's gap is its part of the order's shift
        levels = [a.expected_criteria[key] for a in judged.answers]
        assert levels[0] - levels[1] == pytest.approx(6.0 * lead * spread[key], abs=2e-3)
    assert "the request's items in the reference's order" in (
        reference_note(_config(ordering, record=record)) or ""
    )


def test_a_single_answer_with_a_reference_is_read_apart(tiny, heads):
    service, _ = tiny
    config = _config(heads, Protocol.SINGLE, record=moving(_rule(True, **READING), **MOVING))
    single = CAPITAL_PAIR.model_copy(update={"answers": ("Canberra.",)})
    judged = service.judge(single, config)
    assert judged.raw_output.count('{"overall": ') == len(judged.criteria) > 0
    assert judged.criteria_by_head is None


def _spread(judgment) -> dict[str, float]:
    """Each criterion's part of the reference's shift on the judgment's scenario."""
    specs = load_catalog().specs_for(judgment.scenario)
    assert [spec.key for spec in specs] == list(judgment.criteria)
    return dict(zip(judgment.criteria, reference_spread(specs).tolist()))


def test_the_reference_moves_no_style_or_format_criterion_and_the_mean_as_fitted():
    specs = [
        CriterionSpec(key="right", name="R", description="d", weight=2.0, category="content"),
        CriterionSpec(key="look", name="L", description="d", weight=2.0, category="style"),
        CriterionSpec(key="shape", name="S", description="d", category="format"),
        CriterionSpec(key="clear", name="C", description="d", category="basic"),
        CriterionSpec(key="own", name="O", description="d"),  # a rubric's: no category
    ]
    spread = reference_spread(specs)
    assert spread.tolist() == pytest.approx([7 / 4, 0.0, 0.0, 7 / 4, 7 / 4])
    weights = np.array([spec.weight for spec in specs])
    assert weights @ spread == pytest.approx(weights.sum())  # the weighted mean moves as fitted
    alike = [spec.model_copy(update={"category": "style"}) for spec in specs]
    assert reference_spread(alike).tolist() == [1.0] * 5  # all style: every one alike


def test_the_reference_shift_is_centred_held_in_its_bounds_and_skips_a_missing_signal():
    def shift(bounds=None, **values):
        rule = moving(_rule(), bounds=bounds, **{name: WEIGHTS[name] for name in values})
        assert rule.criterion_shift is not None
        return reference_shift(
            rule.criterion_shift, values, len(next(iter(values.values())))
        ).tolist()

    words, likely = [1.0, 0.0], [-1.0, -2.0]
    assert shift(reference_words=words, reference_likelihood=likely) == pytest.approx([3.0, -3.0])
    three = shift(reference_words=[1.0, 0.5, 0.0], reference_likelihood=[None, -1.0, -1.0])
    assert three == pytest.approx([2.0, 0.0, -2.0])  # a missing value: the signal adds nothing
    # beyond the range the fit saw, the likelihood's part does not grow
    held = {"reference_likelihood": 0.25}
    both = shift(held, reference_words=[0.5, 0.5], reference_likelihood=[-1.0, -7.0])
    assert both == pytest.approx([0.5, -0.5])
    # the judge's check moves them by its centred log-odds
    checked = shift(reference_words=words, reference_likelihood=likely, reference_check=[2.0, -2.0])
    assert checked == pytest.approx([3.0 + 1.0, -3.0 - 1.0])
    # the items' order: centred like the rest; nothing where an answer has no reading
    assert shift(reference_order=[1.0, 0.5]) == pytest.approx([1.5, -1.5])
    assert shift(reference_order=[1.0, None]) == [0.0, 0.0]
    moves = moved_by(moving(_rule(), caps=["reference_behaviour"], reference_order=6.0))
    assert moves == {"reference_behaviour", "reference_order"} and not moved_by(_rule())


WEIGHTS = {
    "reference_words": 4.0,
    "reference_likelihood": 2.0,
    "reference_check": 0.5,
    "reference_order": 6.0,
}


def test_a_rubric_is_read_apart(tiny, heads):
    service, _ = tiny
    rubric = load_rubric(HELPFULNESS_RUBRIC)
    config = _config(
        heads, Protocol.SINGLE, record=_rule(True), choice=CriteriaChoice(rubric=rubric)
    )
    single = JudgeItem(id="s", question=PLANET_PAIR.question, answers=("Mercury.",))
    judged = service.judge(single, config)
    assert judged.raw_output.count('{"overall": ') == len(rubric.criteria) == len(judged.criteria)


def test_head_criteria_need_a_head_file():
    with pytest.raises(ConfigError) as caught:
        judge_config(None, SettingsLayer(criteria_read="head"))
    assert caught.value.field == "criteria_read" and "--criteria-apart" in str(caught.value)


def _reading_relevance(criteria: CriterionHead) -> CriterionHead:
    """`criteria` with a last z column, the answer's request relevance, that moves levels."""
    return replace(
        criteria,
        relevance=True,
        z_mean=np.append(criteria.z_mean, 0.2),
        z_scale=np.append(criteria.z_scale, 0.1),
        weights=np.append(criteria.weights, 1.5),
    )


def test_a_head_that_reads_request_relevance_gets_it_from_the_engine(tiny, heads):
    from app.deciding.relevance import request_similarities

    service, backend = tiny
    verdict, criteria = heads
    near = _reading_relevance(criteria)
    judged = service.judge(PLANET_PAIR, _config((verdict, near)))
    plain = service.judge(PLANET_PAIR, _config(heads))
    similar = request_similarities(PLANET_PAIR.question, PLANET_PAIR.answers)
    moved = [
        a.expected_criteria["accuracy"] - b.expected_criteria["accuracy"]
        for a, b in zip(judged.answers, plain.answers)
    ]
    # each answer's level moves by 1.5 per z unit of its relevance (inside the scale)
    expected = [1.5 * (s - 0.2) / 0.1 for s in similar]
    for got, want, level in zip(moved, expected, (a.expected_criteria for a in judged.answers)):
        if 1.0 < level["accuracy"] < 10.0:
            assert got == pytest.approx(want, abs=2e-3)
    assert moved[0] != pytest.approx(moved[1])  # the answers differ in relevance
    # a single answer reads it too (no verdict relevance is computed for grades)
    single = JudgeItem(id="s", question=PLANET_PAIR.question, answers=(PLANET_PAIR.answers[0],))
    graded = service.judge(single, _config((verdict, near), Protocol.SINGLE, record=_rule(True)))
    assert graded.criteria_by_head and graded.answers[0].expected_criteria
    readings = backend.read_answers(PLANET_PAIR.question, [PLANET_PAIR.answers[0]])
    likelihood = readings[0].features()
    with pytest.raises(ValueError, match="relevance"):
        near.features(readings[0].states, likelihood, len(PLANET_PAIR.answers[0]))
    read = AnswerReads([readings[0].states], [likelihood], [], [])
    assert head_levels(near, [], read, ["x"]) is None


def test_the_head_file_round_trips_and_a_bad_one_is_named(tmp_path, heads):
    _, criteria = heads
    path = tmp_path / "criterion_head.npz"
    criteria.save(path)
    again = load_criterion_head(path)
    assert again.criteria == criteria.criteria and np.allclose(again.weights, criteria.weights)
    with np.load(path) as data:  # one that holds one (the record holds them) is refused
        held = {k: data[k] for k in data.files} | {"reference_check": 0.5}
        np.savez(tmp_path / "older.npz", **held)
    with pytest.raises(ConfigError, match=r"older\.npz: reference_check"):
        CriterionHead.load(tmp_path / "older.npz")
    with np.load(path) as data:  # a file written before request relevance: none
        np.savez(tmp_path / "plain.npz", **{k: data[k] for k in data.files if k != "relevance"})
    assert not CriterionHead.load(tmp_path / "plain.npz").relevance
    _reading_relevance(criteria).save(path)
    assert CriterionHead.load(path).relevance
    replace(_reading_relevance(criteria), relevance=False).save(path)  # one z column too many
    with pytest.raises(ConfigError, match="mismatched shapes"):
        CriterionHead.load(path)
    np.savez(tmp_path / "bad.npz", weights=np.zeros(2))
    with pytest.raises(ConfigError) as caught:
        CriterionHead.load(tmp_path / "bad.npz")
    assert "bad.npz" in str(caught.value) and "missing arrays" in str(caught.value)


def test_a_disagreement_with_the_head_is_told_with_the_heads_own_record():
    from app.records import Judgment

    judged = Judgment(
        id="p",
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="B",
        leaning="B",
        criteria_verdict="A",
        criteria_by_head=True,
    )
    note = criteria_agreement_note(judged)
    assert "criterion head disagreed with the verdict" in note and "right about half" in note
    assert "92 %" in note  # LLMBar's neighbours: the verdict, not the criteria
    read = criteria_agreement_note(judged.model_copy(update={"criteria_by_head": None}))
    assert "criterion head" not in read and "the verdict was right more often" in read


def test_a_rule_decides_a_code_pair_at_its_fitted_confidence_and_the_page_says_so(tiny, heads):
    """A record's rule (app/deciding/decision.py) decides where its reading is clear: the
    verdict takes the rule's fitted confidence, not the certainty a weight at a bound gave."""
    need_jail()
    service, _ = tiny
    verdict, _ = heads
    rule = Rule(
        name="reference_behaviour",
        at_least=0.1,
        confidence=0.9,
        when="the reference is a function and the answers' functions differ",
        value="the share of the reference function's results each answer's gives",
        share="reference_behaviour",
        reads=("code_run",),
        cost="about 0.1 s a code pair",
        reference=True,
        fitted=Fitted(by="this test", rows="none"),
    )
    record = _rule(**READING).model_copy(update={"rules": (rule,)})
    config = _config((verdict, heads[1]), criterion_scores=False)
    judged = service.judge(CODE_PAIR, replace(config, parts=replace(config.parts, decision=record)))
    parts = judged.verdict_parts
    assert parts["reference_behaviour_difference"] < -0.3  # B gives the reference's results
    assert judged.winner == "B" and judged.confidence == pytest.approx(0.9)
    assert (
        judged.verdict_probs["B"] == pytest.approx(0.9) and parts["rule_reference_behaviour"] == 0.9
    )
    shares = sum(
        v
        for k, v in parts.items()
        if k
        in (
            "states",
            "fit",
            "fluency",
            "relevance",
            "length",
            "reference_words",
            "reference_likelihood",
            "reference_behaviour",
        )
    )
    assert shares == pytest.approx(parts["score"], abs=1e-3)  # the rule's share fills the score
    assert "Decided by the judge's rule `reference_behaviour`" in head_note(parts)
    assert "(90%)" in head_note(parts)
