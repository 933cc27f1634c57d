"""Recognise the field layout of one input row and map it to a JudgeItem.

Judge data comes in many shapes (our own, Alpaca/EasyJudge, JudgeLM, PandaLM,
Auto-J, LLMBar, Prometheus, plain pointwise scores). The layout is detected per row from
the keys present, so one file may mix layouts. Every field that the mapping does
not consume is kept in `item.metadata` (unknown fields pass through), together
with `metadata["layout"]`.

Label sources that a `Label` cannot hold in full (JudgeLM's two scores,
PandaLM's three annotator votes, Prometheus's three GPT-4 grades) are turned into
a label *and* left in the metadata, so meta-evaluation can still see the raw votes.

Every problem raises `InputError(line, field, message)` naming the exact field
as written in the row (`answers[1]` is the second element, 0-based as in JSON
paths; `response 2`; `question`) and saying what to do about it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from app.io.layouts.fields import ANSWER_BODY, ID_KEYS, UNKNOWN, Fields, id_text, type_name
from app.io.layouts.judge_sets import map_autoj_pairwise, map_autoj_single, map_judgelm, map_pandalm
from app.io.layouts.ours import map_ours
from app.io.layouts.plain import map_alpaca, map_llmbar, map_pointwise
from app.io.layouts.prometheus import map_prometheus, prometheus_id
from app.io.prometheus import is_prompt
from app.records import JudgeItem
from models.foundation.errors import InputError

# what importers take from here (tests also read _RULES)
__all__ = [
    "ID_KEYS",
    "LAYOUTS",
    "LAYOUT_RECORDS",
    "UNKNOWN",
    "Layout",
    "detect_layout",
    "row_id",
    "to_item",
    "type_name",
]


def detect_layout(row: Mapping[str, Any]) -> str:
    """Name the layout of one row from its keys; `UNKNOWN` when none fits.

    Every layout's detection rules (`Layout.rules`) are tried together, the most
    specific key sets first (lowest rank). A row that carries only part of a layout
    (say `answers` without `question`) is still given that layout, so the error that
    follows can name the missing field.
    """
    for _, rule, name in _RULES:
        if rule(row):
            return name
    return UNKNOWN


def to_item(row: Mapping[str, Any], line: int) -> JudgeItem:
    """Map one row (a decoded JSON object) to a JudgeItem, or raise InputError."""
    if not isinstance(row, Mapping):
        raise InputError(line, "", f"expected a JSON object, got {type_name(row)}")
    layout = detect_layout(row)
    if layout == UNKNOWN:
        raise InputError(line, "", _unknown_layout_message(row))
    fields = Fields(row, line)
    record = LAYOUT_RECORDS[layout]
    values = record.mapper(fields)
    item_id = (record.row_id and record.row_id(row)) or fields.item_id()
    metadata = {**fields.leftover(), "layout": layout}
    try:
        return JudgeItem(id=item_id, metadata=metadata, **values)
    except ValidationError as exc:
        raise fields.from_validation(exc) from None


def row_id(row: Mapping[str, Any] | None, line: int) -> str:
    """The id a row would get, without validating anything (never raises)."""
    if isinstance(row, Mapping):
        layout = LAYOUT_RECORDS.get(detect_layout(row))
        own = layout.row_id(row) if layout is not None and layout.row_id is not None else None
        if own:
            return own
        for key in ID_KEYS:
            value = row.get(key)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                text = id_text(value)
                if text:
                    return text
    return f"row-{line}"


Rule = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Layout:
    """One input layout: its name, its keys (as the "unrecognised layout" error and the app
    show them), how a row is recognised (rank, test: lower ranks are tried first, across
    layouts) and how a row becomes a JudgeItem's fields."""

    name: str
    keys: str
    rules: tuple[tuple[int, Rule], ...]
    mapper: Callable[[Fields], dict[str, Any]]
    # the row's id when the layout makes its own (else the first of ID_KEYS, else row-N)
    row_id: Callable[[Mapping[str, Any]], str | None] | None = None


def _has(*keys: str) -> Rule:
    return lambda row: any(key in row for key in keys)


LAYOUT_RECORDS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout(
            "ours",
            "{question, answers[, id, reference, scenario, criteria, answer_models, label, "
            "rubric]}",
            ((6, _has("answers")), (8, _has("question"))),
            map_ours,
        ),
        Layout(
            "alpaca",
            "{instruction[, input], output[, output_2 | output2 | output_b, reference]}",
            ((9, _has("instruction", "output")),),
            map_alpaca,
        ),
        Layout(
            "judgelm",
            "{question_body, answer1_body, answer2_body[, answer3..6_body, reference, score]}",
            (
                (
                    2,
                    lambda row: (
                        "question_body" in row or any(ANSWER_BODY.match(str(key)) for key in row)
                    ),
                ),
            ),
            map_judgelm,
        ),
        Layout(
            "pandalm",
            "{instruction[, input], response1, response2[, annotator1..3]}",
            ((4, _has("response1", "response2", "annotator1")),),
            map_pandalm,
        ),
        Layout(
            "autoj_pairwise",
            "{prompt, 'response 1', 'response 2'[, label, scenario, id]}",
            ((3, _has("response 1", "response 2")), (11, _has("prompt"))),
            map_autoj_pairwise,
        ),
        Layout(
            "autoj_single",
            "{usrmsg[, target_output, pred_score, scenario]}",
            ((1, _has("usrmsg")),),
            map_autoj_single,
        ),
        Layout(
            "llmbar",
            "{input, output_1, output_2[, label]}",
            ((5, _has("output_1")), (10, lambda row: "input" in row and "output_2" in row)),
            map_llmbar,
        ),
        Layout(
            "pointwise",
            "{question | instruction, response[, reference, score, scale_max | scale]}",
            ((7, lambda row: "response" in row and ("question" in row or "instruction" in row)),),
            map_pointwise,
        ),
        Layout(
            "prometheus",
            "{instruction (the whole prompt: ###The instruction to evaluate:, ###Response to "
            "evaluate:, ###Reference Answer (Score 5):, ###Score Rubrics:)[, gpt4_score, idx, "
            "response_source]} | {orig_instruction, orig_response, orig_reference_answer, "
            "orig_criteria, orig_score1..5_description[, orig_score]}",
            ((0, lambda row: "orig_instruction" in row or is_prompt(row.get("instruction"))),),
            map_prometheus,
            prometheus_id,
        ),
    )
}


# Layout name -> the keys that make it up (the app and the error message list these).
LAYOUTS: dict[str, str] = {name: layout.keys for name, layout in LAYOUT_RECORDS.items()}


_RULES = sorted(
    (rank, rule, layout.name) for layout in LAYOUT_RECORDS.values() for rank, rule in layout.rules
)


def _unknown_layout_message(row: Mapping[str, Any]) -> str:
    keys = [str(key) for key in row]
    shown = ", ".join(keys[:12]) + (", ..." if len(keys) > 12 else "") if keys else "none"
    accepted = "; ".join(f"{name} {key_set}" for name, key_set in LAYOUTS.items())
    return f"unrecognised row layout (keys: {shown}); rename the fields to one of: {accepted}"
