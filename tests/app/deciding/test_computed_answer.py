"""The judge's own answer computed by a program it writes (app/deciding/computed_answer.py),
run in the real jail: a computed result is used, a quoted literal, a failure or a reply that
does not open as code falls back to the written answer."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from app.deciding.computed_answer import (
    PROBE_TOKENS,
    program_result,
    program_text,
    quoted,
)
from app.deciding.own_answer import write_own_answer
from models.backends.base import Generation, Message, SamplingParams
from tests.support.needs import need_jail


@dataclass
class ScriptedBackend:
    """Replies as scripted: the program asked for, else the written answer (the logic around
    a backend; the model's own programs are measured in training/EXPERIMENTS.md)."""

    program: str
    written: str = "It is 24."
    asked: list[int] = field(default_factory=list)

    def generate(self, messages: list[Message], params: SamplingParams) -> Generation:
        self.asked.append(params.max_tokens or 0)
        if "Python program" in messages[-1].content:
            text = self.program[:12] if params.max_tokens == PROBE_TOKENS else self.program
            return Generation(text, completion_tokens=9, finish_reason="stop", mean_logprob=-0.2)
        return Generation(self.written, completion_tokens=4, finish_reason="stop", mean_logprob=-1)


def test_the_code_of_a_reply_is_its_fenced_block_or_the_whole_reply():
    assert program_text("Here:\n```python\nprint(6 * 4 + 9)\n```\nDone.") == "print(6 * 4 + 9)"
    assert program_text("print(2 + 2)") == "print(2 + 2)"


def test_a_printed_literal_is_quoted_knowledge_and_a_computed_value_is_not():
    assert quoted("Canberra", 'print("Canberra")')
    assert not quoted("33", "print(6 * 4 + 9)")
    assert not quoted("x", "this is not python (")


def test_a_program_is_run_in_the_jail_and_only_a_short_computed_result_counts():
    need_jail()
    assert program_result("print(6 * 4 + 9)") == "33"
    date = "import datetime\nprint(datetime.date(1990, 6, 2).strftime('%A'))"
    assert program_result(date) == "Saturday"
    assert program_result('print("Canberra")') is None  # quoted, not computed
    assert program_result("print(1/0)") is None  # fails
    assert program_result("x = 1") is None  # prints nothing
    assert program_result("print('a' * 500)") is None  # text, not a result
    assert program_result("print('word ' * 13)") is None  # over RESULT_CHARS: prose
    assert program_result("print(sorted([95, 2, 57, 21, 34, 82, 17]))") == (
        "[2, 17, 21, 34, 57, 82, 95]"
    )
    assert program_result("import socket; print(socket.gethostbyname('example.com'))") is None


def test_with_compute_the_result_is_the_answer_and_otherwise_the_written_one():
    need_jail()
    backend = ScriptedBackend("```python\nprint(6 * 4 + 9)\n```")
    answer = write_own_answer(backend, "How many pencils? (computed)", judge="t", compute=True)
    assert answer.text == "33" and answer.computed and answer.finished
    assert backend.asked == [PROBE_TOKENS, 96]  # the opening, then the program
    # the memo holds it per compute: the written answer is kept apart
    plain = write_own_answer(backend, "How many pencils? (computed)", judge="t")
    assert plain.text == "It is 24." and not plain.computed


@pytest.mark.parametrize(
    "program",
    [
        "Sure, here's a program: print(1)",
        "```python\nprint('Canberra')\n```",
        "```python\n1/0\n```",
    ],
)
def test_no_computed_result_falls_back_to_the_written_answer(program: str):
    need_jail()
    backend = ScriptedBackend(program)
    answer = write_own_answer(backend, f"A request ({program})", judge="t", compute=True)
    assert answer.text == "It is 24." and not answer.computed
    if program.startswith("Sure"):  # given up after its opening: no program written
        assert backend.asked[:2] == [PROBE_TOKENS, 96] and len(backend.asked) == 2


def test_without_a_written_answer_only_a_computed_one_is_given():
    """A record that weighs only computed answers: no written answer is paid for."""
    need_jail()
    backend = ScriptedBackend("Sure, here's a program: print(1)")
    none = write_own_answer(
        backend, "Write a poem (unwritten)", judge="t", compute=True, written=False
    )
    assert none.text == "" and not none.computed
    assert backend.asked == [PROBE_TOKENS]  # the opening alone
    # a later run that shows it writes it then
    shown = write_own_answer(backend, "Write a poem (unwritten)", judge="t", compute=True)
    assert shown.text == "It is 24."
    computing = ScriptedBackend("```python\nprint(6 * 4 + 9)\n```")
    found = write_own_answer(
        computing, "Pencils (unwritten)", judge="t", compute=True, written=False
    )
    assert found.text == "33" and found.computed


def test_a_whole_number_printed_as_a_float_is_read_as_people_write_it():
    from app.deciding.computed_answer import plain_number

    assert plain_number("6.0") == "6" and plain_number("-54.00") == "-54"
    assert plain_number("6.5") == "6.5" and plain_number("[1.0, 2.0]") == "[1.0, 2.0]"
    assert plain_number("Tuesday") == "Tuesday" and plain_number("1.0.0") == "1.0.0"
