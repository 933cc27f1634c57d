"""Parsers of other judge models' native replies: raw text in, a `NativeReply` out.

Each parser is a pure function of the reply text. It reads the decision where
the family's format puts it: JudgeLM and PandaLM on the first line only;
Auto-J, Prometheus and EasyJudge from the last well-formed decision phrase, so
an instruction or an example the model echoes before answering is not read as
its answer ("Response 1 / Response 2 / Tie", "[RESULT] (A or B)" and a quoted
"Rating: [[5]]" are never decisions). The value is checked against the
format's scale; anything missing, out of range or contradictory raises
`ParseFailure` with the reason, and the caller records the row as unparsed
with its raw text. Nothing is guessed or repaired.

Tolerated everywhere: curly quotes, extra whitespace, and markdown bold or
italics around the decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.formats.parsing import ParseFailure

TEN_SCALE = (1, 10)  # JudgeLM, Auto-J (single), EasyJudge
PROMETHEUS_SCALE = (1, 5)

_NUMBER = r"[+-]?\d+(?:\.\d+)?(?!\d|\.\d)"  # a whole number or a decimal, never a prefix
_DECOR = r"[\s*_`\"'({\[]*"  # markdown, quotes or brackets a model may put before a decision
# Same-length replacements (character positions stay those of the raw text).
_PLAIN = str.maketrans(
    {"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " "}
)


@dataclass(frozen=True)
class NativeReply:
    """What a native reply says, answers in the order the prompt showed them."""

    grades: tuple[float, ...] = ()  # one per answer shown, on the format's scale
    verdict: str | None = None  # pairwise: "A" (the answer shown first), "B" or "tie"
    # EasyJudge: per answer shown, the score of each dimension it named (overall left out)
    dimensions: tuple[dict[str, int], ...] = ()
    feedback: str | None = None


def _plain(text: str) -> str:
    return text.translate(_PLAIN)


def _value(text: str, scale: tuple[int, int], where: str, *, whole: bool = True) -> float:
    number = float(text)
    if whole and not number.is_integer():
        raise ParseFailure(f"{where} is {text}, not a whole number")
    low, high = scale
    if not low <= number <= high:
        raise ParseFailure(f"{where} is {text}, outside {low}-{high}")
    return int(number) if number.is_integer() else number


def _first_line(text: str) -> tuple[str, str]:
    """The first non-empty line (quotes made plain, markdown around it removed) and the
    rest of the reply as written."""
    stripped = text.strip()
    if not stripped:
        raise ParseFailure("the reply is empty")
    first, _, rest = stripped.partition("\n")
    return _plain(first).strip().strip("*_`#").strip(), rest.strip()


def _before(text: str, end: int, start: int = 0) -> str | None:
    """The reply from `start` to its decision at `end`, without the markdown that opened
    the decision."""
    return text[start:end].strip().rstrip("*_").strip() or None


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(_plain(text)))
    return matches[-1] if matches else None


def _verdict_of(first: float, second: float) -> str:
    return "A" if first > second else "B" if second > first else "tie"


# -- JudgeLM ---------------------------------------------------------------------

_SCORE_LINE = re.compile(rf"{_NUMBER}(?:(?:\s*,\s*|\s+){_NUMBER})*")


def judgelm_scores(text: str, count: int) -> NativeReply:
    """JudgeLM: the first line holds `count` scores 1-10 ("8 6" or "8, 6"), one per
    assistant in order; the explanation follows. Decimals ("8.5") are JudgeLM's too."""
    first, rest = _first_line(text)
    if not _SCORE_LINE.fullmatch(first):
        raise ParseFailure(f"the first line {first[:80]!r} is not {count} scores")
    values = re.findall(_NUMBER, first)
    if len(values) != count:
        raise ParseFailure(
            f"the first line holds {len(values)} score(s); expected {count}, one per answer"
        )
    grades = tuple(
        _value(value, TEN_SCALE, f"the score of assistant {number}", whole=False)
        for number, value in enumerate(values, start=1)
    )
    return NativeReply(grades=grades, feedback=rest or None)


def judgelm_pairwise(text: str) -> NativeReply:
    """Two scores; the higher wins, equal scores tie."""
    reply = judgelm_scores(text, 2)
    return NativeReply(reply.grades, _verdict_of(*reply.grades), feedback=reply.feedback)


def judgelm_anchored(text: str) -> NativeReply:
    """JudgeLM grading one answer: the reference is shown as assistant 1 (a full 10 by
    construction) and the answer as assistant 2; the second score is the grade."""
    reply = judgelm_scores(text, 2)
    return NativeReply(reply.grades[1:], feedback=reply.feedback)


# -- PandaLM ---------------------------------------------------------------------

