"""The reference-decided pairs: the right answer agrees with the reference (code: it behaves
as the reference does, the buggy one does not), the split keeps requests apart, and neither
position nor length tells the right answer."""

from __future__ import annotations

import random

import numpy as np
import pytest

from training.datasets import reference_decided as rd

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
