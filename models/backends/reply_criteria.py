"""Criterion scores read on from an answer's read, so the answer is read once.

A head judge reads each answer as the model's own reply to its request
(`LlamaCppBackend.read_answers`). The criteria go on from that read: the judge's
next turn (the criteria, and the reference when there is one) in the model's chat
template, then one reply per criterion that starts `{"<key>": `, read side by side
as sequences sharing the answer and the turn, in the answer's own batch where they fit
(`models.backends.likelihood_reader.Continuation`). Each criterion's
level probabilities are read where its value goes, with the look-ahead the engine's
score mode uses ("1" starts 1 and 10). The request and the answer are never read
again: a criterion costs its few reply tokens, the turn is read once per answer. Where
the turn quotes a reference answer, the log-probability of each of its tokens is read
there: an answer that reached the right result makes the reference likely after it. A check
(`ReplyCriteria.check`) is one more reply read the same way, over true and false.
"""

from __future__ import annotations

from typing import Any

from models.backends.base import Message
from models.backends.likelihood_reader import Continuation
from models.backends.value_reader import candidate_probs
from models.readings import CHECK_LEVELS, SYSTEM_PROMPT, ReplyCriteria

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
    """The turn and each criterion's reply start, as token ids, how a value is read, and
    where the reference's tokens are in the turn (their log-probabilities are read)."""
    text = turn_text(backend, criteria.message)
    reference = backend.defused(criteria.reference.strip()) if criteria.reference else ""
    before, found, after = text.partition(reference) if reference else (text, "", "")
    pieces = [_tokens(backend, before, special=backend.has_chat_template)]
    pieces.append(_tokens(backend, found, special=False))
    pieces.append(_tokens(backend, after, special=backend.has_chat_template))
    turn = [t for piece in pieces for t in piece]
    keys = criteria.keys + ((criteria.check,) if criteria.check else ())
    levels = criteria.levels + ((CHECK_LEVELS,) if criteria.check else ())
    branches = tuple(tuple(_tokens(backend, f'{{"{key}": ', special=False)) for key in keys)
    table = backend.token_table

    def reading(n: int, logits: Any) -> Any:
        return candidate_probs(table, logits, "", levels[n])

    scored = (len(pieces[0]), len(pieces[0]) + len(pieces[1]))
    return Continuation(tuple(turn), branches, reading, scored)


def split_check(
    values: tuple[dict[str, float], ...] | None, criteria: ReplyCriteria | None
) -> tuple[tuple[dict[str, float], ...] | None, float | None]:
    """A continuation's values split into the criteria's and the check's probability of
    true (None where no check was asked or no probability fell on either level)."""
    if values is None or criteria is None or not criteria.check:
        return values, None
    *found, last = values
    total = sum(last.get(level, 0.0) for level in CHECK_LEVELS)
    return tuple(found), (last.get(CHECK_LEVELS[0], 0.0) / total if total else None)


def _tokens(backend: Any, text: str, special: bool) -> list[int]:
    if not text:
        return []
    return backend.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)
