"""The reference-decided pairs: the right answer agrees with the reference (code: it behaves
as the reference does, the buggy one does not), the split keeps requests apart, and neither
position nor length tells the right answer."""

from __future__ import annotations

import random

import numpy as np
import pytest

from app.records import Judgment, Protocol, Status
from training.datasets import reference_decided as rd
from training.heads.reference_fit import accuracies

SAMPLES = {
    "second_largest": [[3, 1, 3, 2], [5], [7, 7], [4, 9, 9, 1]],
    "sum_of_evens": [[1, 2, 3, 4], [], [7, 9], [2, 2, 5]],
    "count_vowels": ["Hello World", "AEIOU", "xyz", "Banana"],
    "is_palindrome": ["Never odd or even", "abc", "Race car", "a"],
    "factorial": [0, 1, 5, 6],
    "mean_or_none": [[1, 2, 3], [], [4]],
    "dedupe": [[3, 1, 3, 2, 1], [], ["b", "a", "b"]],
    "fizzbuzz": [15, 9, 10, 7, 30],
}


def _call(source: str, name: str, value):  # type: ignore[no-untyped-def]
    scope: dict = {}
    exec(source, scope)  # the module's own code samples, written here
    argument = list(value) if isinstance(value, list) else value
    try:
        return scope[name](argument)
    except Exception as exc:  # a buggy version may raise (the mean of nothing)
        return type(exc).__name__


@pytest.mark.parametrize("family", rd.CODE, ids=[c[0] for c in rd.CODE])
def test_the_right_function_behaves_as_the_reference_and_the_buggy_one_does_not(family):
    name, _, reference, right, buggy = family
    samples = SAMPLES[name]
    for source in (reference, right, buggy):
        assert f"def {name}(" in source.format(f=name)
    expected = [_call(reference.format(f=name), name, s) for s in samples]
    assert [_call(right.format(f=name), name, s) for s in samples] == expected
    assert [_call(buggy.format(f=name), name, s) for s in samples] != expected


def test_every_pair_labels_the_answer_that_agrees_with_the_reference():
    rng = random.Random(0)
    cases = [case for family in rd.FAMILIES for case in family(rng)]
    assert len({c.family for c in cases}) >= 9
    for case in cases:
        assert case.right != case.wrong
        if case.family not in ("code",):
            assert case.right in case.reference or case.right.split()[0] in case.reference
            assert f" {case.wrong}." not in case.reference  # the wrong one is not quoted
    train, test = rd.build()
    rows = train + test
    assert len(rows) > 200
    for row in rows:
        label = row["label"]["winner"]
        right = row["answers"][0 if label == "A" else 1]
        wrong = row["answers"][1 if label == "A" else 0]
        assert right != wrong
        assert row["reference"]


def test_the_split_keeps_requests_apart_and_nothing_but_agreement_decides():
    train, test = rd.build()
    assert not {r["question"] for r in train} & {r["question"] for r in test}
    assert 0.2 < len(test) / (len(train) + len(test)) < 0.4
    rows = train + test
    assert rd.build() == (train, test)  # the same rows every time
    a_right = np.mean([r["label"]["winner"] == "A" for r in rows])
    assert 0.4 < a_right < 0.6
    longer_right = np.mean(
        [
            (len(r["answers"][0]) > len(r["answers"][1])) == (r["label"]["winner"] == "A")
            for r in rows
        ]
    )
    assert 0.3 < longer_right < 0.7  # length alone is near chance
    polished_wrong = np.mean([r["style"]["wrong_polished"] for r in rows])
    assert polished_wrong > 0.6


