"""The replies a LoRA judge is trained to write, as JSON pieces with their loss weights."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


# -- the reply, in the engine's JSON layout ------------------------------------
@dataclass(frozen=True)
class Piece:
    text: str
    value: bool  # True: chosen by the model (carries loss); False: forced by the schema
    weight: float = 1.0  # loss weight of a value piece (see restate_weights)


def json_pieces(value: Any) -> list[Piece]:
    """Serialize like json.dumps(value, ensure_ascii=False); structure and values apart."""
    pieces: list[Piece] = []

    def forced(text: str) -> None:
        if pieces and not pieces[-1].value:
            pieces[-1] = Piece(pieces[-1].text + text, False)
        else:
            pieces.append(Piece(text, False))

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            forced("{")
            for index, (key, item) in enumerate(node.items()):
                forced((", " if index else "") + json.dumps(key, ensure_ascii=False) + ": ")
                walk(item)
            forced("}")
        elif isinstance(node, list):
            forced("[")
            for index, item in enumerate(node):
                if index:
                    forced(", ")
                walk(item)
            forced("]")
        else:
            pieces.append(Piece(json.dumps(node, ensure_ascii=False), True))

    walk(value)
    return pieces


def restate_weights(
    pieces: list[Piece], weight: float, feedback_weight: float = 1.0
) -> list[Piece]:
    """Give `weight` to the value pieces that only restate the first score.

    Our targets score every criterion alike, so the first score is the whole
    decision and the other criteria, the overall and the verdict follow from
    it. At weight 1 the decision is one token in sixteen of a pair's loss and
    the model can lower its loss by learning to copy; a small weight keeps the
    copies consistent while the loss goes to the decision. Feedback text is
    not a restatement; it gets `feedback_weight`, because a single target's
    critique (~60 tokens) otherwise outweighs its one score token.
    """
    out: list[Piece] = []
    decided = False
    for index, piece in enumerate(pieces):
        is_feedback = index > 0 and pieces[index - 1].text.endswith('"feedback": ')
        if piece.value and is_feedback:
            piece = Piece(piece.text, True, feedback_weight)
        elif piece.value:
            if decided:
                piece = Piece(piece.text, True, weight)
            decided = True
        out.append(piece)
    return out


def single_reply(keys: Sequence[str], score: int, feedback: str) -> dict[str, Any]:
    return {"scores": dict.fromkeys(keys, score), "overall": score, "feedback": feedback}


def pairwise_reply(keys: Sequence[str], winner: str, scores: dict[str, int]) -> dict[str, Any]:
    a, b = _pair_scores(winner, scores)
    return {
        "scores": {"A": dict.fromkeys(keys, a), "B": dict.fromkeys(keys, b)},
        "overall": {"A": a, "B": b},
        "verdict": winner,
        "feedback": "",
    }


def _pair_scores(winner: str, scores: dict[str, int]) -> tuple[int, int]:
    return {
        "A": (scores["win"], scores["lose"]),
        "B": (scores["lose"], scores["win"]),
        "tie": (scores["tie"], scores["tie"]),
    }[winner]


def single_reply_first(
    keys: Sequence[str], score: int, feedback: str, criteria: bool
) -> dict[str, Any]:
    """Decision-first single reply: the grade, then (optionally) the criteria, the critique."""
    reply: dict[str, Any] = {"overall": score}
    if criteria:
        reply["scores"] = dict.fromkeys(keys, score)
    reply["feedback"] = feedback
    return reply


def pairwise_reply_first(
    keys: Sequence[str], winner: str, scores: dict[str, int], criteria: bool
) -> dict[str, Any]:
    """Decision-first pairwise reply: the verdict, then (optionally) the criteria. No
    feedback: the pairs carry no critique, and an empty one would teach the judge to
    write nothing when asked to explain."""
    reply: dict[str, Any] = {"verdict": winner}
    if criteria:
        a, b = _pair_scores(winner, scores)
        reply["scores"] = {"A": dict.fromkeys(keys, a), "B": dict.fromkeys(keys, b)}
    return reply
