"""Native reply parsers against a table of realistic replies (tests/app/formats/native_cases.json).

Each case names a reply format, a protocol, the number of answers shown and the
raw reply, and says what must come out: the grades (answers in the order
shown), the verdict ("A" is the answer shown first), EasyJudge's dimension
scores and the feedback; or that the reply is unparsed, with a text the reason
contains.

Documented behaviour the table pins down:
- JudgeLM and PandaLM are read from the first line only; a decision on a later
  line (or after an echoed marker) leaves the row unparsed;
- Auto-J, Prometheus and EasyJudge take the last well-formed decision, so an
  echoed instruction ("Response 1 / Response 2 / Tie", "[RESULT] (A or B)", a
  quoted "Rating: [[5]]", a format line with placeholders) is never the answer,
  and of two explicit final decisions the last one counts;
- curly quotes, extra whitespace and markdown bold around the decision are read;
- a missing decision, a grade outside the format's scale, a half point where the
  format wants whole numbers, and an EasyJudge result that contradicts its own
  overall scores are unparsed, never guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.formats.native_formats import NATIVE_FORMATS, native_format, parse_native
from app.formats.native_parsers import NativeReply
from app.formats.parsing import ParseFailure
from app.formats.prompts import get_template, template_names
from app.records import Protocol

CASES_FILE = Path(__file__).parent / "native_cases.json"
CASES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))


def run_case(case: dict[str, Any]) -> NativeReply:
    return parse_native(case["format"], case["raw"], Protocol(case["protocol"]), case["n_answers"])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_native_reply(case: dict[str, Any]) -> None:
    expected = case["expected"]
    if expected["status"] == "unparsed":
        with pytest.raises(ParseFailure) as caught:
            run_case(case)
        assert expected["reason"] in str(caught.value)
        return
    reply = run_case(case)
    if "grades" in expected:
        assert list(reply.grades) == expected["grades"]
    if "verdict" in expected:
        assert reply.verdict == expected["verdict"]
    if "dimensions" in expected:
        assert [dict(d) for d in reply.dimensions] == expected["dimensions"]
    if "feedback" in expected:
        assert reply.feedback == expected["feedback"]


def test_every_format_and_protocol_has_cases() -> None:
    covered = {(case["format"], case["protocol"]) for case in CASES}
    for name, spec in NATIVE_FORMATS.items():
        for protocol in spec.parsers:
            assert (name, protocol.value) in covered, (name, protocol.value)
    for name in NATIVE_FORMATS:
        outcomes = {case["expected"]["status"] for case in CASES if case["format"] == name}
        assert outcomes == {"ok", "unparsed"}, name


def test_case_names_are_unique() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))


def test_every_native_format_has_a_template_with_all_its_protocols() -> None:
    templates = {get_template(name).reply_format: get_template(name) for name in template_names()}
    for name, spec in NATIVE_FORMATS.items():
        assert name in templates, f"no template writes the {name} format"
        assert set(templates[name].protocols) == set(spec.parsers)
        assert templates[name].native


def test_scales() -> None:
    assert native_format("prometheus").scale == (1, 5)
    assert native_format("judgelm").scale == (1, 10)
    assert native_format("autoj").scale == (1, 10)
    assert native_format("easyjudge").scale == (1, 10)
    assert native_format("pandalm").scale is None  # verdicts only


def test_a_protocol_without_parser_is_a_bug_not_an_unparsed_row() -> None:
    with pytest.raises(ValueError, match="no parser for single") as caught:
        parse_native("pandalm", "1", Protocol.SINGLE, 1)
    assert not isinstance(caught.value, ParseFailure)
