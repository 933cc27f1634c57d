"""Finding the code in an answer or a reference, and the function to compare."""

from __future__ import annotations

from app.code_run.answers import answer_function, program_of, reference_function
from app.code_run.inputs import candidate_inputs

REFERENCE = "def double(x):\n    return 2 * x"


def test_a_fenced_block_is_the_code_and_example_calls_are_left_out():
    answer = (
        "Sure! Here it is:\n\n```python\nimport math\n\ndef double(n):\n    return n + n\n\n"
        "print(double(4))\n```\n\nCall it with any number."
    )
    module = program_of(answer)
    assert module is not None
    kinds = [type(node).__name__ for node in module.body]
    assert kinds == ["Import", "FunctionDef"]  # the print call is not kept


def test_bare_code_with_prose_after_it_parses():
    answer = "def double(x):\n    return x * 2\nThis doubles x, as asked."
    found = answer_function(answer, reference_function(REFERENCE, "Write double."))
    assert found is not None and found.name == "double" and found.parameters == 1
    assert "This doubles" not in found.source


def test_prose_alone_has_no_function():
    assert program_of("Multiply the number by two and return it.") is None
    assert reference_function("Twice the input.", "Write double.") is None


def test_the_reference_function_is_the_one_the_request_names_else_its_last():
    reference = "def helper(x):\n    return x\n\ndef main_one(x, y):\n    return helper(x) + y"
    assert reference_function(reference, "Write `helper`, please.").name == "helper"
    chosen = reference_function(reference, "Add two numbers.")
    assert (chosen.name, chosen.parameters) == ("main_one", 2)
    # no parameters (or more than the inputs cover): nothing to call it with
    assert reference_function("def now():\n    return 1", "Write now.") is None


def test_an_answer_function_of_another_name_is_found_by_its_parameters():
    wanted = reference_function(REFERENCE, "Write a function that doubles a number.")
    answer = "def twice(value, unused=None):\n    return value * 2"
    found = answer_function(answer, wanted)
    assert found is not None and found.name == "twice"
    assert answer_function("def add(a, b):\n    return a + b", wanted) is None


def test_the_inputs_are_the_same_every_time_and_cover_each_arity():
    assert candidate_inputs(1) == candidate_inputs(1)
    assert all(len(args) == 1 for args in candidate_inputs(1))
    pairs = candidate_inputs(2)
    assert pairs == candidate_inputs(2) and all(len(args) == 2 for args in pairs)
    assert 0 < len(candidate_inputs(3)) <= 160
