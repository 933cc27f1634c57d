"""The judge's own answer computed by a program it writes, run in the jail.

A 1.5B model answers "A pack holds 6 pencils. How many pencils are there in 4 full packs and
9 loose pencils?" with 24 and cannot tell the weekday of a date, yet asked for a program it
writes `print(6 * 4 + 9)` and `datetime.date(1990, 6, 2).strftime("%A")`. On the
reference-decided training requests its programs' results were right on every arithmetic,
weekday, percent, unit and sorting request where its written answers were right on almost
none (training/EXPERIMENTS.md, session 53). So where a program can compute the answer the
judge's own answer is that program's result.

Asked for a program, the model first says whether it writes one: a reply that does not open
as code (`CODE_OPENINGS`, read from its first `PROBE_TOKENS` tokens) is given up there, at
little cost, and the written answer is used. A program that fails, prints nothing, prints
more than `RESULT_CHARS`, or prints only a literal it quotes (knowledge, not a computation:
`print("Canberra")`) gives no computed answer either. The program runs in the jail that runs
answers' code (app/code_run/jail.py), so only where the run setting lets code run and a jail
works here.
"""

from __future__ import annotations

import ast
import re
import sys
from typing import Any

from models.backends.base import Message, SamplingParams
from models.readings import SYSTEM_PROMPT

PROGRAM_ASK = (
    "Write a short Python program that computes and prints the answer to this request "
    "(print only the result; no input()). Reply with the code alone.\n\n"
)
PROGRAM_TOKENS = 96  # the cap on the program written
PROBE_TOKENS = 4  # read first: a reply that does not open as code is given up
CODE_OPENINGS = ("```", "import ", "from ", "print(", "def ")
# a longer print is text the program holds, not a result (the reference-decided training
# requests' computed results are at most 28 characters; 121 was an Auto-J request's prose)
RESULT_CHARS = 60
PROGRAM_SECONDS = 2.0
FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)(?:```|$)", re.S)


def program_messages(question: str) -> list[Message]:
    return [Message("system", SYSTEM_PROMPT), Message("user", PROGRAM_ASK + question)]


def program_text(reply: str) -> str:
    """The code of a reply: its first fenced block, or the whole reply."""
    fenced = FENCE.search(reply)
    return (fenced.group(1) if fenced else reply).strip()


def quoted(result: str, code: str) -> bool:
    """Whether `result` is only a constant the code holds (it printed what it already knew)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    constants = {
        str(node.value).strip() for node in ast.walk(tree) if isinstance(node, ast.Constant)
    }
    return result in constants


def program_result(code: str) -> str | None:
    """What `code` prints, run in the jail; None where it fails, times out, prints nothing,
    too much, or a constant it quotes."""
    from app.code_run.jail import JailUnavailable, jailed_run

    try:
        done = jailed_run(
            [sys.executable, "-I", "-c", code],
            stdin="",
            timeout=PROGRAM_SECONDS,
            read_bytes=RESULT_CHARS + 1,
        )
    except (OSError, JailUnavailable):
        return None
    said = done.out.strip()
    if done.returncode != 0 or not said or len(said) > RESULT_CHARS or quoted(said, code):
        return None
    return plain_number(said)


WHOLE_FLOAT = re.compile(r"-?\d+\.0+")


def plain_number(result: str) -> str:
    """A whole number printed as a float ("6.0": Python's `120 * 5 / 100`) as people write it
    ("6"): an answer that says 6 states the result; elsewhere `result` as printed."""
    return result.split(".")[0] if WHOLE_FLOAT.fullmatch(result) else result


def computed_answer(backend: Any, question: str) -> tuple[str, Any] | None:
    """The result of the program the judge writes for `question`, and the generation that
    wrote it; None where it writes none (its reply does not open as code) or its program
    gives no result (`program_result`)."""
    messages = program_messages(question)
    opening = backend.generate(messages, SamplingParams(temperature=0.0, max_tokens=PROBE_TOKENS))
    if not opening.text.lstrip().startswith(CODE_OPENINGS):
        return None
    written = backend.generate(messages, SamplingParams(temperature=0.0, max_tokens=PROGRAM_TOKENS))
    result = program_result(program_text(written.text))
    return None if result is None else (result, written)
