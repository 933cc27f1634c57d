"""Data files (YAML) read into pydantic models, with errors that name file and field.

Scenarios, criteria, rubrics, prompt templates and the model registry all load
through here, so every data file reports problems the same way:
`ConfigError(file, "scenarios[12].criteria[3]", "unknown criterion 'foo'; valid: ...")`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args

import yaml
from pydantic import BaseModel, ValidationError

from models.foundation.errors import ConfigError, validation_message

M = TypeVar("M", bound=BaseModel)
DISPLAY_NAMES = {"scale_min": "scale.min", "scale_max": "scale.max"}


class FieldError(ValueError):
    """A validation error that knows its field path below the model that raised it.

    Pydantic only knows the location of the model a validator belongs to; the loader appends
    this sub-path so that messages point at e.g. `criteria[1].levels.3-4`, not `criteria[1]`.
    """

    def __init__(self, subpath: str, message: str) -> None:
        super().__init__(message)
        self.subpath = subpath
        self.message = message


class UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys instead of keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key '{key}'", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_mapping(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, "", "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, "", f"cannot read file: {exc}") from None
    loader = UniqueKeyLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(path, where, f"invalid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(path, "", f"invalid YAML: {exc}") from None
    finally:
        loader.dispose()
    if data is None:
        raise ConfigError(path, "", "file is empty")
    if not isinstance(data, dict):
        raise ConfigError(path, "", f"expected a mapping at the top level, got {_kind(data)}")
    return data


def validate(model: type[M], data: Any, path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _to_config_error(exc, model, path) from None


def _to_config_error(exc: ValidationError, model: type[BaseModel], path: Path) -> ConfigError:
    where, message = first_problem(exc, model)
    if exc.error_count() > 1:
        message += f" (and {exc.error_count() - 1} more problem(s) in this file)"
    return ConfigError(path, where, message)


def first_problem(exc: ValidationError, model: type[BaseModel]) -> tuple[str, str]:
    """The field path and message of the first problem in `exc`, as file errors give them
    (for data of a file's form that came from elsewhere, e.g. a rubric inside an input row)."""
    first = exc.errors()[0]
    where, message = _loc_to_path(first["loc"]), _message(first, model)
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, FieldError):
        where, message = _join_path(where, cause.subpath), cause.message
    return where, message


def _loc_to_path(loc: Iterable[int | str]) -> str:
    """('scenarios', 12, 'criteria', 3) -> 'scenarios[12].criteria[3]'."""
    parts = [f"[{p}]" if isinstance(p, int) else DISPLAY_NAMES.get(str(p), str(p)) for p in loc]
    return "".join(p if p.startswith("[") or i == 0 else f".{p}" for i, p in enumerate(parts))


def _join_path(base: str, subpath: str) -> str:
    if not base:
        return subpath
    return base + subpath if subpath.startswith("[") else f"{base}.{subpath}"


def _message(error: Mapping[str, Any], model: type[BaseModel]) -> str:
    kind, loc, ctx = error["type"], error["loc"], error.get("ctx", {})
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        allowed = ", ".join(_fields_at(model, loc[:-1]))
        return f"unknown field '{loc[-1]}'; allowed: {allowed}"
    if kind == "string_pattern_mismatch":
        return f"'{error['input']}' is not a valid id: use lowercase letters, digits and '_'"
    if kind == "too_short" and "min_length" in ctx:
        return f"has {ctx.get('actual_length')} item(s); needs at least {ctx['min_length']}"
    if kind == "too_long" and "max_length" in ctx:
        return f"has {ctx.get('actual_length')} items; allows at most {ctx['max_length']}"
    message = validation_message(error)
    if kind == "literal_error":
        message += f", got {error['input']!r}"
    return message


def _fields_at(model: type[BaseModel], loc: Iterable[int | str]) -> list[str]:
    """Field names of the (nested) model found at `loc`, for 'allowed:' hints."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not _is_model(current):
            continue
        info = current.model_fields.get(part)
        if info is None:
            return []
        annotation = info.annotation
        nested = [a for a in (annotation, *get_args(annotation)) if _is_model(a)]
        current = nested[0] if nested else None
    if not _is_model(current):
        return []
    file_names = getattr(current, "file_field_names", None)
    return list(file_names()) if callable(file_names) else list(current.model_fields)


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string"}.get(type(value), type(value).__name__)
