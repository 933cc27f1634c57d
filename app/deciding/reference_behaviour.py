"""How often each answer's function gives the reference function's result: the reference's
part of a verdict for code, read by evaluating both (app/deciding/code_interpreter.py, none
of their code run) or, where the user turned `run_code` on, by running them as Python.

For a request answered by a function, the reference's words and likelihood see the wrong
things (a buggy function can share more of the reference's names than a right one), and a
1.5B judge asked whether a function gives the reference's result is barely better than
chance (training/EXPERIMENTS.md, session 29). Running both on the same inputs
(app/deciding/code_inputs.py) in the sandbox (app/deciding/code_sandbox.py) settles it: an
answer's share is the part of the inputs the reference returns on where it returns the same
thing. An answer that defines no function to compare has a share of 0 when the other
answer has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.deciding.code_answers import answer_function, reference_function
from app.deciding.code_inputs import candidate_inputs
from app.deciding.code_sandbox import run_functions

MIN_INPUTS = 3  # fewer inputs the reference returns on say too little of its behaviour


@dataclass(frozen=True)
class BehaviourReading:
    """Each answer's share of the reference's results it gives, on `inputs` inputs."""

    function: str  # the reference's function's name
    inputs: int
    shares: tuple[float, ...]
    notes: tuple[str, ...]  # per answer: why it has no function to call, else ""
    ran_python: bool = False  # run as Python (run_code), else evaluated

    def lead(self) -> float | None:
        """A's share minus B's, in -1..1 (None without two answers)."""
        if len(self.shares) != 2:
            return None
        return self.shares[0] - self.shares[1]


def behaviour_reading(
    answers: Sequence[str], reference: str, question: str, *, run_python: bool
) -> BehaviourReading | None:
    """Each answer's share of the reference's results, where the reference is a Python
    function and some answer defines one; None where the reference is not code, no answer
    has a function, the reference returned on fewer than MIN_INPUTS inputs, or (evaluated,
    not `run_python`) a program uses Python the evaluator does not follow."""
    wanted = reference_function(reference, question)
    if wanted is None:
        return None
    functions = [answer_function(answer, wanted) for answer in answers]
    if not any(functions):
        return None
    inputs = candidate_inputs(wanted.parameters)
    run = run_functions(wanted, functions, inputs, run_python=run_python)
    if run.error is not None or run.inputs < MIN_INPUTS:
        return None
    shares = tuple((count or 0) / run.inputs for count in run.agreed)
    notes = tuple(
        note if function else "no function to call" for note, function in zip(run.notes, functions)
    )
    return BehaviourReading(wanted.name, run.inputs, shares, notes, run_python)