def test_the_report_scores_each_decision_on_the_same_pairs():
    found = {
        "verdict": np.array([1.0, 1.0, -1.0, 0.0]),  # the last: a tie, wrong either way
        "head": np.array([1.0, -1.0, -0.5, -0.5]),
        "lead": np.array([0.1, 0.5, -1.0, -0.2]),
        "words": np.array([0.0, -0.5, 0.5, -1.0]),
        "check": np.array([2.0, 1.0, -1.0, 3.0]),
        "behaviour": np.array([0.0, 0.0, -0.5, -1.0]),  # functions in the last two
        "order": np.array([0.0, 0.0, -0.2, 0.0]),  # the third restates the request's items
        "criteria": np.array([0.0, 1.0, -1.0, 1.0]),
        "longer": np.array([10.0, -10.0, 10.0, 10.0]),
        "a_wins": np.array([1.0, 1.0, 0.0, 0.0]),
    }
    got = accuracies(found)
    assert got["the judge's verdict (its record)"] == 75.0
    assert got["the head alone (no reference)"] == 75.0  # the second pair wrong
    assert got["the reference's likelihood alone"] == 100.0
    assert got["the reference's words alone"] == 25.0  # the first pair's zero counts as wrong
    assert got["the judge's check alone"] == 75.0  # the last pair wrong
    assert got["the code's behaviour alone (run)"] == 50.0  # no function: a zero, wrong
    assert got["the items' order alone"] == 25.0  # defined on the third pair alone
    assert got["the longer answer"] == 25.0 and got["the shorter answer"] == 75.0


def test_features_read_the_heads_own_logit_the_likelihood_and_the_check_leads():
    from app.io.reader import InputRow
    from app.records import JudgeItem, Label
    from training.heads.reference_fit import features

    item = JudgeItem(id="x", question="q", answers=("aa", "b"), label=Label(winner="B"))
    judgment = Judgment(
        id="x",
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        verdict_parts={
            "states": 0.3,
            "reference": 0.8,
            "score": 1.1,
            "reference_likelihood_difference": 0.2,
            "reference_check_difference": -1.5,
        },
    )
    found = features([InputRow(line=1, item=item, error=None, raw=None)], [judgment])
    assert found["verdict"][0] == 1.0  # the judge said A
    assert found["head"][0] == pytest.approx(0.3)
    assert found["lead"][0] == pytest.approx(0.2)
    assert found["check"][0] == pytest.approx(-1.5)
    assert found["words"][0] == 0.0  # no reference: no words lead
    assert found["behaviour"][0] == 0.0  # nor a function to run
    assert found["longer"][0] == 1.0 and found["a_wins"][0] == 0.0
    code = item.model_copy(
        update={
            "answers": ("def f(x):\n    return x + 1", "def f(x):\n    return 2 * x"),
            "reference": "def f(x):\n    return x * 2",
        }
    )
    ran = features([InputRow(line=1, item=code, error=None, raw=None)], [judgment])
    assert -1.0 < ran["behaviour"][0] < -0.5  # B's function gives the reference's results


def test_the_report_says_what_the_judges_record_got_right_beside_the_head_alone():
    from app.io.reader import InputRow
    from app.records import JudgeItem, Label
    from training.heads.reference_fit import CODING_PAIR, render, report

    def pair(n: int, winner: str, said: str, head: float) -> tuple[InputRow, Judgment]:
        item = JudgeItem(
            id=f"p{n}",
            question=f"What is {n} + {n}?",
            answers=(str(2 * n), str(n)),
            reference=f"{n} + {n} is {2 * n}.",
            label=Label(winner=winner),
        )
        judgment = Judgment(
            id=item.id,
            protocol=Protocol.PAIRWISE,
            status=Status.OK,
            winner=said,
            leaning=said,
            verdict_parts={"states": head, "score": head},
        )
        return InputRow(line=n, item=item, error=None, raw={"family": "sums"}), judgment

    rows, judged = zip(pair(1, "A", "A", -0.5), pair(2, "A", "A", 0.4), pair(3, "B", "A", 0.2))
    coding = Judgment(
        id="coding-pair", protocol=Protocol.PAIRWISE, status=Status.OK, winner="A", leaning="A"
    )
    result = report((rows, judged), (rows, judged), (CODING_PAIR, coding))
    assert result["test"]["the judge's verdict (its record)"] == pytest.approx(66.7)
    assert result["test"]["the head alone (no reference)"] == pytest.approx(33.3)
    assert result["test_by_family"]["sums"]["pairs"] == 3
    assert result["coding_pair"]["verdict"] == "A"
    text = render(result)
    assert "| the judge's verdict (its record) | 66.7 | 66.7 |" in text
    assert "| sums | 3 | 66.7 | 33.3 |" in text
    assert "the judge A" in text
