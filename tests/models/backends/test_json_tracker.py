"""JsonTracker: where in a JSON value we are, fed one character or many at a time.

Random chunkings use a seeded `random.Random` (hypothesis is not installed).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from models.backends.json_tracker import JsonTracker

JsonPath = tuple[str | int, ...]

PAIRWISE = {
    "scores": {
        "A": {"accuracy": 10, "relevance": 8, "clarity": 7},
        "B": {"accuracy": 1, "relevance": 6, "clarity": 4},
    },
    "overall": {"A": 9, "B": 3},
    "verdict": "tie",
    "feedback": 'A says "hi" \\ then\nnew line\tand tab, B has {braces} [and] : colons.',
}
MULTI = {
    "scores": {str(i): {"accuracy": i, "clarity": 10 - i} for i in range(1, 4)},
    "overall": {"1": 5, "2": 5, "3": 5},
    "ranking": [2, 1, 3],
    "feedback": "",
}
ODD = {
    "a": [{"b": 1}, {"b": [True, None, False]}, [], {}],
    "n": -12,
    "f": 2.5,
    "e": 1e3,
    "s": 'slash \\/ quote " end',
    "nested": {"deeper": {"deepest": [[1, 2], [3]]}},
}
DOCUMENTS = [PAIRWISE, MULTI, ODD]


def flatten(value: Any, path: JsonPath = ()) -> dict[JsonPath, Any]:
    """Every scalar of a parsed JSON value by its path: what `done` should hold at the end."""
    if isinstance(value, dict):
        result: dict[JsonPath, Any] = {}
        for key, item in value.items():
            result.update(flatten(item, (*path, key)))
        return result
    if isinstance(value, list):
        result = {}
        for index, item in enumerate(value):
            result.update(flatten(item, (*path, index)))
        return result
    return {path: value}


def state(tracker: JsonTracker) -> tuple[Any, ...]:
    return (
        tracker.path(),
        tracker.partial_value(),
        tracker.expecting_value(),
        tracker.before_value(),
        dict(tracker.done),
        tracker.finished,
    )


def texts() -> list[str]:
    out = []
    for document in DOCUMENTS:
        out.append(json.dumps(document))
        out.append(json.dumps(document, indent=2))
        out.append(json.dumps(document, separators=(",", ":")))
    return out


@pytest.mark.parametrize("text", texts())
def test_char_by_char_collects_every_scalar(text: str) -> None:
    tracker = JsonTracker()
    for char in text:
        tracker.feed(char)
    assert tracker.finished
    assert tracker.stack == []
    assert tracker.path() == ()
    assert tracker.partial_value() is None
    assert not tracker.expecting_value()
    assert tracker.done == flatten(json.loads(text))


@pytest.mark.parametrize("text", texts())
def test_random_chunkings_match_char_by_char(text: str) -> None:
    reference = JsonTracker()
    states = [state(reference)]
    for char in text:
        reference.feed(char)
        states.append(state(reference))
    rng = random.Random(len(text))  # str hashes vary between runs; lengths do not
    for _ in range(20):
        tracker = JsonTracker()
        offset = 0
        while offset < len(text):
            size = rng.choice([1, 2, 3, 4, 7, 16, 50])
            tracker.feed(text[offset : offset + size])
            offset = min(offset + size, len(text))
            assert state(tracker) == states[offset], (text[:offset], offset)
        assert tracker.done == reference.done


def test_whole_text_at_once() -> None:
    tracker = JsonTracker()
    tracker.feed(json.dumps(PAIRWISE))
    assert tracker.finished
    assert tracker.done == flatten(PAIRWISE)


# --------------------------------------------------------------------------- checkpoints

CHECKPOINTS: list[tuple[str, JsonPath, str | None, bool, bool]] = [
    # prefix, path(), partial_value(), expecting_value(), before_value()
    ("", (), None, True, False),
    ("  ", (), None, True, False),
    ("{", (), None, False, False),
    ('{"sco', (), None, False, False),
    ('{"scores"', ("scores",), None, False, True),
    ('{"scores" ', ("scores",), None, False, True),
    ('{"scores":', ("scores",), None, True, True),
    ('{"scores": ', ("scores",), None, True, True),
    ('{"scores": {', ("scores",), None, False, False),
    ('{"scores": {"A": {"accuracy": ', ("scores", "A", "accuracy"), None, True, True),
    ('{"scores": {"A": {"accuracy": 1', ("scores", "A", "accuracy"), "1", False, False),
    ('{"scores": {"A": {"accuracy": 10', ("scores", "A", "accuracy"), "10", False, False),
    ('{"scores": {"A": {"accuracy": 10,', ("scores", "A"), None, False, False),
    ('{"scores": {"A": {"accuracy": 10, "clarity": 7}', ("scores", "A"), None, False, False),
    ('{"scores": {"A": {"accuracy": 10, "clarity": 7}}, ', (), None, False, False),
    ('{"verdict": "', ("verdict",), '"', False, False),
    ('{"verdict": "t', ("verdict",), '"t', False, False),
    ('{"verdict": "tie', ("verdict",), '"tie', False, False),
    ('{"verdict": "tie"', ("verdict",), None, False, False),
    ('{"ranking": [', ("ranking", 0), None, True, False),
    ('{"ranking": [2', ("ranking", 0), "2", False, False),
    ('{"ranking": [2,', ("ranking", 1), None, True, False),
    ('{"ranking": [2, 1', ("ranking", 1), "1", False, False),
    ('{"ranking": [2, 1]', ("ranking",), None, False, False),
    ('{"ranking": [2, 1], "feedback": "a \\"', ("feedback",), '"a "', False, False),
    ('{"ranking": [2, 1], "feedback": "a \\', ("feedback",), '"a ', False, False),
    ('{"f": "}{,:][', ("f",), '"}{,:][', False, False),
    ('{"f": "x"}', (), None, False, False),
]


@pytest.mark.parametrize(
    ("prefix", "path", "partial", "expecting", "before"),
    CHECKPOINTS,
    ids=[repr(c[0]) for c in CHECKPOINTS],
)
def test_checkpoint(
    prefix: str, path: JsonPath, partial: str | None, expecting: bool, before: bool
) -> None:
    tracker = JsonTracker()
    tracker.feed(prefix)
    assert tracker.path() == path
    assert tracker.partial_value() == partial
    assert tracker.expecting_value() is expecting
    assert tracker.before_value() is before


def test_done_grows_as_values_complete() -> None:
    tracker = JsonTracker()
    tracker.feed('{"scores": {"A": {"accuracy": 10')
    assert tracker.done == {}  # a number is complete only once something follows it
    tracker.feed(" ")
    assert tracker.done == {("scores", "A", "accuracy"): 10}
    tracker.feed(', "clarity": 7}}, "overall": {"A": 9}, "verdict": "A')
    assert ("verdict",) not in tracker.done
    tracker.feed('"')
    assert tracker.done[("verdict",)] == "A"
    assert tracker.done[("overall", "A")] == 9
    assert tracker.done[("scores", "A", "clarity")] == 7
    assert not tracker.finished
    tracker.feed("}")
    assert tracker.finished


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("true", True),
        ("false", False),
        ("null", None),
        ("-1", -1),
        ("0", 0),
        ("7.5", 7.5),
        ("1e3", 1000.0),
        ("-2.5E-1", -0.25),
    ],
)
def test_scalar_literals(literal: str, value: Any) -> None:
    tracker = JsonTracker()
    tracker.feed('{"x": ' + literal + "}")
    assert tracker.done == {("x",): value}
    assert type(tracker.done[("x",)]) is type(value)


def test_integers_stay_integers() -> None:
    tracker = JsonTracker()
    tracker.feed('{"a": 7, "b": 7.0}')
    assert type(tracker.done[("a",)]) is int
    assert type(tracker.done[("b",)]) is float


@pytest.mark.parametrize(
    ("escaped", "decoded"),
    [
        ('\\"', '"'),
        ("\\\\", "\\"),
        ("\\n", "\n"),
        ("\\t", "\t"),
        ("\\r", "\r"),
        ("\\/", "/"),
        ('a\\"}\\"b', 'a"}"b'),
        ('\\\\\\"', '\\"'),
    ],
)
def test_string_escapes(escaped: str, decoded: str) -> None:
    text = '{"s": "' + escaped + '", "after": 1}'
    assert json.loads(text)["s"] == decoded  # the test's own fixture is valid JSON
    tracker = JsonTracker()
    tracker.feed(text)
    assert tracker.done == {("s",): decoded, ("after",): 1}
    assert tracker.finished


def test_unicode_escape_keeps_the_tracker_in_sync() -> None:
    """\\uXXXX is not decoded into the string value, but the structure after it is right."""
    tracker = JsonTracker()
    tracker.feed('{"s": "caf\\u00e9 \\u0022", "n": 3, "l": [1]}')
    assert tracker.finished
    assert tracker.done[("n",)] == 3
    assert tracker.done[("l", 0)] == 1


def test_escaped_quote_in_key() -> None:
    tracker = JsonTracker()
    tracker.feed('{"a\\"b": 1}')
    assert tracker.done == {('a"b',): 1}


def test_top_level_values() -> None:
    string = JsonTracker()
    string.feed('"abc"')
    assert string.done == {(): "abc"}
    assert string.finished
    number = JsonTracker()
    number.feed("42")
    assert number.partial_value() == "42"
    assert not number.finished
    number.feed("\n")
    assert number.done == {(): 42}
    assert number.finished
    array = JsonTracker()
    array.feed('[1, [2, 3], {"k": 4}]')
    assert array.done == {(0,): 1, (1, 0): 2, (1, 1): 3, (2, "k"): 4}
    assert array.finished


def test_nested_paths_while_writing() -> None:
    tracker = JsonTracker()
    tracker.feed('{"a": [{"b": 1}, {"b": [true, ')
    assert tracker.path() == ("a", 1, "b", 1)
    assert tracker.expecting_value()
    tracker.feed("nul")
    assert tracker.partial_value() == "nul"
    tracker.feed("l]}]}")
    assert tracker.done == {("a", 0, "b"): 1, ("a", 1, "b", 0): True, ("a", 1, "b", 1): None}
    assert tracker.finished


def test_never_raises_on_garbage() -> None:
    rng = random.Random(5)
    alphabet = '{}[]":,\\ abc123-.\n'
    for _ in range(300):
        tracker = JsonTracker()
        tracker.feed("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))))
        tracker.path()  # raising would fail the test; the answers keep their types
        assert tracker.partial_value() is None or isinstance(tracker.partial_value(), str)
        assert isinstance(tracker.expecting_value(), bool)
        assert isinstance(tracker.before_value(), bool)
