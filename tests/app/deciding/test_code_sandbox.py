"""Running a reference function and the answers' beside it, in the sandboxed child: as
Python (the user's `run_code`) and evaluated without running them (the default)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from app.deciding.code_answers import CodeFunction
from app.deciding.code_sandbox import run_functions
from app.deciding.reference_behaviour import behaviour_reading

REFERENCE = "def double(x):\n    return 2 * x"
QUESTION = "Write a Python function `double` that returns twice its argument."


MODES = pytest.mark.parametrize("run_python", [True, False], ids=["run", "evaluated"])


def _shares(answer: str, run_python: bool = True) -> tuple[float, ...]:
    found = behaviour_reading([answer, REFERENCE], REFERENCE, QUESTION, run_python=run_python)
    assert found is not None and found.ran_python is run_python
    return found.shares


@MODES
def test_a_right_function_agrees_everywhere_and_a_buggy_one_where_it_happens_to(run_python):
    found = behaviour_reading(
        ["def double(x):\n    return x * x", "def double(y):\n    return y + y"],
        REFERENCE,
        QUESTION,
        run_python=run_python,
    )
    assert found is not None and found.inputs >= 10 and found.function == "double"
    assert found.shares[1] == 1.0 and 0.0 < found.shares[0] < 0.5  # x*x == 2x at 0 and 2
    assert found.lead() == pytest.approx(found.shares[0] - 1.0)


@MODES
def test_an_answer_without_a_function_counts_none_of_the_results(run_python):
    read = partial(behaviour_reading, question=QUESTION, run_python=run_python)
    found = read(["Just multiply by two.", REFERENCE], REFERENCE)
    assert found is not None and found.shares == (0.0, 1.0)
    assert found.notes[0] == "no function to call"
    assert read(["Twice it.", "Double it."], REFERENCE) is None
    assert read(["def f(x): pass"], "Twice the input.") is None


@MODES
def test_a_changed_input_reaches_no_one_else(run_python):
    emptying = "def sort_copy(xs):\n    found = sorted(xs)\n    xs.clear()\n    return found"
    right = "def sort_copy(xs):\n    found = sorted(xs)\n    xs.copy()\n    return found"
    found = behaviour_reading(
        [emptying, right], right, "Write sort_copy(xs).", run_python=run_python
    )
    # the answer after the one that empties its list still sees the input: each got a copy
    assert found is not None and found.shares == (1.0, 1.0)


def test_writing_files_and_starting_processes_are_refused(tmp_path: Path):
    target = tmp_path / "written"
    keep = tmp_path / "keep"
    keep.write_text("k")
    attempts = [
        f"def double(x):\n    open({str(target)!r}, 'w').write('x')\n    return 2 * x",
        f"import os\ndef double(x):\n    os.system('touch {target}')\n    return 2 * x",
        f"import os\ndef double(x):\n    os.remove({str(keep)!r})\n    return 2 * x",
        "import subprocess\ndef double(x):\n    subprocess.run(['true'])\n    return 2 * x",
        "import socket\ndef double(x):\n    socket.create_connection(('127.0.0.1', 9))\n"
        "    return 2 * x",
        "def double(x):\n    import ctypes\n    return 2 * x",
    ]
    for code in attempts:
        assert _shares(code) == (0.0, 1.0), code  # refused: raised on every input
        # evaluated, none of it runs: the evaluator does not follow such code, so no reading
        evaluated = behaviour_reading([code, REFERENCE], REFERENCE, QUESTION, run_python=False)
        assert evaluated is None, code
    assert not target.exists() and keep.read_text() == "k"


@MODES
def test_a_loop_that_never_ends_is_stopped_and_printing_changes_nothing(run_python):
    shares = partial(_shares, run_python=run_python)
    assert shares("def double(x):\n    while True:\n        pass") == (0.0, 1.0)
    assert shares("def double(x):\n    print('x' * 1000)\n    return 2 * x") == (1.0, 1.0)
    assert shares("def double(x):\n    a = [0] * 10**10\n    return 2 * x") == (0.0, 1.0)


@MODES
def test_a_child_that_cannot_start_gives_no_reading(monkeypatch, run_python):
    monkeypatch.setattr("app.deciding.code_sandbox.sys.executable", "/nonexistent/python")
    right = CodeFunction(REFERENCE, "double", 1)
    run = run_functions(right, [right], [[1]], run_python=run_python)
    assert run.error is not None and "could not start" in run.error
    read = behaviour_reading([REFERENCE, REFERENCE], REFERENCE, QUESTION, run_python=run_python)
    assert read is None


def test_a_child_that_dies_gives_no_reading():
    dying = CodeFunction("import os\ndef double(x):\n    os._exit(3)", "double", 1)
    right = CodeFunction(REFERENCE, "double", 1)
    run = run_functions(right, [dying, right], [[1], [2], [3]], run_python=True)
    assert run.error is not None and run.agreed == (None, None)
    answers = ["import os\ndef double(x):\n    os._exit(3)"]
    assert behaviour_reading(answers, REFERENCE, QUESTION, run_python=True) is None


def test_a_program_the_evaluator_does_not_follow_gives_no_reading_and_says_which():
    right = CodeFunction(REFERENCE, "double", 1)
    classy = CodeFunction("class D:\n    pass\ndef double(x):\n    return 2 * x", "double", 1)
    run = run_functions(right, [classy, right], [[1], [2], [3]], run_python=False)
    assert run.error is not None and "ClassDef" in run.error
    met_late = CodeFunction("def double(x):\n    return getattr(x, 'real') * 2", "double", 1)
    run = run_functions(right, [right, met_late], [[1], [2], [3]], run_python=False)
    assert run.error is not None and run.inputs == 3  # met in a call, not on the tree
    # the reference itself beyond it: no reading either
    run = run_functions(classy, [right], [[1], [2], [3]], run_python=False)
    assert run.error is not None and run.inputs == 0
