"""How often each answer's function gives the reference function's result: the reference's
part of a verdict for code, read by running both as Python in the jail
(app/code_run/jail.py), where the user leaves code running on and a jail works here.

For a request answered by a function, the reference's words and likelihood see the wrong
things (a buggy function can share more of the reference's names than a right one), and a
1.5B judge asked whether a function gives the reference's result is barely better than
chance (training/EXPERIMENTS.md, session 29). Running both on the same inputs
(app/code_run/inputs.py) settles it: an answer's share is the part of the inputs the
reference returns on where it returns the same thing. An answer that defines no function
to compare, or whose code fails, has a share of 0 when the other answer has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from app.code_run.answers import answer_function, reference_function
from app.code_run.inputs import candidate_inputs
from app.code_run.jail import jail_status
from app.code_run.runner import run_functions
from app.records import Judgment, Protocol

MIN_INPUTS = 3  # fewer inputs the reference returns on say too little of its behaviour
CODE_OFF = "code running is off: no answer's code was run"
CODE_ON = "turn on running code answers (the sidebar's switch; leave out --no-run-code)"


@dataclass(frozen=True)
class BehaviourReading:
    """Each answer's share of the reference's results it gives, on `inputs` inputs."""

    function: str  # the reference's function's name
    inputs: int
    shares: tuple[float, ...]
    notes: tuple[str, ...]  # per answer: how its function ran, where not plainly

    def record(self) -> dict[str, Any]:
        """What a judgment keeps of it (`code_run`)."""
        return {
            "function": self.function,
            "inputs": self.inputs,
            "shares": [round(share, 4) for share in self.shares],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Unread:
    """Why a reference function's behaviour gave no reading (`why`), what a user can do
    about it (`fix`, "" where nothing), and which of the page's notes says so (`kind`:
    code running off, no jail here, or nothing to compare)."""

    why: str
    fix: str = ""
    kind: Literal["not_run", "no_jail", "unread"] = "unread"

    def record(self) -> dict[str, Any]:
        return {"unread": self.why, **({"fix": self.fix} if self.fix else {})}


def behaviour_reading(
    answers: Sequence[str], reference: str, question: str
) -> BehaviourReading | Unread | None:
    """Each answer's share of the reference's results, run in the jail; None where the
    reference is not a Python function; Unread where it is but no reading came (no jail
    here, no answer with a function, the reference returned on fewer than MIN_INPUTS
    inputs, or its own run failed)."""
    wanted = reference_function(reference, question)
    if wanted is None:
        return None
    functions = [answer_function(answer, wanted) for answer in answers]
    if not any(functions):
        return Unread("no answer defines a function of its name or number of parameters")
    jail = jail_status()
    if not jail.works:
        return Unread(
            f"no jail works here ({jail.why}): no answer's code was run", jail.fix, "no_jail"
        )
    run = run_functions(wanted, functions, candidate_inputs(wanted.parameters))
    if run.error is not None:
        return Unread(run.error)
    if run.inputs < MIN_INPUTS:
        return Unread(f"the reference function returned on {run.inputs} of the inputs tried")
    shares = tuple((count or 0) / run.inputs for count in run.agreed)
    return BehaviourReading(wanted.name, run.inputs, shares, run.notes)


def with_code_run(judgment: Judgment, found: BehaviourReading | Unread | None) -> Judgment:
    """`judgment` with what running the answers' functions beside a reference function
    found (`code_run`), and, where a pair's verdict could not weigh it, why as a verdict
    part for the page to say: `reference_code_not_run` (code running is off),
    `reference_code_no_jail` (no jail works here) or `reference_code_unread` (no matching
    function, or the reference's own run gave too little)."""
    if found is None:
        return judgment
    update: dict = {"code_run": found.record()}
    parts = judgment.verdict_parts
    if isinstance(found, Unread) and parts is not None and judgment.protocol is Protocol.PAIRWISE:
        update["verdict_parts"] = {**parts, f"reference_code_{found.kind}": 1.0}
    return judgment.model_copy(update=update)
