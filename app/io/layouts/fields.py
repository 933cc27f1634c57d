"""One row's fields read and checked (`Fields`), and what every layout shares."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from models.foundation.errors import InputError, validation_message

UNKNOWN = "unknown"


ID_KEYS = ("id", "question_id", "idx", "sample_id", "uid")


SECOND_OUTPUT_KEYS = ("output_2", "output2", "output_b")


AUTOJ_SINGLE_SCALE = 10.0


ANSWER_BODY = re.compile(r"^answer(\d+)_body$")


RATING = re.compile(r"Rating:\s*\[\[\s*(\d+(?:\.\d+)?)\s*\]\]")


SCALE_RANGE = re.compile(r"^\s*\d+(?:\.\d+)?\s*(?:-|\.\.|to)\s*(\d+(?:\.\d+)?)\s*$")


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


class Fields:
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
            text = id_text(value)
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


def id_text(value: str | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def to_number(value: Any) -> float | None:
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


def to_choice(value: Any, allowed: tuple[int, ...]) -> int | None:
    """An integer code from `allowed` (given as int, integral float or digit string)."""
    number = to_number(value)
    if number is None or not number.is_integer() or int(number) not in allowed:
        return None
    return int(number)


def winner_from_scores(first: float, second: float) -> str:
    if first > second:
        return "A"
    return "B" if second > first else "tie"
