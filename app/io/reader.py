"""Stream input rows from JSONL or JSON, one `InputRow` per row, bad rows included.

A bad row never stops the stream: malformed JSON, a non-object, bytes that are
not UTF-8, a missing field or an empty answer all come out as an `InputRow`
carrying an `InputError` for that line, so rows in == rows out.

JSONL is read in binary, line by line, and each line is decoded on its own, so a
stray byte spoils only its own line. Line numbers are physical lines of the file
(blank lines are skipped but still counted). A JSON document must be parsed as a
whole (the standard library has no streaming parser), so its rows are numbered
by array index + 1; a JSON document that does not parse at all is the only case
where rows cannot be told apart, and it yields a single error row for line 1.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from itertools import chain
from pathlib import Path
from typing import Any, BinaryIO

from app.io.layouts import ID_KEYS, to_item, type_name
from app.records import JudgeItem
from models.foundation.errors import InputError

Source = str | os.PathLike[str] | bytes | bytearray | BinaryIO

JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson", ".jsonlines"})
JSON_SUFFIXES = frozenset({".json"})
CONTAINER_KEYS = ("data", "rows", "items")

_BOM = b"\xef\xbb\xbf"
_SNIFF_SKIP = b" \t\r\n" + _BOM
# A lone surrogate in decoded text: an undecodable byte (surrogateescape) or a bad \u escape.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class InputRow:
    """One input row: exactly one of `item` and `error` is set.

    `raw` is the decoded JSON object when the row was an object (even if it
    could not be mapped), and None when it was not valid JSON or not an object.
    """

    line: int
    item: JudgeItem | None
    error: InputError | None
    raw: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return self.error is None


def read_rows(
    source: Source, *, name: str | None = None, max_bytes: int | None = None
) -> Iterator[InputRow]:
    """Yield one InputRow per row of `source`, in file order.

    `source` is a path (str or Path), the file's bytes, or a binary stream (read
    from its current position). `name` is a file name used to pick the format by
    its extension when `source` is bytes or a stream (an upload, say); without
    one the first non-blank character decides: `[` is a JSON array, `{` is JSONL
    unless the first line is not a whole object (then a JSON document).

    Raises at call time: FileNotFoundError for a missing path, and
    `InputError(0, "", ...)` when the input is larger than `max_bytes` (for a
    stream that cannot seek, only once that many bytes have been read).
    """
    label = _label(source, name)
    checked = _limit_size(source, label, max_bytes)
    return _iter_rows(checked, _suffix(source, name))


def count_rows(source: Source, *, name: str | None = None) -> int:
    """How many rows `read_rows` will yield, without mapping them (for progress bars).

    JSONL only counts non-blank lines; a JSON document is parsed. A seekable
    stream is rewound to where it was; other streams are consumed.
    """
    start = source.tell() if _is_stream(source) and _seekable(source) else None
    try:
        with _binary(source) as stream:
            kind, content = _plan(stream, _suffix(source, name))
            if kind == "jsonl":
                return sum(1 for line in content if line.strip())
            return _count_document(content)
    finally:
        if start is not None:
            source.seek(start)


def _iter_rows(source: Source, suffix: str) -> Iterator[InputRow]:
    with _binary(source) as stream:
        kind, content = _plan(stream, suffix)
        rows = _jsonl_rows(content) if kind == "jsonl" else _document_rows(content)
        yield from _unique_ids(rows)


def _unique_ids(rows: Iterable[InputRow]) -> Iterator[InputRow]:
    """A row whose id an earlier row already has becomes an error row naming both lines.

    Output rows are matched to input rows (and runs to runs) by id, so two rows
    with one id would make two results indistinguishable; renaming one silently
    would change the user's data. The first row with the id is judged as usual.
    """
    first_line: dict[str, int] = {}
    for row in rows:
        if row.item is None:
            yield row
            continue
        seen = first_line.setdefault(row.item.id, row.line)
        if seen == row.line:
            yield row
            continue
        field = next((key for key in ID_KEYS if row.raw and row.raw.get(key) is not None), "id")
        message = (
            f"id '{row.item.id}' is also the id of line {seen}; give every row its own id "
            "(results are matched to rows by id)"
        )
        yield _error_row(row.line, field, message, row.raw)


# --- opening and sniffing ---


def _is_stream(source: object) -> bool:
    return hasattr(source, "read") and not isinstance(source, (bytes, bytearray))


def _seekable(stream: Any) -> bool:
    seekable = getattr(stream, "seekable", None)
    return bool(seekable and seekable())


def _label(source: Source, name: str | None) -> str:
    if name:
        return name
    if isinstance(source, (str, os.PathLike)):
        return str(source)
    return "input"


def _suffix(source: Source, name: str | None) -> str:
    if name:
        return Path(name).suffix.lower()
    if isinstance(source, (str, os.PathLike)):
        return Path(source).suffix.lower()
    stream_name = getattr(source, "name", None)
    return Path(stream_name).suffix.lower() if isinstance(stream_name, str) else ""


@contextmanager
def _binary(source: Source) -> Iterator[BinaryIO]:
    """A binary stream over `source`; only a file opened here is closed here."""
    if isinstance(source, (bytes, bytearray)):
        yield BytesIO(bytes(source))
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as stream:
            yield stream
    else:
        yield source


def _plan(stream: BinaryIO, suffix: str) -> tuple[str, Any]:
    """Decide the format: ("jsonl", an iterator of lines) or ("document", all the bytes).

    JSONL stays streamed; only a JSON document (or an unknown format that may be
    one) is read whole.
    """
    head = _read_head(stream)
    first = head[-1].lstrip(_SNIFF_SKIP)[:1] if head else b""
    if suffix in JSONL_SUFFIXES or first not in (b"[", b"{"):
        return "jsonl", chain(head, stream)
    if suffix not in JSON_SUFFIXES and first == b"{" and _is_row_object(head[-1]):
        return "jsonl", chain(head, stream)
    return "document", b"".join(head) + stream.read()


def _read_head(stream: BinaryIO) -> list[bytes]:
    """Lines up to and including the first non-blank one (works on any stream)."""
    head: list[bytes] = []
    while True:
        line = stream.readline()
        if not line:
            return head
        head.append(line)
        if line.lstrip(_SNIFF_SKIP):
            return head


def _is_row_object(line: bytes) -> bool:
    """Is this line on its own a JSON object that is a row (not a {"data": [...]} wrapper)?"""
    try:
        value = json.loads(line.removeprefix(_BOM).decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and _container_list(value) is None


def _container_list(value: dict[str, Any]) -> list[Any] | None:
    for key in CONTAINER_KEYS:
        rows = value.get(key)
        if isinstance(rows, list):
            return rows
    return None


# --- size limit ---


def _limit_size(source: Source, label: str, max_bytes: int | None) -> Source:
    """Raise when `source` is over `max_bytes`; wrap a stream whose size is unknown."""
    if max_bytes is None:
        if isinstance(source, (str, os.PathLike)):
            os.stat(source)  # a missing file fails now, not at the first next()
        return source
    if isinstance(source, (bytes, bytearray)):
        size: int | None = len(source)
    elif isinstance(source, (str, os.PathLike)):
        size = os.stat(source).st_size
    elif _seekable(source):
        start = source.tell()
        size = source.seek(0, os.SEEK_END) - start
        source.seek(start)
    else:
        return _LimitedStream(source, max_bytes, label)
    if size > max_bytes:
        raise _too_large(label, size, max_bytes)
    return source


def _too_large(label: str, size: int | str, max_bytes: int) -> InputError:
    shown = size if isinstance(size, str) else _size_text(size)
    return InputError(
        0,
        "",
        f"{label} is {shown}; the limit is {_size_text(max_bytes)}. "
        "Split the file into smaller parts or raise the size limit.",
    )


def _size_text(size: int) -> str:
    if size >= 1_000_000:
        return f"{size / 1_000_000:.1f} MB"
    if size >= 1_000:
        return f"{size / 1_000:.1f} kB"
    return f"{size} bytes"


class _LimitedStream:
    """A non-seekable stream that raises InputError once more than `limit` bytes are read."""

    def __init__(self, stream: BinaryIO, limit: int, label: str) -> None:
        self._stream = stream
        self._limit = limit
        self._label = label
        self._read = 0

    def _count(self, data: bytes) -> bytes:
        self._read += len(data)
        if self._read > self._limit:
            raise _too_large(self._label, f"over {_size_text(self._limit)}", self._limit)
        return data

    def readline(self) -> bytes:
        return self._count(self._stream.readline())

    def read(self, size: int = -1) -> bytes:
        return self._count(self._stream.read(size))

    def __iter__(self) -> Iterator[bytes]:
        for line in self._stream:
            yield self._count(line)


# --- rows ---


def _jsonl_rows(lines: Iterable[bytes]) -> Iterator[InputRow]:
    for number, line in enumerate(lines, start=1):
        if number == 1:
            line = line.removeprefix(_BOM)
        if line.strip():
            yield _jsonl_row(number, line)


def _jsonl_row(number: int, line: bytes) -> InputRow:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error_row(
            number,
            "",
            f"the line is not valid UTF-8 (byte 0x{line[exc.start]:02x} "
            f"at position {exc.start + 1}); save the file as UTF-8",
        )
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return _error_row(
            number, "", f"invalid JSON: {exc.msg} (column {exc.colno}); fix or remove this line"
        )
    except RecursionError:
        return _error_row(number, "", "invalid JSON: nested too deeply")
    return _value_row(number, value)


def _value_row(number: int, value: Any) -> InputRow:
    """Map one decoded JSON value; never raises."""
    if not isinstance(value, dict):
        return _error_row(
            number,
            "",
            f"expected a JSON object {{...}}, got {type_name(value)}; each row is one object",
        )
    bad_field = _field_with_bad_text(value)
    if bad_field is not None:
        return _error_row(
            number,
            bad_field,
            "contains text that is not valid UTF-8 (an undecodable byte or a lone \\u surrogate); "
            "save the file as UTF-8",
            value,
        )
    try:
        return InputRow(number, to_item(value, number), None, value)
    except InputError as exc:
        return InputRow(number, None, exc, value)
    except Exception as exc:
        return _error_row(number, "", f"could not read this row: {exc}", value)


def _error_row(
    number: int, field: str, message: str, raw: dict[str, Any] | None = None
) -> InputRow:
    return InputRow(number, None, InputError(number, field, message), raw)


def _field_with_bad_text(row: dict[str, Any]) -> str | None:
    """The first top-level field holding a lone surrogate anywhere inside it, if any."""
    for key, value in row.items():
        if _has_bad_text(key) or _has_bad_text(value):
            return str(key)
    return None


def _has_bad_text(value: Any) -> bool:
    if isinstance(value, str):
        return _LONE_SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_bad_text(k) or _has_bad_text(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_bad_text(v) for v in value)
    return False


# --- JSON documents ---


def _parse_document(data: bytes) -> Any:
    """Parse a whole document. Bad bytes become lone surrogates so that only the
    rows holding them fail (see `_field_with_bad_text`)."""
    return json.loads(data.decode("utf-8-sig", errors="surrogateescape"))


def _document_values(document: Any) -> list[Any]:
    """The rows of a parsed document: an array, a {"data"|"rows"|"items": [...]} or one object."""
    if isinstance(document, list):
        return document
    if isinstance(document, dict):
        rows = _container_list(document)
        return rows if rows is not None else [document]
    return [document]


def _document_rows(data: bytes) -> Iterator[InputRow]:
    try:
        document = _parse_document(data)
    except (ValueError, RecursionError) as exc:
        if _looks_like_jsonl(data):
            yield from _jsonl_rows(data.split(b"\n"))
        else:
            yield _error_row(1, "", _unparsable_message(exc))
        return
    for index, value in enumerate(_document_values(document), start=1):
        yield _value_row(index, value)


def _count_document(data: bytes) -> int:
    try:
        return len(_document_values(_parse_document(data)))
    except (ValueError, RecursionError):
        if _looks_like_jsonl(data):
            return sum(1 for line in data.split(b"\n") if line.strip())
        return 1


def _looks_like_jsonl(data: bytes) -> bool:
    """Whether a document that failed to parse is really JSONL with some bad lines.

    Text starting with `[` counts as JSONL only when its first line is a whole
    JSON value (an array row, say). Otherwise one line holding a whole JSON
    object is enough: lines of a pretty-printed object never are.
    """
    lines = [line for line in data.removeprefix(_BOM).split(b"\n") if line.strip()]
    if len(lines) < 2:
        return False
    if lines[0].lstrip().startswith(b"["):
        return _parses(lines[0], whole_object=False)
    return any(_parses(line, whole_object=True) for line in lines)


def _parses(line: bytes, *, whole_object: bool) -> bool:
    try:
        value = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) or not whole_object


def _unparsable_message(exc: Exception) -> str:
    where = ""
    if isinstance(exc, json.JSONDecodeError):
        where = f" ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    return (
        f"the file is not valid JSON{where}, so its rows cannot be told apart and none was read; "
        "fix the JSON, or save it as JSONL (one object per line) so that bad rows are skipped alone"
    )
