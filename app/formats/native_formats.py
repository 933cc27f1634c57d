"""Reply formats: PocketJudge's JSON, and the native formats of other judge models.

A template names its reply format (`reply_format:` in app/prompt_templates/*.yaml).
`pocketjudge` replies are JSON objects, constrained by a grammar and read by
app/formats/parsing.py. A native format is the free text a judge model was fine-tuned
to write (JudgeLM, PandaLM, Auto-J, Prometheus, EasyJudge); this module says,
for each, which protocols it has a parser for (app/formats/native_parsers.py), the
scale of its grades, and whether its prompt shows the criteria PocketJudge
resolved for the row or the fixed criteria the model was trained with.

Free text has no JSON values to read probabilities from, so score mode cannot
judge with a native format: the service judges those in generate mode
(app/judging/settled_run.py `native_generate`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from app.formats import native_parsers as parsers
from app.formats.native_parsers import NativeReply
from app.formats.parsing import ParseFailure, last_json_object
from app.records import Protocol

ReplyFormat = Literal["pocketjudge", "judgelm", "pandalm", "autoj", "prometheus", "easyjudge"]
JSON_FORMAT = "pocketjudge"

Parser = Callable[[str, int], NativeReply]  # (reply text, answers shown) -> reply


def _fixed(parser: Callable[[str], NativeReply]) -> Parser:
    """A parser for a protocol whose answer count the format fixes."""
    return lambda text, _count: parser(text)


@dataclass(frozen=True)
class NativeFormat:
    name: str
    parsers: Mapping[Protocol, Parser]
    scale: tuple[int, int] | None  # the scale of its grades; None: it gives verdicts only
    # True: the prompt shows the row's scenario and criteria (or rubric); False: the model
    # judges by the fixed criteria it was trained with, so the judgment names none
    uses_criteria: bool


NATIVE_FORMATS: dict[str, NativeFormat] = {
    "judgelm": NativeFormat(
        "judgelm",
        {
            Protocol.PAIRWISE: _fixed(parsers.judgelm_pairwise),
            Protocol.MULTI: lambda text, count: parsers.judgelm_scores(text, count),
            Protocol.ANCHORED: _fixed(parsers.judgelm_anchored),
        },
        scale=parsers.TEN_SCALE,
        uses_criteria=False,
    ),
    "pandalm": NativeFormat(
        "pandalm",
        {Protocol.PAIRWISE: _fixed(parsers.pandalm_pairwise)},
        scale=None,
        uses_criteria=False,
    ),
    "autoj": NativeFormat(
        "autoj",
        {
            Protocol.PAIRWISE: _fixed(parsers.autoj_pairwise),
            Protocol.SINGLE: _fixed(parsers.autoj_single),
        },
        scale=parsers.TEN_SCALE,
        uses_criteria=False,
    ),
    "prometheus": NativeFormat(
        "prometheus",
        {
            Protocol.SINGLE: _fixed(parsers.prometheus_absolute),
            Protocol.ANCHORED: _fixed(parsers.prometheus_absolute),
            Protocol.PAIRWISE: _fixed(parsers.prometheus_relative),
        },
        scale=parsers.PROMETHEUS_SCALE,
        uses_criteria=True,
    ),
    "easyjudge": NativeFormat(
        "easyjudge",
        {
            Protocol.SINGLE: _fixed(parsers.easyjudge_single),
            Protocol.ANCHORED: _fixed(parsers.easyjudge_single),
            Protocol.PAIRWISE: _fixed(parsers.easyjudge_pairwise),
        },
        scale=parsers.TEN_SCALE,
        uses_criteria=True,
    ),
}
assert set(NATIVE_FORMATS) | {JSON_FORMAT} == set(get_args(ReplyFormat))


def native_format(name: str) -> NativeFormat:
    """The native format `name` (a template's `reply_format`, validated on load)."""
    return NATIVE_FORMATS[name]


def parse_native(name: str, text: str, protocol: Protocol, n_answers: int) -> NativeReply:
    """The reply `text` in native format `name`; raises ParseFailure with the reason."""
    parser = native_format(name).parsers.get(protocol)
    if parser is None:  # templates are checked on load: a bug, not a reply to record
        raise ValueError(f"the {name} reply format has no parser for {protocol.value}")
    return parser(text, n_answers)


def reply_feedback(name: str, text: str, protocol: Protocol, n_answers: int) -> str | None:
    """The feedback a reply in format `name` holds, or None. A critique's decision was fixed
    when it was asked, so only its feedback is read: a reply whose scores do not add up
    still explains the decision."""
    try:
        if name != JSON_FORMAT:
            return parse_native(name, text, protocol, n_answers).feedback
        feedback = last_json_object(text).get("feedback")
    except ParseFailure:
        return None
    return (feedback.strip() or None) if isinstance(feedback, str) else None
