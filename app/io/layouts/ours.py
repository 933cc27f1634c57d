"""Our own layout: question, answers and the optional id, reference, scenario, criteria, answer
models, label and rubric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from app.catalog.rubrics import Rubric
from app.io.layouts.fields import Fields, type_name
from app.records import MAX_ANSWERS, Label
from models.foundation.datafiles import first_problem


def map_ours(fields: Fields) -> dict[str, Any]:
    question = fields.text("question", what="the question or instruction")
    answers = _ours_answers(fields)
    values: dict[str, Any] = {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "scenario": fields.scenario(),
        "criteria": _ours_criteria(fields),
        "answer_models": _ours_answer_models(fields, len(answers)),
        "label": _ours_label(fields),
        "rubric": _ours_rubric(fields),
    }
    extra = fields.take("metadata")
    if extra is not None:
        if not isinstance(extra, Mapping):
            raise fields.error("metadata", f"expected an object, got {type_name(extra)}")
        fields.extra = dict(extra)
    return values


def _ours_answers(fields: Fields) -> tuple[str, ...]:
    value = fields.take("answers")
    what = f"a list of 1 to {MAX_ANSWERS} answer strings"
    if value is None:
        raise fields.error("answers", f"add an 'answers' field: {what}")
    if isinstance(value, str):  # one text is not taken as one answer: that would switch protocol
        raise fields.error(
            "answers", f'expected {what}, got a string; write ["..."] for one answer'
        )
    if not isinstance(value, (list, tuple)):
        raise fields.error("answers", f"expected {what}, got {type_name(value)}")
    if not 1 <= len(value) <= MAX_ANSWERS:
        raise fields.error(
            "answers", f"expected 1 to {MAX_ANSWERS} answers, got {len(value)}; split the row"
        )
    return tuple(
        fields.check_answer(f"answers[{index}]", answer) for index, answer in enumerate(value)
    )


def _ours_criteria(fields: Fields) -> tuple[str, ...] | None:
    value = fields.take("criteria")
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise fields.error("criteria", f"expected a list of criterion ids, got {type_name(value)}")
    for index, criterion in enumerate(value):
        if not isinstance(criterion, str) or not criterion.strip():
            raise fields.error(
                f"criteria[{index}]", f"expected a criterion id, got {type_name(criterion)}"
            )
    return tuple(criterion.strip() for criterion in value) or None


def _ours_answer_models(fields: Fields, count: int) -> tuple[str | None, ...] | None:
    value = fields.take("answer_models")
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise fields.error("answer_models", f"expected a list, got {type_name(value)}")
    if len(value) != count:
        raise fields.error(
            "answer_models",
            f"name one model per answer ({count}), got {len(value)}; use null for unknown",
        )
    models: list[str | None] = []
    for index, model in enumerate(value):
        if model is not None and not isinstance(model, (str, int)):
            raise fields.error(
                f"answer_models[{index}]", f"expected a string or null, got {type_name(model)}"
            )
        models.append(None if model is None else str(model))
    return tuple(models)


def _ours_label(fields: Fields) -> Label | None:
    value = fields.take("label")
    if value is None:
        return None
    if isinstance(value, str):
        value = {"winner": value}
    if not isinstance(value, Mapping):
        raise fields.error(
            "label", f"expected an object like {{'winner': 'A'}}, got {type_name(value)}"
        )
    value = dict(value)
    if isinstance(value.get("winner"), str):
        winner = value["winner"].strip()
        value["winner"] = winner.lower() if winner.lower() == "tie" else winner.upper()
    try:
        return Label.model_validate(value)
    except ValidationError as exc:
        detail = exc.errors()[0]
        where = ".".join(str(part) for part in detail.get("loc", ()))
        raise fields.error(
            f"label.{where}" if where else "label",
            f"{detail.get('msg')}; use {{'winner': 'A'|'B'|'tie'}} "
            "or {'score': N, 'scale_max': M}",
        ) from None


def _ours_rubric(fields: Fields) -> Rubric | None:
    """A rubric written as in a rubric file (scenarios/rubrics/*.yaml), checked the same way."""
    value = fields.take("rubric")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise fields.error(
            "rubric",
            f"expected an object written like a rubric file (scenarios/rubrics/*.yaml), "
            f"got {type_name(value)}",
        )
    try:
        return Rubric.model_validate(value)
    except ValidationError as exc:
        where, message = first_problem(exc, Rubric)
        raise fields.error(f"rubric.{where}" if where else "rubric", message) from None
