"""What the page says of a reference function: how the answers' functions ran beside it in
the jail, or why none ran and what to do (app/code_run/behaviour.py)."""

from __future__ import annotations

from typing import Any

CODE_UNREAD = {  # training/EXPERIMENTS.md, session 32: 84 held-out reference-decided pairs
    "reference_code_not_run": "The reference is a Python function, but code running is off, so "
    "the verdict reads its text, which cannot tell a buggy function from a right one (held "
    "out, verdicts from the text alone were right on 9 of 15 code pairs). Turn on running code "
    "answers against the reference function to judge them by what they do.",
    "reference_code_no_jail": "The reference is a Python function, but no jail to run the "
    "answers' code in works on this machine, so none of it ran and the verdict reads its text, "
    "which cannot tell a buggy function from a right one.",
    "reference_code_unread": "The reference is a Python function, but no answer's function "
    "could be run beside it, so the verdict reads its text alone.",
}


def code_unread_note(parts: dict[str, float]) -> str:
    """Why a reference function's behaviour did not reach the verdict ("" where it did or
    the reference is no function)."""
    return "".join(f" {text}" for name, text in CODE_UNREAD.items() if parts.get(name))


def behaviour_note(parts: dict[str, float]) -> str:
    """What running the answers' functions beside the reference's found, in words ("" where
    no code was run)."""
    lead = parts.get("reference_behaviour_difference")
    if lead is None:
        return ""
    inputs = int(parts.get("reference_behaviour_inputs", 0))
    ran = f" Each answer's function was run beside the reference function in the jail on {inputs}"
    ran += " inputs"
    if not lead:
        return f"{ran}: they gave its result equally often."
    ahead = "A" if lead > 0 else "B"
    return f"{ran}: answer {ahead}'s gave its result on {abs(lead):.0%} more of them."


def code_run_details(code_run: dict[str, Any] | None, labels: list[str]) -> str:
    """How each answer's function ran beside a reference function, or why none ran and what
    to do, in words ("" where there is nothing to add)."""
    if not code_run:
        return ""
    if "unread" in code_run:
        fix = code_run.get("fix")
        return f"Code not run: {code_run['unread']}" + (f"; {fix}." if fix else ".")
    said = [
        f"answer {label}'s function {note}"
        for label, note in zip(labels, code_run.get("notes", ()))
        if note
    ]
    return ("In the jail: " + "; ".join(said) + ".") if said else ""
