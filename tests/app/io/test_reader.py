"""The reader yields exactly one InputRow per row, in order, whatever is wrong with it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from app.io.reader import InputRow, count_rows, read_rows
from models.foundation.errors import InputError


def good(qid: str) -> bytes:
    return json.dumps({"id": qid, "question": "Q?", "answers": ["a", "b"]}).encode()


# (physical line, content, None for a good row or (field, message fragment) for a bad one)
BAD_ROW_MATRIX: list[tuple[bytes, tuple[str, str] | None]] = [
    (good("first"), None),
    (b'{"id": "x", "question": "Q", "answers": ["a"', ("", "invalid JSON")),
    (b'{"id": "no-q", "answers": ["a"]}', ("question", "add a non-empty 'question'")),
    (b'{"question": "Q", "answers": 3}', ("answers", "got int")),
    (b'{"question": "Q", "answers": ["a", ""]}', ("answers[1]", "empty")),
    (b'{"question": "Q\xff\xfe", "answers": ["a"]}', ("", "not valid UTF-8")),
    (b"[1, 2]", ("", "expected a JSON object")),
    (b'"just a string"', ("", "got string")),
    (b'{"question": "Q", "answers": ["\\udcff"]}', ("answers", "not valid UTF-8")),
    (good("last"), None),
]


def matrix_bytes() -> bytes:
    """The matrix with blank lines mixed in, so line numbers must count them."""
    parts = [b"", BAD_ROW_MATRIX[0][0]]
    for content, _ in BAD_ROW_MATRIX[1:]:
        parts += [b"   ", content]
    return b"\n".join(parts) + b"\r\n\n"


def check_matrix(rows: list[InputRow]) -> None:
    assert len(rows) == len(BAD_ROW_MATRIX)
    for index, (row, (_, expected)) in enumerate(zip(rows, BAD_ROW_MATRIX, strict=True)):
        assert row.line == 2 + 2 * index  # a leading blank line, then one between each row
        if expected is None:
            assert row.ok and row.item is not None and row.error is None
            continue
        field, fragment = expected
        assert row.item is None and isinstance(row.error, InputError)
        assert row.error.line == row.line
        assert row.error.field == field
        assert fragment in row.error.message
        assert f"line {row.line}" in str(row.error)
    assert rows[0].item.id == "first" and rows[-1].item.id == "last"
    assert rows[2].raw == {"id": "no-q", "answers": ["a"]}
    assert rows[1].raw is None


@pytest.mark.parametrize("kind", ["path", "str-path", "bytes", "stream", "named-bytes"])
def test_bad_row_matrix(tmp_path: Path, kind: str) -> None:
    data = matrix_bytes()
    path = tmp_path / "rows.jsonl"
    path.write_bytes(data)
    source: Any = {
        "path": path,
        "str-path": str(path),
        "bytes": data,
        "stream": io.BytesIO(data),
        "named-bytes": data,
    }[kind]
    name = "upload.jsonl" if kind == "named-bytes" else None
    check_matrix(list(read_rows(source, name=name)))
    if isinstance(source, io.BytesIO):
        source.seek(0)
    assert count_rows(source, name=name) == len(BAD_ROW_MATRIX)


def test_jsonl_stream_is_lazy() -> None:
    first = good("a") + b"\n"
    stream = io.BytesIO(first + good("b") + b"\n")
    rows = read_rows(stream)
    assert next(rows).item.id == "a"
    assert stream.tell() == len(first)  # the second line is not read yet
    assert next(rows).item.id == "b"


def test_bom_and_crlf() -> None:
    data = b"\xef\xbb\xbf" + good("a") + b"\r\n" + good("b") + b"\r\n"
    rows = list(read_rows(data, name="x.jsonl"))
    assert [r.item.id for r in rows] == ["a", "b"]
    assert [r.line for r in rows] == [1, 2]


ROW_A = {"question": "Q", "answers": ["a"]}
ROW_B = {"id": "b", "input": "I", "output_1": "x", "output_2": "y", "label": 2}

# (case, file name, content, expected ids or error fields, per row in order)
DOCUMENTS: list[tuple[str, str, bytes, list[str]]] = [
    ("array", "rows.json", json.dumps([ROW_A, ROW_B]).encode(), ["row-1", "b"]),
    ("array-pretty", "rows.json", json.dumps([ROW_A, ROW_B], indent=2).encode(), ["row-1", "b"]),
    ("array-no-name", "", json.dumps([ROW_A, ROW_B]).encode(), ["row-1", "b"]),
    (
        "array-non-object",
        "rows.json",
        json.dumps([ROW_A, 3, None]).encode(),
        ["row-1", "error:", "error:"],
    ),
    ("single-object", "one.json", json.dumps(ROW_B, indent=1).encode(), ["b"]),
    ("single-object-one-line", "one.json", json.dumps(ROW_B).encode(), ["b"]),
    ("single-object-no-name", "", json.dumps(ROW_B, indent=1).encode(), ["b"]),
    *[
        (
            f"container-{key}",
            "c.json",
            json.dumps({key: [ROW_B, ROW_A], "meta": 1}).encode(),
            ["b", "row-2"],
        )
        for key in ("data", "rows", "items")
    ],
    ("container-no-name", "", json.dumps({"data": [ROW_B]}).encode(), ["b"]),
    (
        "jsonl-named-json",
        "mislabelled.json",
        b"\n".join([good("a"), b"{bad", good("c")]),
        ["a", "error:", "c"],
    ),
    ("jsonl-array-row-first", "", b"[1]\n" + good("b"), ["error:", "b"]),
    (
        "bad-byte-in-array",
        "rows.json",
        b'[{"question": "Q\xff", "answers": ["a"]}, ' + json.dumps(ROW_B).encode() + b"]",
        ["error:question", "b"],
    ),
    ("empty", "rows.json", b"", []),
    ("blank", "", b"  \n\n", []),
]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [case[1:] for case in DOCUMENTS],
    ids=[case[0] for case in DOCUMENTS],
)
def test_json_documents(name: str, content: bytes, expected: list[str]) -> None:
    rows = list(read_rows(content, name=name or None))
    got = [r.item.id if r.ok else f"error:{r.error.field}" for r in rows]
    assert got == expected
    assert count_rows(content, name=name or None) == len(expected)


def test_json_rows_are_numbered_by_index(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([ROW_A, {"question": ""}, ROW_B], indent=2))
    rows = list(read_rows(path))
    assert [r.line for r in rows] == [1, 2, 3]
    assert rows[1].error.line == 2 and rows[1].error.field == "question"


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("broken.json", b'[{"question": "Q", "answers": ["a"]},\n {"question": '),
        ("", b'[{"question": "Q", "answers": ["a"]} {"x": 1}]'),
        ("broken.json", b'{\n  "question": "Q",\n  "answers": ["a"\n}'),
    ],
)
def test_unparsable_document_is_one_error_row(name: str, content: bytes) -> None:
    rows = list(read_rows(content, name=name or None))
    assert len(rows) == 1 and count_rows(content, name=name or None) == 1
    error = rows[0].error
    assert rows[0].line == 1 and error.line == 1 and error.field == ""
    assert "not valid JSON" in error.message and "cannot be told apart" in error.message
    assert "JSONL" in error.message


def test_missing_file_fails_at_call(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_rows(tmp_path / "nope.jsonl")


class _Pipe(io.RawIOBase):
    """A stream that cannot seek, like stdin."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("kind", ["path", "bytes", "stream"])
