"""The Prometheus layout: a whole absolute-grading prompt, or its parts as separate fields."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.io.layouts.fields import ID_KEYS, Fields, id_text, to_number
from app.io.prometheus import PromptError, is_prompt, make_rubric, split_prompt, strip_brackets
from app.records import Label


def map_prometheus(fields: Fields) -> dict[str, Any]:
    """The whole prompt in `instruction` (vicuna_eval.json), or the Feedback Collection's
    `orig_*` fields (preferred when present: they need no parsing)."""
    if "orig_instruction" in fields.row:
        values = _prometheus_fields(fields)
        if is_prompt(fields.row.get("instruction")):
            fields.take("instruction")  # the same parts again, as one prompt
    else:
        values = _prometheus_prompt(fields)
    source = fields.row.get("response_source")
    if isinstance(source, str) and source.strip():
        fields.take("response_source")
        values["answer_models"] = (source.strip(),)
    return {**values, "label": _prometheus_label(fields)}


def _prometheus_prompt(fields: Fields) -> dict[str, Any]:
    text = fields.text("instruction", what="the Prometheus prompt")
    try:
        prompt = split_prompt(text)
    except PromptError as exc:
        raise fields.error("instruction", str(exc)) from None
    for key in ("question", "answers", "reference", "rubric"):
        fields.sources[key] = "instruction"
    return {
        "question": prompt.question,
        "answers": (prompt.response,),
        "reference": prompt.reference,
        "rubric": prompt.rubric,
    }


def _prometheus_fields(fields: Fields) -> dict[str, Any]:
    question = fields.text("orig_instruction", what="the instruction to evaluate")
    fields.sources["question"] = "orig_instruction"
    answer = fields.answer("orig_response")
    fields.sources["answers"] = "orig_response"
    reference = fields.reference("orig_reference_answer")
    criterion = fields.text("orig_criteria", what="the rubric's criterion")
    levels = {
        n: fields.text(f"orig_score{n}_description", what=f"the rubric's level for score {n}")
        for n in range(1, 6)
    }
    if not strip_brackets(criterion):
        raise fields.error("orig_criteria", "the criterion is empty; give the rubric's question")
    return {
        "question": question,
        "answers": (answer,),
        "reference": reference,
        "rubric": make_rubric(criterion, levels),
    }


def prometheus_id(row: Mapping[str, Any]) -> str | None:
    """`idx` numbers the request, shared by its answers (four in vicuna_eval.json), so the id
    adds `response_source`: "12-vicuna". None when the row has its own id or lacks either."""
    if any(row.get(key) is not None for key in ID_KEYS[: ID_KEYS.index("idx")]):
        return None
    idx, source = row.get("idx"), row.get("response_source")
    if isinstance(idx, bool) or not isinstance(idx, (str, int, float)):
        return None
    if not isinstance(source, str) or not source.strip() or not id_text(idx):
        return None
    return f"{id_text(idx)}-{source.strip()}"


def _prometheus_label(fields: Fields) -> Label | None:
    """The mean of `gpt4_score` (several grades 1-5, left in metadata), else `orig_score`."""
    if fields.has("gpt4_score"):
        value = fields.row["gpt4_score"]
        grades = [to_number(g) for g in (value if isinstance(value, (list, tuple)) else [value])]
        numbers = [n for n in grades if n is not None and 1 <= n <= 5]
        if not numbers or len(numbers) != len(grades):
            raise fields.error("gpt4_score", f"expected grades from 1 to 5, got {value!r}")
        return Label(score=sum(numbers) / len(numbers), scale_max=5.0)
    if fields.has("orig_score"):
        value = fields.take("orig_score")
        score = to_number(value)
        if score is None or not 1 <= score <= 5:
            raise fields.error("orig_score", f"expected a grade from 1 to 5, got {value!r}")
        return Label(score=score, scale_max=5.0)
    return None
