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

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from app.catalog.rubrics import Rubric
from app.foundation.datafiles import first_problem
from app.foundation.errors import InputError, validation_message
from app.io.prometheus import PromptError, is_prompt, make_rubric, split_prompt, strip_brackets
from app.records import MAX_ANSWERS, JudgeItem, Label

UNKNOWN = "unknown"

ID_KEYS = ("id", "question_id", "idx", "sample_id", "uid")
SECOND_OUTPUT_KEYS = ("output_2", "output2", "output_b")
AUTOJ_SINGLE_SCALE = 10.0

_ANSWER_BODY = re.compile(r"^answer(\d+)_body$")
_RATING = re.compile(r"Rating:\s*\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")
_SCALE_RANGE = re.compile(r"^\s*\d+(?:\.\d+)?\s*(?:-|\.\.|to)\s*(\d+(?:\.\d+)?)\s*$")


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
    fields = _Fields(row, line)
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
                text = _id_text(value)
                if text:
                    return text
    return f"row-{line}"


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


class _Fields:
    """Reads fields of one row, checks their types and remembers what was consumed."""

    def __init__(self, row: Mapping[str, Any], line: int) -> None:
        self.row = row
        self.line = line
        self.used: set[str] = set()
        self.sources: dict[str, str] = {}  # JudgeItem field -> row field, for error messages
        self.extra: dict[str, Any] = {}  # a nested "metadata" object (ours), merged under the rest

    def error(self, field: str, message: str) -> InputError:
        return InputError(self.line, field, message)

    def has(self, key: str) -> bool:
        return self.row.get(key) is not None

    def take(self, key: str) -> Any:
        """The raw value of `key` (None when absent), marked as consumed."""
        if key in self.row:
            self.used.add(key)
        return self.row.get(key)

    def text(self, key: str, *, what: str) -> str:
        """A required, non-blank string."""
        value = self.take(key)
        if value is None:
            raise self.error(key, f"add a non-empty '{key}' field ({what})")
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {type_name(value)}")
        if not value.strip():
            raise self.error(key, f"'{key}' is empty; give {what}")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.take(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error(key, f"expected a string, got {type_name(value)}")
        return value

    def answer(self, key: str) -> str:
        """A required, non-blank answer text."""
        return self.check_answer(key, self.take(key))

    def check_answer(self, field: str, value: Any) -> str:
        if value is None:
            raise self.error(field, f"add a non-empty '{field}' field (the answer to judge)")
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {type_name(value)}")
        if not value.strip():
            raise self.error(
                field, "the answer is empty; every answer needs text (fill it in or drop the row)"
            )
        return value

    def reference(self, key: str = "reference") -> str | None:
        """A reference answer: a string, or an object with a `text` string (JudgeLM)."""
        value = self.take(key)
        if isinstance(value, Mapping) and "text" in value:
            value = value["text"]
        if value is None or isinstance(value, str):
            self.sources["reference"] = key
            return value
        raise self.error(
            key, f"expected a string (or an object with a 'text' string), got {type_name(value)}"
        )

    def scenario(self) -> str | None:
        value = self.optional_text("scenario")
        if value is None or not value.strip():
            return None
        return value.strip()

    def instruction_question(self, key: str = "instruction") -> str:
        """`instruction`, with a non-blank `input` appended after a blank line."""
        question = self.text(key, what="the instruction or question")
        extra = self.optional_text("input")
        self.sources["question"] = key
        return f"{question}\n\n{extra}" if extra and extra.strip() else question

    def item_id(self) -> str:
        for key in ID_KEYS:
            if key not in self.row or self.row[key] is None:
                continue
            value = self.take(key)
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise self.error(key, f"expected a string or a number, got {type_name(value)}")
            text = _id_text(value)
            if text:
                return text
        return f"row-{self.line}"

    def leftover(self) -> dict[str, Any]:
        rest = {key: value for key, value in self.row.items() if key not in self.used}
        return {**self.extra, **rest}

    def from_validation(self, exc: ValidationError) -> InputError:
        """Turn a JudgeItem validation error into an InputError naming the row's field."""
        first = exc.errors()[0]
        location = first.get("loc") or ("",)
        field = self.sources.get(str(location[0]), str(location[0]))
        message = validation_message(first)
        return self.error(field, message)


def _id_text(value: str | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _number(value: Any) -> float | None:
    """A finite number from an int, float or numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _choice(value: Any, allowed: tuple[int, ...]) -> int | None:
    """An integer code from `allowed` (given as int, integral float or digit string)."""
    number = _number(value)
    if number is None or not number.is_integer() or int(number) not in allowed:
        return None
    return int(number)


def _winner_from_scores(first: float, second: float) -> str:
    if first > second:
        return "A"
    return "B" if second > first else "tie"


# --- one mapper per layout: each returns the JudgeItem fields except id and metadata ---


def _map_ours(fields: _Fields) -> dict[str, Any]:
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


def _ours_answers(fields: _Fields) -> tuple[str, ...]:
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


def _ours_criteria(fields: _Fields) -> tuple[str, ...] | None:
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


def _ours_answer_models(fields: _Fields, count: int) -> tuple[str | None, ...] | None:
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


def _ours_label(fields: _Fields) -> Label | None:
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


def _ours_rubric(fields: _Fields) -> Rubric | None:
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


def _map_alpaca(fields: _Fields) -> dict[str, Any]:
    question = fields.instruction_question()
    answers = [fields.answer("output")]
    for key in SECOND_OUTPUT_KEYS:
        if key in fields.row:
            answers.append(fields.answer(key))
            break
    return {"question": question, "answers": tuple(answers), "reference": fields.reference()}


def _map_judgelm(fields: _Fields) -> dict[str, Any]:
    question = fields.text("question_body", what="the question")
    fields.sources["question"] = "question_body"
    count = _judgelm_answer_count(fields.row)
    answers = tuple(fields.answer(f"answer{n}_body") for n in range(1, count + 1))
    return {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "answer_models": _judgelm_models(fields, count),
        "label": _judgelm_label(fields, count),
    }


def _judgelm_answer_count(row: Mapping[str, Any]) -> int:
    """Answers run from answer1_body up to the highest answerN_body present (at least 2)."""
    numbers = [int(m.group(1)) for key in row if (m := _ANSWER_BODY.match(str(key)))]
    return min(max([2, *numbers]), MAX_ANSWERS)


def _judgelm_models(fields: _Fields, count: int) -> tuple[str | None, ...] | None:
    keys = [f"answer{n}_model_id" for n in range(1, count + 1)]
    if not any(fields.has(key) for key in keys):
        return None
    return tuple(None if (v := fields.take(key)) is None else str(v) for key in keys)


def _judgelm_label(fields: _Fields, count: int) -> Label | None:
    """`score` = [s1, s2]: the higher score wins. Left in metadata (the margin matters)."""
    value = fields.row.get("score")
    if value is None:
        return None
    scores = [_number(s) for s in value] if isinstance(value, (list, tuple)) else []
    if len(scores) != count or any(s is None for s in scores):
        raise fields.error("score", f"expected a list of {count} numbers, one per answer")
    if count != 2:
        return None
    return Label(winner=_winner_from_scores(scores[0], scores[1]))


def _map_pandalm(fields: _Fields) -> dict[str, Any]:
    return {
        "question": fields.instruction_question(),
        "answers": (fields.answer("response1"), fields.answer("response2")),
        "reference": fields.reference(),
        "label": _pandalm_label(fields),
    }


def _pandalm_label(fields: _Fields) -> Label | None:
    """Majority of annotator1..3 (0 = tie, 1, 2); no majority is a tie. Votes stay in metadata."""
    votes: list[int] = []
    for key in ("annotator1", "annotator2", "annotator3"):
        value = fields.row.get(key)
        if value is None:
            continue
        vote = _choice(value, (0, 1, 2))
        if vote is None:
            raise fields.error(key, f"expected 0 (tie), 1 or 2, got {value!r}")
        votes.append(vote)
    if not votes:
        return None
    top = max((0, 1, 2), key=votes.count)
    if votes.count(top) * 2 <= len(votes):
        top = 0
    return Label(winner={0: "tie", 1: "A", 2: "B"}[top])


def _map_autoj_pairwise(fields: _Fields) -> dict[str, Any]:
    question = fields.text("prompt", what="the user's query")
    fields.sources["question"] = "prompt"
    answers = (fields.answer("response 1"), fields.answer("response 2"))
    label = None
    if fields.has("label"):
        code = _choice(fields.take("label"), (0, 1, 2))
        if code is None:
            raise fields.error(
                "label", "expected 0 (response 1 better), 1 (response 2 better) or 2 (tie)"
            )
        label = Label(winner={0: "A", 1: "B", 2: "tie"}[code])
    return {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "scenario": fields.scenario(),
        "label": label,
    }


def _map_autoj_single(fields: _Fields) -> dict[str, Any]:
    query, response = _split_autoj_prompt(fields, fields.take("usrmsg"))
    return {
        "question": query,
        "answers": (response,),
        "reference": fields.reference(),
        "scenario": fields.scenario(),
        "label": _autoj_single_label(fields),
    }


def _split_autoj_prompt(fields: _Fields, message: Any) -> tuple[str, str]:
    """Extract the `[Query]:` and `[Response]:` sections of an Auto-J single prompt."""
    if not isinstance(message, str):
        raise fields.error("usrmsg", f"expected a string, got {type_name(message)}")
    text = message.replace("\r\n", "\n")
    query_at = text.find("[Query]:")
    response_at = text.find("[Response]:", max(query_at, 0))
    if query_at < 0 or response_at < 0:
        raise fields.error(
            "usrmsg",
            "could not find the '[Query]:' and '[Response]:' sections of the Auto-J prompt",
        )
    end = text.rfind("[END DATA]")
    end = end if end > response_at else len(text)
    query = _strip_separator(text[query_at + len("[Query]:") : response_at])
    response = _strip_separator(text[response_at + len("[Response]:") : end])
    if not query:
        raise fields.error("usrmsg", "the '[Query]:' section is empty; the row has no question")
    if not response:
        raise fields.error(
            "usrmsg", "the '[Response]:' section is empty; there is nothing to judge"
        )
    return query, response


def _strip_separator(section: str) -> str:
    section = section.strip()
    return section[:-3].strip() if section.endswith("***") else section


def _autoj_single_label(fields: _Fields) -> Label | None:
    """`pred_score` (1-10), else the `Rating: [[N]]` that ends `target_output`."""
    if fields.has("pred_score"):
        value = fields.take("pred_score")
        score = _number(value)
        if score is None:
            raise fields.error("pred_score", f"expected a number, got {type_name(value)}")
        return Label(score=score, scale_max=AUTOJ_SINGLE_SCALE)
    critique = fields.row.get("target_output")
    found = _RATING.findall(critique) if isinstance(critique, str) else []
    return Label(score=float(found[-1]), scale_max=AUTOJ_SINGLE_SCALE) if found else None


def _map_llmbar(fields: _Fields) -> dict[str, Any]:
    if "instruction" in fields.row:
        question = fields.instruction_question()
    else:
        question = fields.text("input", what="the instruction")
        fields.sources["question"] = "input"
    answers = (fields.answer("output_1"), fields.answer("output_2"))
    label = None
    if fields.has("label"):
        value = fields.take("label")
        code = _choice(value, (1, 2))
        if code is None:
            raise fields.error("label", f"expected 1 or 2 (the better output), got {value!r}")
        label = Label(winner="A" if code == 1 else "B")
    return {
        "question": question,
        "answers": answers,
        "reference": fields.reference(),
        "label": label,
    }


def _map_pointwise(fields: _Fields) -> dict[str, Any]:
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


def _pointwise_label(fields: _Fields) -> Label | None:
    """`score` on the scale given by `scale_max` or `scale` (5, "1-5" or [1, 5]), if any."""
    if not fields.has("score"):
        return None
    value = fields.take("score")
    score = _number(value)
    if score is None:
        raise fields.error("score", f"expected a number, got {type_name(value)}")
    return Label(score=score, scale_max=_scale_max(fields))


def _scale_max(fields: _Fields) -> float | None:
    for key in ("scale_max", "scale"):
        if not fields.has(key):
            continue
        value = fields.take(key)
        if isinstance(value, (list, tuple)) and len(value) == 2:
            value = value[1]
        elif isinstance(value, str) and (match := _SCALE_RANGE.match(value)):
            value = match.group(1)
        top = _number(value)
        if top is None or top <= 0:
            raise fields.error(
                key, f"expected the top of the scale (5, '1-5' or [1, 5]), got {value!r}"
            )
        return top
    return None


def _map_prometheus(fields: _Fields) -> dict[str, Any]:
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


def _prometheus_prompt(fields: _Fields) -> dict[str, Any]:
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


def _prometheus_fields(fields: _Fields) -> dict[str, Any]:
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


def _prometheus_id(row: Mapping[str, Any]) -> str | None:
    """`idx` numbers the request, shared by its answers (four in vicuna_eval.json), so the id
    adds `response_source`: "12-vicuna". None when the row has its own id or lacks either."""
    if any(row.get(key) is not None for key in ID_KEYS[: ID_KEYS.index("idx")]):
        return None
    idx, source = row.get("idx"), row.get("response_source")
    if isinstance(idx, bool) or not isinstance(idx, (str, int, float)):
        return None
    if not isinstance(source, str) or not source.strip() or not _id_text(idx):
        return None
    return f"{_id_text(idx)}-{source.strip()}"


def _prometheus_label(fields: _Fields) -> Label | None:
    """The mean of `gpt4_score` (several grades 1-5, left in metadata), else `orig_score`."""
    if fields.has("gpt4_score"):
        value = fields.row["gpt4_score"]
        grades = [_number(g) for g in (value if isinstance(value, (list, tuple)) else [value])]
        numbers = [n for n in grades if n is not None and 1 <= n <= 5]
        if not numbers or len(numbers) != len(grades):
            raise fields.error("gpt4_score", f"expected grades from 1 to 5, got {value!r}")
        return Label(score=sum(numbers) / len(numbers), scale_max=5.0)
    if fields.has("orig_score"):
        value = fields.take("orig_score")
        score = _number(value)
        if score is None or not 1 <= score <= 5:
            raise fields.error("orig_score", f"expected a grade from 1 to 5, got {value!r}")
        return Label(score=score, scale_max=5.0)
    return None


Rule = Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Layout:
    """One input layout: its name, its keys (as the "unrecognised layout" error and the app
    show them), how a row is recognised (rank, test: lower ranks are tried first, across
    layouts) and how a row becomes a JudgeItem's fields."""

    name: str
    keys: str
    rules: tuple[tuple[int, Rule], ...]
    mapper: Callable[[_Fields], dict[str, Any]]
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
            _map_ours,
        ),
        Layout(
            "alpaca",
            "{instruction[, input], output[, output_2 | output2 | output_b, reference]}",
            ((9, _has("instruction", "output")),),
            _map_alpaca,
        ),
        Layout(
            "judgelm",
            "{question_body, answer1_body, answer2_body[, answer3..6_body, reference, score]}",
            (
                (
                    2,
                    lambda row: (
                        "question_body" in row or any(_ANSWER_BODY.match(str(key)) for key in row)
                    ),
                ),
            ),
            _map_judgelm,
        ),
        Layout(
            "pandalm",
            "{instruction[, input], response1, response2[, annotator1..3]}",
            ((4, _has("response1", "response2", "annotator1")),),
            _map_pandalm,
        ),
        Layout(
            "autoj_pairwise",
            "{prompt, 'response 1', 'response 2'[, label, scenario, id]}",
            ((3, _has("response 1", "response 2")), (11, _has("prompt"))),
            _map_autoj_pairwise,
        ),
        Layout(
            "autoj_single",
            "{usrmsg[, target_output, pred_score, scenario]}",
            ((1, _has("usrmsg")),),
            _map_autoj_single,
        ),
        Layout(
            "llmbar",
            "{input, output_1, output_2[, label]}",
            ((5, _has("output_1")), (10, lambda row: "input" in row and "output_2" in row)),
            _map_llmbar,
        ),
        Layout(
            "pointwise",
            "{question | instruction, response[, reference, score, scale_max | scale]}",
            ((7, lambda row: "response" in row and ("question" in row or "instruction" in row)),),
            _map_pointwise,
        ),
        Layout(
            "prometheus",
            "{instruction (the whole prompt: ###The instruction to evaluate:, ###Response to "
            "evaluate:, ###Reference Answer (Score 5):, ###Score Rubrics:)[, gpt4_score, idx, "
            "response_source]} | {orig_instruction, orig_response, orig_reference_answer, "
            "orig_criteria, orig_score1..5_description[, orig_score]}",
            ((0, lambda row: "orig_instruction" in row or is_prompt(row.get("instruction"))),),
            _map_prometheus,
            _prometheus_id,
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