def test_max_bytes(tmp_path: Path, kind: str) -> None:
    data = (good("a") + b"\n") * 100
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    source: Any = {"path": path, "bytes": data, "stream": io.BytesIO(data)}[kind]
    with pytest.raises(InputError) as caught:
        read_rows(source, max_bytes=1_000)
    error = caught.value
    assert error.line == 0 and error.field == ""
    assert f"is {len(data) / 1000:.1f} kB; the limit is 1.0 kB" in error.message
    assert "Split the file" in error.message
    if kind == "stream":
        source.seek(0)
    assert len(list(read_rows(source, max_bytes=len(data)))) == 100


def test_max_bytes_on_a_stream_that_cannot_seek() -> None:
    data = (good("a") + b"\n") * 100
    assert len(list(read_rows(io.BufferedReader(_Pipe(data)), max_bytes=len(data)))) == 100
    rows = read_rows(io.BufferedReader(_Pipe(data)), max_bytes=1_000)
    with pytest.raises(InputError, match=r"the limit is 1\.0 kB"):
        list(rows)


def test_count_rows_rewinds_a_seekable_stream() -> None:
    stream = io.BytesIO(good("a") + b"\n\n" + good("b"))
    assert count_rows(stream) == 2
    assert stream.tell() == 0
    assert [r.item.id for r in read_rows(stream)] == ["a", "b"]


def test_a_repeated_id_is_an_error_row_naming_the_first_line_and_the_other_rows_are_kept():
    data = b"\n".join(
        [
            good("dup"),
            good("other"),
            good("dup"),
            json.dumps({"question_id": 7, "question": "Q", "answers": ["a"]}).encode(),
            json.dumps({"question_id": 7.0, "question": "Q", "answers": ["a"]}).encode(),
        ]
    )
    rows = list(read_rows(data))
    assert [r.line for r in rows] == [1, 2, 3, 4, 5]
    assert [r.ok for r in rows] == [True, True, False, True, False]
    assert rows[2].error is not None and rows[2].error.field == "id"
    assert "also the id of line 1" in str(rows[2].error)
    assert rows[4].error is not None and rows[4].error.field == "question_id"
    assert "line 4" in str(rows[4].error)


def test_rows_without_ids_are_numbered_and_never_clash():
    data = b"\n".join(json.dumps({"question": "Q", "answers": ["a"]}).encode() for _ in range(3))
    assert [r.item.id for r in read_rows(data) if r.item] == ["row-1", "row-2", "row-3"]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_answers_given_as_one_string_is_an_error_not_a_single_answer(tmp_path: Path, suffix: str):
    row = {"id": "s", "question": "Q", "answers": "notalist"}
    path = tmp_path / f"rows{suffix}"
    path.write_text(json.dumps([row]) if suffix == ".json" else json.dumps(row))
    (only,) = read_rows(path)
    assert only.item is None and only.error is not None
    assert only.error.field == "answers"
    assert "got a string" in str(only.error)
