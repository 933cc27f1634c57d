"""Read a judge's raw output into scores, checking ranges and consistency.

The parser takes the last well-formed JSON object in the text (a model that
first echoes an example and then answers is judged on its answer). Anything
out of range, missing or inconsistent raises `ParseFailure` with the reason;
the caller records the row as unparsed with the raw text. No score is ever
invented or repaired.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from app.catalog.scoring import ScoringRule, verdict_from_overall
from app.formats.output_format import VERDICTS, ReplyLayout, answer_keys
from app.records import Protocol

OVERALL_TOLERANCE = 1.0  # stated overall may differ this much from the exact weighted mean


class ParseFailure(ValueError):
    """The output could not be read as a valid, consistent judgment."""


@dataclass(frozen=True)
class ParsedOutput:
    scores: tuple[dict[str, int], ...]  # one per answer, in output order; () without criteria
    stated_overall: tuple[int, ...]  # one per answer (decision first: only a single grade)
    verdict: str | None
    ranking: tuple[int, ...] | None
    feedback: str | None  # None when the layout asks for none


def last_json_object(text: str) -> dict[str, Any]:
    """The last top-level `{...}` in `text` that parses as a non-empty JSON object."""
    # strict=False: a raw newline or tab inside a string (common in model output, and let
    # through by some servers' grammars) does not make the judgment unreadable.
    decoder = json.JSONDecoder(strict=False)
    found: dict[str, Any] | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and value:
            found = value
        position = text.find("{", end)
    if found is None:
        raise ParseFailure("no JSON object found in the output")
    return found


def parse_output(
    text: str,
    protocol: Protocol,
    rule: ScoringRule,
    n_answers: int,
    layout: ReplyLayout | None = None,
) -> ParsedOutput:
    layout = layout or ReplyLayout()
    data = last_json_object(text)
    keys = answer_keys(protocol, n_answers)
    if layout.decision_first:
        return _parse_decision_first(data, protocol, rule, keys, layout)
    scores = _criterion_scores(data, rule, keys)
    if keys:
        overall_block = _field(data, "overall", dict)
        stated = tuple(_stated(overall_block, key, rule) for key in keys)
    else:
        stated = (_whole(data.get("overall"), "overall"),)
    low, high = rule.overall_range
    for key, value, block in zip(keys or ("",), stated, scores):
        where = f"overall.{key}" if key else "overall"
        if not low <= value <= high:
            raise ParseFailure(f"{where} is {value}, outside {low}-{high}")
        exact = rule.overall(block)
        if abs(value - exact) > OVERALL_TOLERANCE:
            raise ParseFailure(
                f"{where} is {value} but the criterion scores give {exact:.2f}: "
                "the overall does not agree with the scores"
            )
    verdict = _verdict(data, stated) if protocol is Protocol.PAIRWISE else None
    ranking = _ranking(data, stated) if protocol is Protocol.MULTI else None
    return ParsedOutput(scores, stated, verdict, ranking, _feedback(data, layout))


def _feedback(data: dict[str, Any], layout: ReplyLayout) -> str | None:
    if not layout.feedback:
        return None
    feedback = data.get("feedback", "")
    if not isinstance(feedback, str):
        raise ParseFailure("feedback is not a string")
    return feedback.strip()


def _criterion_scores(
    data: dict[str, Any], rule: ScoringRule, keys: tuple[str, ...]
) -> tuple[dict[str, int], ...]:
    """Each answer's criterion scores (one block, for a one-answer protocol)."""
    block = _field(data, "scores", dict)
    if not keys:
        return (_scores(block, rule, None),)
    return tuple(_scores(_field(block, key, dict, "scores."), rule, key) for key in keys)


