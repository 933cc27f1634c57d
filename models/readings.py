"""What a backend's read of an answer gives: its likelihoods and pooled states.

How well an answer fits its request, from the judge model's own likelihoods.

The model reads each answer twice as its own reply (the assistant turn of its
chat template): once after the request (`cond`) and once after an empty request
(`uncond`). An answer written for this request is far more likely given it than
given nothing; a polished answer to a neighbouring request is not. The
difference, PMI = cond - uncond, is that fit (GPTScore is the conditional part
alone). Per answer, from the log-probabilities of its tokens:

- cond_mean, cond_sum: how likely the answer is after the request, per token and in all;
- uncond_mean, uncond_sum: the same with no request (how generic or fluent it is);
- pmi_mean, pmi_sum: how much the request raised it;
- pmi_head: the PMI of the first tokens alone (how the answer opens);
- log_tokens: the log of its token count.

A pair's head reads the differences of these between the two answers. The states of a
read are pooled (`pooled`) into the mean and the last token state.

This is the bottom of what the backends and the heads share, so it lives with the
models and imports nothing of the core.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

HEAD_TOKENS = 16  # the opening tokens of `pmi_head`
FEATURES = (
    "cond_mean",
    "cond_sum",
    "uncond_mean",
    "uncond_sum",
    "pmi_mean",
    "pmi_sum",
    "pmi_head",
    "log_tokens",
)
SYSTEM_PROMPT = "You are a helpful assistant."  # the system turn of every read


@dataclass(frozen=True)
class ReplyCriteria:
    """Criterion scores read from an answer's read (`read_answers(criteria=...)`): after the
    answer, the judge's next turn is `message` (the criteria, the reference); then, for
    each criterion, a reply that starts `{"<key>": ` and is read over its `levels`. Where
    `reference` (a part of `message`) is given, the log-probability of each of its tokens
    there is read too: how well the answer just read predicts the right answer. With
    `check` (a key), one more reply `{"<check>": ` is read over true and false after the
    criteria's: the judge's own answer to the question `message` ends with (does the answer
    give the reference's result?)."""

    message: str
    keys: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    reference: str | None = None
    check: str | None = None


CHECK_LEVELS = ("true", "false")  # a check's reply, read over these


@dataclass(frozen=True)
class AnswerReading:
    """One answer read by the judge model: its likelihoods, and its states where asked."""

    cond: np.ndarray  # log-probability of each answer token after the request
    uncond: np.ndarray  # the same tokens after an empty request
    states: np.ndarray | None = None  # pooled states of the request-read (mean, last)
    # where criteria were asked (ReplyCriteria): each one's level probabilities, in order
    criteria: tuple[dict[str, float], ...] | None = None
    # and the log-probability of each token of their reference, read after the answer
    reference: np.ndarray | None = None
    # where a check was asked: the probability the judge's reply to it is true
    check: float | None = None

    def features(self) -> dict[str, float]:
        return likelihood_features(self.cond, self.uncond)


def likelihood_features(cond: Sequence[float], uncond: Sequence[float]) -> dict[str, float]:
    """The answer's likelihood features (the module's docstring) from its token log-probs."""
    c = np.asarray(cond, dtype=np.float64)
    u = np.asarray(uncond, dtype=np.float64)
    if c.shape != u.shape or not c.size:
        raise ValueError(
            f"likelihoods of {c.size} and {u.size} tokens: both reads must cover the same "
            "non-empty answer"
        )
    pmi = c - u
    return {
        "cond_mean": float(c.mean()),
        "cond_sum": float(c.sum()),
        "uncond_mean": float(u.mean()),
        "uncond_sum": float(u.sum()),
        "pmi_mean": float(pmi.mean()),
        "pmi_sum": float(pmi.sum()),
        "pmi_head": float(pmi[:HEAD_TOKENS].sum()),
        "log_tokens": math.log(c.size),
    }


def pooled(token_states: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Mean and last token state side by side: the answer's whole text and its end."""
    states = np.asarray(token_states, dtype=np.float32)
    return np.concatenate([states.mean(axis=0), states[-1]])