_PANDALM = {"1": "A", "2": "B", "tie": "tie"}
_PANDALM_REASON = re.compile(
    r"(?:#+\s*)?Reason\s*:\s*(.*?)(?=\n\s*(?:#+\s*)?Reference\s*:|\Z)", re.S | re.I
)
_PANDALM_REFERENCE = re.compile(r"\n?\s*(?:#+\s*)?Reference\s*:.*\Z", re.S | re.I)


def pandalm_pairwise(text: str) -> NativeReply:
    """PandaLM: the first line is "1", "2" or "Tie"; then "Reason: ..." (and a
    reference answer of its own, which is not kept)."""
    first, rest = _first_line(text)
    decision = first.rstrip(".").strip().lower()
    if decision not in _PANDALM:
        raise ParseFailure(f"the first line {first[:80]!r} is not 1, 2 or Tie")
    reason = _PANDALM_REASON.search(rest)
    feedback = reason.group(1).strip() if reason else _PANDALM_REFERENCE.sub("", rest).strip()
    return NativeReply(verdict=_PANDALM[decision], feedback=feedback or None)


# -- Auto-J ----------------------------------------------------------------------

# "final decision is Response 1", not the instruction's "Response 1 / Response 2 / Tie".
_AUTOJ_DECISION = re.compile(
    rf"final\s+decision\s+is\s*:?{_DECOR}(response\s*1|response\s*2|tie)\b(?!\s*/)(?!\s+or\b)",
    re.I,
)
_AUTOJ_DECISIONS = {"response1": "A", "response2": "B", "tie": "tie"}
# "Rating: [[7]]", not the quoted example "Rating: [[5]]" of the instructions.
_AUTOJ_RATING = re.compile(rf"(?<![\"'])Rating\s*:\s*[*_]*\s*\[\[\s*({_NUMBER})\s*\]\]", re.I)


def autoj_pairwise(text: str) -> NativeReply:
    """Auto-J: the last "So, the final decision is Response 1 / Response 2 / Tie" phrase
    decides; the whole reply is its critique."""
    match = _last(_AUTOJ_DECISION, text)
    if match is None:
        raise ParseFailure(
            "no final decision ('So, the final decision is Response 1', 'Response 2' or 'Tie')"
        )
    decision = re.sub(r"\s+", "", match.group(1).lower())
    return NativeReply(verdict=_AUTOJ_DECISIONS[decision], feedback=text.strip())


def autoj_single(text: str) -> NativeReply:
    """Auto-J: critiques, then "Rating: [[N]]" with N 1-10 (the last one decides)."""
    match = _last(_AUTOJ_RATING, text)
    if match is None:
        raise ParseFailure("no rating ('Rating: [[N]]' with N from 1 to 10)")
    grade = _value(match.group(1), TEN_SCALE, "the rating")
    return NativeReply(grades=(grade,), feedback=_before(text, match.start()))


# -- Prometheus ------------------------------------------------------------------

_RESULT = r"(?i:\[RESULT\])\s*[:\-]?"
_PROMETHEUS_GRADE = re.compile(rf"{_RESULT}{_DECOR}({_NUMBER})(?!\s*(?:-|to)\s*\d)")
# "[RESULT] A", not the instruction's "[RESULT] (A or B)".
_PROMETHEUS_CHOICE = re.compile(rf"{_RESULT}{_DECOR}(?i:response\s+)?([AB])\b(?!\s+or\b)")
_FEEDBACK_LABEL = re.compile(r"^[ \t]*(?:#+\s*)?[*_]*Feedback[*_]*\s*:[*_]*\s*", re.I | re.M)


def _prometheus_feedback(text: str, end: int) -> str | None:
    """The text between the last "Feedback:" that opens a line and the result."""
    labels = list(_FEEDBACK_LABEL.finditer(text, 0, end))
    return _before(text, end, labels[-1].end() if labels else 0)


def prometheus_absolute(text: str) -> NativeReply:
    """Prometheus absolute grading: "Feedback: ... [RESULT] N", N from 1 to 5."""
    match = _last(_PROMETHEUS_GRADE, text)
    if match is None:
        raise ParseFailure("no result ('[RESULT] N' with N from 1 to 5)")
    grade = _value(match.group(1), PROMETHEUS_SCALE, "the result")
    return NativeReply(grades=(grade,), feedback=_prometheus_feedback(text, match.start()))


def prometheus_relative(text: str) -> NativeReply:
    """Prometheus relative grading: "Feedback: ... [RESULT] A" or "... [RESULT] B" (it
    has no tie)."""
    match = _last(_PROMETHEUS_CHOICE, text)
    if match is None:
        raise ParseFailure("no result ('[RESULT] A' or '[RESULT] B')")
    return NativeReply(verdict=match.group(1), feedback=_prometheus_feedback(text, match.start()))


# -- EasyJudge -------------------------------------------------------------------

