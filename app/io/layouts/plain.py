"""Plain layouts: Alpaca/EasyJudge, LLMBar, and pointwise rows with a score on a stated scale."""

from __future__ import annotations

from typing import Any

from app.io.layouts.fields import (
    SCALE_RANGE,
    SECOND_OUTPUT_KEYS,
    Fields,
    to_choice,
    to_number,
    type_name,
)
from app.records import Label


def map_alpaca(fields: Fields) -> dict[str, Any]:
    question = fields.instruction_question()
    answers = [fields.answer("output")]
    for key in SECOND_OUTPUT_KEYS:
        if key in fields.row:
            answers.append(fields.answer(key))
            break
    return {"question": question, "answers": tuple(answers), "reference": fields.reference()}


def map_llmbar(fields: Fields) -> dict[str, Any]:
    if "instruction" in fields.row:
        question = fields.instruction_question()
    else:
        question = fields.text("input", what="the instruction")
        fields.sources["question"] = "input"
    answers = (fields.answer("output_1"), fields.answer("output_2"))
    label = None
    if fields.has("label"):
        value = fields.take("label")
        code = to_choice(value, (1, 2))
        if code is None:
            raise fields.error("label", f"expected 1 or 2 (the better output), got {value!r}")
        label = Label(winner="A" if code == 1 else "B")
    return {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "label": label,
    }


def map_pointwise(fields: Fields) -> dict[str, Any]:
    if "question" in fields.row:
        question = fields.text("question", what="the question")
    else:
        question = fields.instruction_question()
    return {
        "question": question,
        "answers": (fields.answer("response"),),
        "reference": fields.reference(),
        "scenario": fields.scenario(),
        "label": _pointwise_label(fields),
    }


def _pointwise_label(fields: Fields) -> Label | None:
    """`score` on the scale given by `scale_max` or `scale` (5, "1-5" or [1, 5]), if any."""
    if not fields.has("score"):
        return None
    value = fields.take("score")
    score = to_number(value)
    if score is None:
        raise fields.error("score", f"expected a number, got {type_name(value)}")
    return Label(score=score, scale_max=read_scale_max(fields))


def read_scale_max(fields: Fields) -> float | None:
    for key in ("scale_max", "scale"):
        if not fields.has(key):
            continue
        value = fields.take(key)
        if isinstance(value, (list, tuple)) and len(value) == 2:
            value = value[1]
        elif isinstance(value, str) and (match := SCALE_RANGE.match(value)):
            value = match.group(1)
        top = to_number(value)
        if top is None or top <= 0:
            raise fields.error(
                key, f"expected the top of the scale (5, '1-5' or [1, 5]), got {value!r}"
            )
        return top
    return None
