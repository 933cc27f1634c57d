"""The pieces of free-text decoding: the stream of written tokens (with the grammar gate
and the JSON tracker fed as it grows), the value rules' state, and the guards a small
model needs (repeat penalty, a looping string closed)."""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.backends.base import SamplingParams, ValueDistribution, ValueRules
from models.backends.grammar_gate import GrammarGate
from models.backends.json_tracker import JsonTracker

REPEAT_WINDOW = 64
LOOP_TOKENS = 6


@dataclass
class RuleState:
    """Per-generation state of the value rules."""

    rules: ValueRules | None
    rng: np.random.Generator
    params: SamplingParams
    chosen: dict[Any, str] = field(default_factory=dict)
    distributions: list[ValueDistribution] = field(default_factory=list)


def keep_only(logits: np.ndarray, ids: np.ndarray) -> None:
    kept = logits[ids].copy()
    logits[:] = -np.inf
    logits[ids] = kept


class TokenStream:
    """The tokens written so far, kept in step with the grammar and the tracker.

    Tokens are evaluated only when the next logits are needed (`read`): the rest of the
    prompt goes with the text the schema forces at the start, and a chosen value with
    the forced text after it, in one llama.cpp call each. That is one call fewer per
    value, and exactly the calls score mode makes (`reply_walker`), so both modes read
    the same probabilities from the same numbers.
    """

    def __init__(self, llama: Any, gate: GrammarGate | None, unread: Sequence[int] = ()) -> None:
        self._llama = llama  # the loaded llama_cpp.Llama
        self._gate = gate
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._unread = list(unread)  # written (or prompt) tokens not evaluated yet
        self.tokens: list[int] = []
        self.pieces: list[str] = []
        self.tracker = JsonTracker()

    def write(self, tokens: list[int], grammar_accepted: bool = False) -> None:
        """Accept tokens into the grammar (unless done already) and feed the tracker."""
        model = self._llama._model
        for token in tokens:
            if self._gate is not None and not grammar_accepted:
                self._gate.accept(token)
            piece = self._decoder.decode(model.token_to_piece(token).rstrip(b"\0"))
            self.tokens.append(token)
            self.pieces.append(piece)
            self.tracker.feed(piece)
        self._unread.extend(tokens)

    def read(self) -> None:
        """Evaluate what is written, so the logits of the next position are there."""
        if self._unread:
            self._llama.eval(self._unread)
            self._unread = []

    def force(self, text: str, max_tokens: int) -> bool:
        """Write schema-forced text; False when the grammar refuses its first token."""
        llama = self._llama
        candidates = llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        room = max_tokens - len(self.tokens)
        accepted: list[int] = []
        for token in candidates[:room]:
            if self._gate is not None and not self._gate.allows(token):
                break
            accepted.append(token)
            if self._gate is not None:
                self._gate.accept(token)
        if not accepted:
            return False
        self.write(accepted, grammar_accepted=True)
        return True

    def tail(self, count: int = 8) -> str:
        return "".join(self.pieces[-count:])

    def text(self) -> str:
        return "".join(self.pieces) + self._decoder.decode(b"", final=True)


def stuck_in_string(stream: TokenStream) -> bool:
    """A free-text string whose last tokens are one token repeated: a small model looping.

    The string is closed rather than left to run to its length limit.
    """
    partial = stream.tracker.partial_value()
    if partial is None or not partial.startswith('"'):
        return False
    last = stream.tokens[-LOOP_TOKENS:]
    return len(last) == LOOP_TOKENS and len(set(last)) == 1


def end_chosen_value(tracker: JsonTracker, state: RuleState) -> None:
    """A number that reached its chosen value is complete: let the skeleton close it."""
    chosen = state.chosen.get(tracker.path())
    if chosen is not None and tracker.partial_value() == chosen:
        tracker.end_scalar()


def penalise_repeats(logits: np.ndarray, recent: list[int], penalty: float) -> None:
    """llama.cpp's repeat penalty: shrink the logits of recently written tokens."""
    if not recent:
        return
    ids = np.unique(np.array(recent, dtype=np.int64))
    values = logits[ids]
    logits[ids] = np.where(values > 0, values / penalty, values * penalty)