_EJ_BLOCK = re.compile(
    r"@{2,}\s*\{?\s*response\s+([AB])\s*:\s*Scores\s+per\s+dimension\s*:\s*[\[{]([^\]}]*)[\]}]",
    re.I,
)
_EJ_DIMENSIONS = re.compile(r"@{2,}\s*Dimension\s+Scores\s*:\s*\{([^}]*)\}", re.I)
_EJ_PAIR = re.compile(rf"['\"]?\s*([^'\":,\[\]{{}}]+?)\s*['\"]?\s*:\s*({_NUMBER})")
_EJ_RESULT = re.compile(rf"#{{2,}}\s*Final\s+Result\s*:{_DECOR}(A|B|Tie)\b(?!\s+or\b)", re.I)
_EJ_GRADE = re.compile(rf"#{{2,}}\s*Overall\s+Score\s*:{_DECOR}({_NUMBER})", re.I)
_EJ_FEEDBACK = re.compile(r"&{2,}\s*Detailed\s+Evaluation\s+Feedback\s*:\s*", re.I)
_OVERALL = "overall score"


def _dimension_scores(body: str) -> dict[str, str] | None:
    """Name -> score text of one score dictionary; None when it has no numeric overall
    (an echoed template such as "['Dimension One': Score, ...]")."""
    pairs = {" ".join(name.split()): value for name, value in _EJ_PAIR.findall(body)}
    if not any(name.lower() == _OVERALL for name in pairs):
        return None
    return pairs


def _checked_dimensions(pairs: dict[str, str], where: str) -> tuple[dict[str, int], int]:
    """The dimension scores and the overall, each a whole number 1-10."""
    dimensions: dict[str, int] = {}
    overall = 0
    for name, value in pairs.items():
        score = int(_value(value, TEN_SCALE, f"{where} '{name}'"))
        if name.lower() == _OVERALL:
            overall = score
        else:
            dimensions[name] = score
    return dimensions, overall


def _easyjudge_feedback(text: str) -> str | None:
    match = _last(_EJ_FEEDBACK, text)
    if match is None:
        return None
    feedback = text[match.end() :].strip()
    feedback = re.sub(r"\*{3,}\s*\Z", "", feedback).strip()  # the closing ***
    if feedback.startswith("{") and feedback.endswith("}"):
        feedback = feedback[1:-1].strip()
    return feedback or None


def easyjudge_pairwise(text: str) -> NativeReply:
    """EasyJudge: "@@@{response A: Scores per dimension: [...]}@@@{response B: ...}
    ###Final Result: A|B|Tie&&&Detailed Evaluation Feedback: ...***". The last result
    decides and must agree with the two 'Overall Score' values."""
    blocks: dict[str, dict[str, str]] = {}
    for match in _EJ_BLOCK.finditer(_plain(text)):
        pairs = _dimension_scores(match.group(2))
        if pairs is not None:
            blocks[match.group(1).upper()] = pairs
    for label in ("A", "B"):
        if label not in blocks:
            raise ParseFailure(f"no scores for response {label} ('@@@{{response {label}: ...}}')")
    (dims_a, overall_a), (dims_b, overall_b) = (
        _checked_dimensions(blocks[label], f"response {label}") for label in ("A", "B")
    )
    result = _last(_EJ_RESULT, text)
    if result is None:
        raise ParseFailure("no final result ('###Final Result: A', 'B' or 'Tie')")
    verdict = result.group(1).upper() if result.group(1).lower() != "tie" else "tie"
    if verdict != _verdict_of(overall_a, overall_b):
        raise ParseFailure(
            f"the final result {verdict} contradicts the overall scores "
            f"A={overall_a}, B={overall_b}"
        )
    return NativeReply(
        grades=(overall_a, overall_b),
        verdict=verdict,
        dimensions=(dims_a, dims_b),
        feedback=_easyjudge_feedback(text),
    )


def easyjudge_single(text: str) -> NativeReply:
    """EasyJudge: "@@@Dimension Scores: {...}###Overall Score: N&&&Detailed Evaluation
    Feedback: ...***". The last overall score decides and must equal the dictionary's."""
    blocks = [
        pairs
        for match in _EJ_DIMENSIONS.finditer(_plain(text))
        if (pairs := _dimension_scores(match.group(1))) is not None
    ]
    if not blocks:
        raise ParseFailure("no dimension scores ('@@@Dimension Scores: {...}')")
    dimensions, stated = _checked_dimensions(blocks[-1], "the dimension")
    match = _last(_EJ_GRADE, text)
    if match is None:
        raise ParseFailure("no overall score ('###Overall Score: N' with N from 1 to 10)")
    grade = int(_value(match.group(1), TEN_SCALE, "the overall score"))
    if grade != stated:
        raise ParseFailure(
            f"the overall score {grade} differs from the dimension scores' 'Overall Score' {stated}"
        )
    return NativeReply(
        grades=(grade,), dimensions=(dimensions,), feedback=_easyjudge_feedback(text)
    )