def _parse_decision_first(
    data: dict[str, Any],
    protocol: Protocol,
    rule: ScoringRule,
    keys: tuple[str, ...],
    layout: ReplyLayout,
) -> ParsedOutput:
    """Decision first: the verdict, grade or ranking, then (optionally) the criterion scores,
    which must agree with it."""
    scores = _criterion_scores(data, rule, keys) if layout.criteria else ()
    implied = tuple(rule.rounded_overall(block) for block in scores)
    verdict = ranking = None
    stated: tuple[int, ...] = implied
    if protocol is Protocol.PAIRWISE:
        verdict = data.get("verdict")
        if not isinstance(verdict, str) or verdict.strip() not in VERDICTS:
            raise ParseFailure(f"verdict is {verdict!r}; expected one of {', '.join(VERDICTS)}")
        verdict = verdict.strip()
        if implied and verdict != verdict_from_overall(*implied):
            raise ParseFailure(
                f"verdict {verdict} contradicts the criterion scores (overall A={implied[0]}, "
                f"B={implied[1]})"
            )
    elif protocol is Protocol.MULTI:
        ranking = _ranking(data, implied) if implied else _permutation(data, len(keys))
    else:
        grade = _whole(data.get("overall"), "overall")
        low, high = rule.overall_range
        if not low <= grade <= high:
            raise ParseFailure(f"overall is {grade}, outside {low}-{high}")
        if scores and abs(grade - rule.overall(scores[0])) > OVERALL_TOLERANCE:
            raise ParseFailure(
                f"overall is {grade} but the criterion scores give {rule.overall(scores[0]):.2f}"
            )
        stated = (grade,)
    return ParsedOutput(scores, stated, verdict, ranking, _feedback(data, layout))


def _permutation(data: dict[str, Any], n: int) -> tuple[int, ...]:
    """A ranking with no scores to check it against: each of 1..n once."""
    return _ranking(data, tuple([0] * n))


def _field(data: dict[str, Any], name: str, kind: type, prefix: str = "") -> Any:
    if name not in data:
        raise ParseFailure(f"missing field '{prefix}{name}'")
    value = data[name]
    if not isinstance(value, kind):
        kind_name = {dict: "an object", list: "a list", str: "a string"}.get(kind, kind.__name__)
        raise ParseFailure(f"field '{prefix}{name}' is not {kind_name}")
    return value


def _is_whole(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value == int(value)  # NaN / Infinity are not numbers here


def _whole(value: Any, where: str) -> int:
    if not _is_whole(value):
        raise ParseFailure(f"{where} is {value!r}, not a whole number")
    return int(value)


def _scores(block: dict[str, Any], rule: ScoringRule, key: str | None) -> dict[str, int]:
    prefix = f"scores.{key}." if key else "scores."
    scores: dict[str, int] = {}
    for spec in rule.specs:
        if spec.key not in block:
            raise ParseFailure(f"missing score '{prefix}{spec.key}'")
        value = _whole(block[spec.key], prefix + spec.key)
        if not spec.scale_min <= value <= spec.scale_max:
            raise ParseFailure(
                f"{prefix}{spec.key} is {value}, outside {spec.scale_min}-{spec.scale_max}"
            )
        scores[spec.key] = value
    return scores


def _stated(block: dict[str, Any], key: str, rule: ScoringRule) -> int:
    if key not in block:
        raise ParseFailure(f"missing field 'overall.{key}'")
    return _whole(block[key], f"overall.{key}")


def _verdict(data: dict[str, Any], stated: tuple[int, ...]) -> str:
    verdict = data.get("verdict")
    if not isinstance(verdict, str) or verdict.strip() not in VERDICTS:
        raise ParseFailure(f"verdict is {verdict!r}; expected one of {', '.join(VERDICTS)}")
    verdict = verdict.strip()
    implied = verdict_from_overall(stated[0], stated[1])
    if verdict != implied:
        raise ParseFailure(
            f"verdict {verdict} contradicts the overall scores A={stated[0]}, B={stated[1]}"
        )
    return verdict


def _ranking(data: dict[str, Any], stated: tuple[int, ...]) -> tuple[int, ...]:
    ranking = data.get("ranking")
    n = len(stated)
    if (
        not isinstance(ranking, list)
        or not all(_is_whole(number) for number in ranking)
        or sorted(int(number) for number in ranking) != list(range(1, n + 1))
    ):
        raise ParseFailure(f"ranking is {ranking!r}; expected each of 1..{n} exactly once")
    ranking = [int(number) for number in ranking]
    values = [stated[number - 1] for number in ranking]
    if any(later > earlier for earlier, later in pairwise(values)):
        raise ParseFailure(f"ranking {ranking} does not follow the overall scores {list(stated)}")
    return tuple(ranking)
