"""Score mode: write a JSON reply whose every value is read from probabilities.

In score mode no free text is generated: the schema fixes every brace, key and
comma, and every value position has a `ValueRule`. So a reply is a walk: feed
the forced text, read the candidates' probabilities at each value, write the
chosen value, go on. The walker is a generator of `Feed` / `Rewind` requests
(see `models.backends.value_reader`), so a runner can serve many walkers in one
llama.cpp batch.

Each value is written the way full generation writes it (the most probable
token consistent with the chosen value, then the next), and the text the
schema forces after it goes into the same feed, so a decision-first pairwise
reply with criteria costs one feed per value (two where a look-ahead splits
1 from 10) and one without criteria costs none beyond the prompt.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.backends.base import OutputSpec, ValueDistribution
from models.backends.json_skeleton import JsonSkeleton
from models.backends.json_tracker import JsonTracker
from models.backends.value_constraints import TokenTable, entropy_of
from models.backends.value_reader import Feed, Request, candidate_probs, pick_value


class ReplyWalkError(RuntimeError):
    """The output spec has a position score mode cannot fill (free text, an open shape)."""


@dataclass
class WalkedReply:
    text: str
    tokens: int  # tokens written (structure and values)
    distributions: list[ValueDistribution] = field(default_factory=list)


Walk = Generator[Request, "np.ndarray | None", WalkedReply]


@dataclass
class ReplyWalker:
    """Walks one reply for `output`; `tokenize` turns forced text into tokens."""

    table: TokenTable
    tokenize: Callable[[str], list[int]]
    output: OutputSpec
    temperature: float = 0.0
    seed: int = 0

    def walk(self) -> Walk:
        """The reply. The first request is a feed of the text the schema forces at the
        start, which the runner evaluates together with the prompt."""
        if self.output.json_schema is None or self.output.value_rules is None:
            raise ReplyWalkError("score mode needs a JSON schema and value rules")
        rules = self.output.value_rules
        skeleton = JsonSkeleton(self.output.json_schema)
        tracker = JsonTracker()
        rng = np.random.default_rng(self.seed)
        chosen: dict[Any, str] = {}
        reply = WalkedReply(text="", tokens=0)
        pieces: list[str] = []
        pending: list[int] = []
        logits: np.ndarray | None = None

        def write(tokens: list[int]) -> None:
            for token in tokens:
                piece = self.table.pieces[token]
                pieces.append(piece)
                tracker.feed(piece)
            pending.extend(tokens)
            reply.tokens += len(tokens)

        while not tracker.finished:
            forced = skeleton.forced_text(tracker)
            if forced:
                write(self.tokenize(forced))
                continue
            if pending or logits is None:
                logits = yield Feed(tuple(pending))
                assert logits is not None
                pending.clear()
            path = tracker.path()
            partial = tracker.partial_value()
            if partial is None and not tracker.expecting_value():
                raise ReplyWalkError(f"nothing to write at {path}: the schema leaves it open")
            rule = rules.rule_for(path, tracker.done)
            if rule is None:
                raise ReplyWalkError(f"score mode has no value rule for {path}")
            written = partial or ""
            if path not in chosen:
                entropy = entropy_of(logits) if rule.record else None
                probs = yield from candidate_probs(self.table, logits, written, rule.candidates)
                if rule.record:
                    reply.distributions.append(
                        ValueDistribution(path=path, probs=probs, entropy=entropy)
                    )
                allowed = rule.allowed if rule.allowed is not None else rule.candidates
                chosen[path] = pick_value(probs, allowed, self.temperature, rng)
            ids, _ = self.table.commitments(written, (chosen[path],))
            ids = _fitting(self.table, ids, written, chosen[path], tracker, skeleton)
            if not len(ids):
                raise ReplyWalkError(f"no token writes {chosen[path]!r} at {path}")
            write([int(ids[int(np.argmax(logits[ids]))])])
            if tracker.partial_value() == chosen[path]:
                tracker.end_scalar()
        reply.text = "".join(pieces)
        return reply


def _fitting(
    table: TokenTable,
    ids: np.ndarray,
    written: str,
    value: str,
    tracker: JsonTracker,
    skeleton: JsonSkeleton,
) -> np.ndarray:
    """The tokens among `ids` whose text after `value` is the structure the schema forces
    there (`"A"}` closes a reply whose last key is the verdict; `"A",` would open a key
    that does not exist). Full generation gets this from its grammar; here it comes from
    the skeleton, whitespace aside."""
    probe = copy.deepcopy(tracker)
    probe.feed(value[len(written) :])
    if probe.partial_value() == value:
        probe.end_scalar()
    follows = _SPACE.sub("", skeleton.forced_text(probe))
    kept = []
    for token in ids.tolist():
        text = table.pieces[token]
        text = written + (text if written else text.lstrip())
        if follows.startswith(_SPACE.sub("", text[len(value) :])):
            kept.append(token)
    return np.array(kept, dtype=np.int64)


_SPACE = re.compile(r"\s+")
LOOKAHEAD_CELLS = 4  # a look-ahead holds a few cells until it rewinds


def reply_token_bound(output: OutputSpec, tokenize: Callable[[str], list[int]]) -> int:
    """KV cells a score-mode reply may need at most: the reply with the longest value at
    every position, tokenized, with room for look-aheads and chunk boundaries."""
    if output.json_schema is None:
        raise ReplyWalkError("score mode needs a JSON schema")
    text = json.dumps(_longest(output.json_schema))
    return len(tokenize(text)) * 5 // 4 + LOOKAHEAD_CELLS


def _longest(node: dict[str, Any]) -> Any:
    if "enum" in node:
        return max(node["enum"], key=lambda value: len(json.dumps(value)))
    kind = node.get("type")
    if kind == "object":
        return {key: _longest(value) for key, value in node.get("properties", {}).items()}
    if kind == "array":
        return [_longest(node.get("items", {}))] * int(node.get("maxItems") or 1)
    if kind == "string":
        raise ReplyWalkError("score mode writes no free text; leave the feedback out")
    return 0
