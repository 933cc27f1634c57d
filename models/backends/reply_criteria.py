"""Criterion scores read on from an answer's read, so the answer is read once.

A head judge reads each answer as the model's own reply to its request
(`LlamaCppBackend.read_answers`). The criteria go on from that read: the judge's
next turn (the criteria, and the reference when there is one) in the model's chat
template, then one reply per criterion that starts `{"<key>": `, read side by side
as sequences sharing the answer and the turn, in the answer's own batch where they fit
(`models.backends.likelihood_reader.Continuation`). Each criterion's
level probabilities are read where its value goes, with the look-ahead the engine's
score mode uses ("1" starts 1 and 10). The request and the answer are never read
again: a criterion costs its few reply tokens, the turn is read once per answer.
"""

from __future__ import annotations

from typing import Any

from models.backends.base import Message
from models.backends.likelihood_reader import Continuation
from models.backends.value_reader import candidate_probs
from models.readings import SYSTEM_PROMPT, ReplyCriteria

_ANSWER_SLOT = "PJ-ANSWER-SLOT-7F3A"
_TURN_SLOT = "PJ-TURN-SLOT-7F3A"


def turn_text(backend: Any, message: str) -> str:
    """The text after an answer's end-of-turn token up to the judge's reply: `message` as
    the next user turn in the model's chat template (its plain layout without one)."""
    messages = [
        Message("system", SYSTEM_PROMPT),
        Message("user", "?"),
        Message("assistant", _ANSWER_SLOT),
        Message("user", _TURN_SLOT),
    ]
    try:
        rendered = backend.render_prompt(messages)
    except Exception:  # a chat template without a system turn (jinja2 raises), as the read
        rendered = backend.render_prompt(messages[1:])
    after = rendered[rendered.index(_ANSWER_SLOT) + len(_ANSWER_SLOT) :]
    end_of_turn = backend.end_of_turn_text()
    if end_of_turn and after.startswith(end_of_turn):  # the read ends with that token
        after = after[len(end_of_turn) :]
    return after.replace(_TURN_SLOT, backend.defused(message.strip()))


def continuation(backend: Any, criteria: ReplyCriteria) -> Continuation:
    """The turn and each criterion's reply start, as token ids, and how its value is read."""
    special = backend.has_chat_template
    turn = backend.llama.tokenize(
        turn_text(backend, criteria.message).encode("utf-8"), add_bos=False, special=special
    )
    branches = tuple(
        tuple(backend.llama.tokenize(f'{{"{key}": '.encode(), add_bos=False, special=False))
        for key in criteria.keys
    )
    table = backend.token_table

    def reading(n: int, logits: Any) -> Any:
        return candidate_probs(table, logits, "", criteria.levels[n])

    return Continuation(tuple(turn), branches, reading)
