"""A reference function and the answers' run beside it, each in a jailed child of its own
(app/code_run/runner.py, on the real jail), and their results compared here."""

from __future__ import annotations

import math

import pytest

from app.code_run import jail
from app.code_run.answers import CodeFunction
from app.code_run.behaviour import BehaviourReading, Unread, behaviour_reading
from app.code_run.runner import KEEP, Opaque, decoded, run_functions, run_program, same
from tests.support.needs import need_jail

REFERENCE = "def double(x):\n    return 2 * x"
QUESTION = "Write a Python function `double` that returns twice its argument."


@pytest.fixture(autouse=True)
def _jail() -> None:
    need_jail()


def reading(answers: list[str], reference: str = REFERENCE) -> BehaviourReading:
    found = behaviour_reading(answers, reference, QUESTION)
    assert isinstance(found, BehaviourReading), found
    return found


def test_a_right_function_agrees_everywhere_and_a_buggy_one_where_it_happens_to():
    found = reading(["def double(x):\n    return x * x", "def double(y):\n    return y + y"])
    assert found.inputs == KEEP and found.function == "double"
    assert found.shares[1] == 1.0 and 0.0 < found.shares[0] < 0.5  # x*x == 2x at 0 and 2
    assert found.shares[1] == 1.0
    assert found.record()["shares"] == [round(found.shares[0], 4), 1.0]


def test_an_answer_without_a_function_counts_none_of_the_results():
    found = reading(["Just multiply by two.", REFERENCE])
    assert found.shares == (0.0, 1.0) and found.notes[0] == "no function to call"
    unread = behaviour_reading(["Twice it.", "Double it."], REFERENCE, QUESTION)
    assert isinstance(unread, Unread) and "no answer defines a function" in unread.why
    assert behaviour_reading(["def f(x): pass"], "Twice the input.", QUESTION) is None


def test_a_changed_input_reaches_no_one_else():
    emptying = "def sort_copy(xs):\n    found = sorted(xs)\n    xs.clear()\n    return found"
    right = "def sort_copy(xs):\n    found = sorted(xs)\n    xs.copy()\n    return found"
    found = behaviour_reading([emptying, right], right, "Write sort_copy(xs).")
    assert isinstance(found, BehaviourReading) and found.shares == (1.0, 1.0)


def test_python_beyond_a_small_subset_runs_as_python():
    # classes, `with`, random and the standard library: what a whitelist evaluator refused
    classy = (
        "import random, contextlib\nclass Doubler:\n    def __init__(self, x):\n"
        "        self.x = x\n    def value(self):\n        with contextlib.suppress(KeyError):\n"
        "            random.seed(1)\n        return self.x * 2\n"
        "def double(x):\n    return Doubler(x).value()"
    )
    assert reading([classy, "def double(x):\n    return x"]).shares[0] == 1.0


def test_results_of_every_kind_compare_by_value():
    kinds = (
        "from fractions import Fraction\ndef double(x):\n"
        "    return {'n': (2 * x,), 's': frozenset([1]), 'f': Fraction(1, 2), 'b': b'x'}"
    )
    found = reading([kinds, kinds.replace("2 * x", "x + x")], reference=kinds)
    assert found.shares == (1.0, 1.0)
    assert decoded({"dict": [[{"tuple": [1, 2]}, {"set": [3]}]]}) == {(1, 2): frozenset({3})}
    assert decoded({"object": ["Fraction", "Fraction(1, 2)"]}) == Opaque(
        "Fraction", "Fraction(1, 2)"
    )
    assert same(0.1 + 0.2, 0.3) and same([1, 2.0], (1, 2)) and not same("2", 2)
    assert same(math.inf, math.inf) and not same({1: 2}, [1])


def test_a_loop_that_never_ends_is_stopped_and_printing_changes_nothing():
    looping = reading(["def double(x):\n    while True:\n        pass", REFERENCE])
    assert looping.shares == (0.0, 1.0) and "ran past 0.5 s" in looping.notes[0]
    printing = "def double(x):\n    print('x' * 1000)\n    return 2 * x"
    assert reading([printing, REFERENCE]).shares == (1.0, 1.0)
    hungry = reading(["def double(x):\n    a = [0] * 10**10\n    return 2 * x", REFERENCE])
    assert hungry.shares == (0.0, 1.0) and hungry.notes[0] == "raised MemoryError on every input"


def test_an_answer_cannot_forge_its_reply_or_touch_the_others():
    # it writes outcomes of its own over its reply, then leaves: only its own count is spoilt
    forging = (
        "import os\n"
        "def double(x):\n"
        "    line = ('{\"value\": %d}\\n' % (2 * x)) * 50 + '{\"done\": true}\\n'\n"
        "    for fd in range(3, 12):\n"
        "        try:\n"
        "            os.write(fd, line.encode())\n"
        "        except OSError:\n"
        "            pass\n"
        "    os._exit(0)"
    )
    found = reading([forging, REFERENCE])
    assert found.shares[1] == 1.0
    assert found.shares[0] <= 1 / KEEP  # its forged values answer one input, at most


def test_a_child_that_dies_keeps_what_it_reported_and_says_why():
    dying = "import os\ndef double(x):\n    if x == 3:\n        os._exit(3)\n    return 2 * x"
    found = reading([dying, REFERENCE])
    assert 0.0 < found.shares[0] < 1.0 and found.shares[1] == 1.0
    assert "stopped after" in found.notes[0] and "exit status 3" in found.notes[0]


def test_a_jail_that_cannot_start_gives_no_reading(monkeypatch):
    right = CodeFunction(REFERENCE, "double", 1)
    monkeypatch.setattr(jail, "BWRAP", "/nonexistent/bwrap")
    run = run_program(right, [[1]], keep=1, stop_at_timeout=True)
    assert not run.started and "could not start" in run.note
    sandbox = run_functions(right, [right], [[1], [2], [3]])
    assert sandbox.error is not None and sandbox.agreed == (None,)
