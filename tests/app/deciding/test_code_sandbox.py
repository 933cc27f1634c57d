"""Running a reference function and the answers' beside it, in the sandboxed child."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.deciding.code_answers import CodeFunction
from app.deciding.code_sandbox import run_functions
from app.deciding.reference_behaviour import behaviour_reading

REFERENCE = "def double(x):\n    return 2 * x"
QUESTION = "Write a Python function `double` that returns twice its argument."


def _shares(answer: str) -> tuple[float, ...]:
    found = behaviour_reading([answer, REFERENCE], REFERENCE, QUESTION)
    assert found is not None
    return found.shares


def test_a_right_function_agrees_everywhere_and_a_buggy_one_where_it_happens_to():
    found = behaviour_reading(
        ["def double(x):\n    return x * x", "def double(y):\n    return y + y"],
        REFERENCE,
        QUESTION,
    )
    assert found is not None and found.inputs >= 10 and found.function == "double"
    assert found.shares[1] == 1.0 and 0.0 < found.shares[0] < 0.5  # x*x == 2x at 0 and 2
    assert found.lead() == pytest.approx(found.shares[0] - 1.0)


def test_an_answer_without_a_function_counts_none_of_the_results():
    found = behaviour_reading(["Just multiply by two.", REFERENCE], REFERENCE, QUESTION)
    assert found is not None and found.shares == (0.0, 1.0)
    assert found.notes[0] == "no function to call"
    assert behaviour_reading(["Twice it.", "Double it."], REFERENCE, QUESTION) is None
    assert behaviour_reading(["def f(x): pass"], "Twice the input.", QUESTION) is None


def test_a_changed_input_reaches_no_one_else():
    emptying = "def sort_copy(xs):\n    found = sorted(xs)\n    xs.clear()\n    return found"
    right = "def sort_copy(xs):\n    found = sorted(xs)\n    xs.copy()\n    return found"
    found = behaviour_reading([emptying, right], right, "Write sort_copy(xs).")
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
    assert not target.exists() and keep.read_text() == "k"


def test_a_loop_that_never_ends_is_stopped_and_printing_changes_nothing():
    assert _shares("def double(x):\n    while True:\n        pass") == (0.0, 1.0)
    assert _shares("def double(x):\n    print('x' * 1000)\n    return 2 * x") == (1.0, 1.0)
    assert _shares("def double(x):\n    a = [0] * 10**10\n    return 2 * x") == (0.0, 1.0)


def test_a_child_that_cannot_start_gives_no_reading(monkeypatch):
    monkeypatch.setattr("app.deciding.code_sandbox.sys.executable", "/nonexistent/python")
    right = CodeFunction(REFERENCE, "double", 1)
    run = run_functions(right, [right], [[1]])
    assert run.error is not None and "could not start" in run.error
    assert behaviour_reading([REFERENCE, REFERENCE], REFERENCE, QUESTION) is None


def test_a_child_that_dies_gives_no_reading():
    dying = CodeFunction("import os\ndef double(x):\n    os._exit(3)", "double", 1)
    right = CodeFunction(REFERENCE, "double", 1)
    run = run_functions(right, [dying, right], [[1], [2], [3]])
    assert run.error is not None and run.agreed == (None, None)
    assert (
        behaviour_reading(["import os\ndef double(x):\n    os._exit(3)"], REFERENCE, QUESTION)
        is None
    )
