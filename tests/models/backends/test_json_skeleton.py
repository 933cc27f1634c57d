"""JsonSkeleton: the text a schema forces, between the values a model chooses."""

from __future__ import annotations

import json

import pytest

from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule
from app.formats.output_format import json_schema
from app.records import Protocol
from models.backends.json_skeleton import JsonSkeleton
from models.backends.json_tracker import JsonTracker

RULE = ScoringRule(load_catalog().specs_for("default")[:3])


def _fill(schema: dict, value_for) -> str:
    """Write a whole output: forced text from the skeleton, values from `value_for(path)`."""
    skeleton, tracker, text = JsonSkeleton(schema), JsonTracker(), ""
    for _ in range(100):
        forced = skeleton.forced_text(tracker)
        tracker.feed(forced)
        text += forced
        if tracker.finished:
            return text
        value = value_for(tracker.path())
        tracker.feed(value)
        tracker.end_scalar()
        text += value
    raise AssertionError(f"never finished: {text!r}")


def _values(path: tuple) -> str:
    if path == ("verdict",):
        return '"tie"'
    if path[0] == "feedback":
        return '"fine"'
    if path[0] == "ranking":
        return str(path[1] + 1)
    return "5"


@pytest.mark.parametrize(
    ("protocol", "answers"),
    [(Protocol.SINGLE, 1), (Protocol.ANCHORED, 1), (Protocol.PAIRWISE, 2), (Protocol.MULTI, 4)],
)
def test_forced_text_plus_values_is_the_schema_json(protocol: Protocol, answers: int) -> None:
    schema = json_schema(protocol, RULE, answers)
    data = json.loads(_fill(schema, _values))
    assert list(data) == list(schema["properties"])
    if protocol is Protocol.MULTI:
        assert data["ranking"] == [1, 2, 3, 4]
        assert list(data["scores"]) == ["1", "2", "3", "4"]


def test_the_first_forced_chunk_reaches_the_first_score() -> None:
    skeleton = JsonSkeleton(json_schema(Protocol.PAIRWISE, RULE, 2))
    assert skeleton.forced_text(JsonTracker()) == '{"scores": {"A": {"accuracy": '


def test_nothing_is_forced_inside_a_value_or_a_free_schema() -> None:
    tracker = JsonTracker()
    tracker.feed('{"scores": {"accuracy": 1')
    skeleton = JsonSkeleton(json_schema(Protocol.SINGLE, RULE, 1))
    assert skeleton.forced_text(tracker) == ""  # "1" may still become "10"
    tracker.end_scalar()
    assert skeleton.forced_text(tracker) == ', "instruction_following": '
    free = JsonSkeleton({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert free.forced_text(JsonTracker()) == ""  # keys not fixed: no "{" forced either


def test_after_the_last_value_the_object_closes() -> None:
    tracker = JsonTracker()
    skeleton = JsonSkeleton(json_schema(Protocol.SINGLE, RULE, 1))
    tracker.feed('{"scores": {"accuracy": 1, "instruction_following": 2, "relevance": 3')
    tracker.end_scalar()
    assert skeleton.forced_text(tracker) == '}, "overall": '
    tracker.feed('}, "overall": 2, "feedback": "ok"')
    assert skeleton.forced_text(tracker) == "}"
