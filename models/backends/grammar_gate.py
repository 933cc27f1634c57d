"""Grammar checks that cost little with a 262k-token vocabulary.

Applying a llama.cpp grammar to every token of a large vocabulary at every
step costs about 60 ms per token for Gemma 3 on two CPU cores, four times the
model's own step. Like llama.cpp's common sampler, we first pick a token as if
there were no grammar and ask the grammar about that one token; only when it
is refused do we filter the best few hundred tokens, and the whole vocabulary
only as a last resort.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

import numpy as np

TOP_K_FALLBACK = 256
_TOKEN_DTYPE = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class GrammarGate:
    def __init__(self, llama_cpp: Any, vocab: Any, grammar_text: str) -> None:
        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            vocab, grammar_text.encode("utf-8"), b"root"
        )
        if not self._sampler:
            raise ValueError("llama.cpp rejected the grammar built from the JSON schema")

    def allows(self, token: int) -> bool:
        return len(self.filter(np.array([token], dtype=np.int64))) == 1

    def filter(self, ids: np.ndarray) -> np.ndarray:
        """The subset of `ids` the grammar allows next, in the same order."""
        if not len(ids):
            return ids
        data = np.zeros(len(ids), dtype=_TOKEN_DTYPE)
        data["id"] = ids
        array = self._lib.llama_token_data_array(
            data=data.ctypes.data_as(self._lib.llama_token_data_p),
            size=len(ids),
            selected=-1,
            sorted=False,
        )
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(array))
        kept = data[: array.size]
        return kept["id"][np.isfinite(kept["logit"])].astype(np.int64)

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None


def choose_token(
    logits: np.ndarray,
    temperature: float,
    top_p: float,
    rng: np.random.Generator,
    gate: GrammarGate | None,
) -> int:
    """Greedy or top-p sampling over the logits, restricted by the grammar."""
    token = _sample(logits, np.arange(len(logits)), temperature, top_p, rng)
    if gate is None or gate.allows(token):
        return token
    finite = np.flatnonzero(np.isfinite(logits))
    k = min(TOP_K_FALLBACK, len(finite))
    top = finite[np.argpartition(-logits[finite], k - 1)[:k]] if k else finite
    top = top[np.argsort(-logits[top], kind="stable")]
    valid = gate.filter(top)
    if not len(valid):
        valid = gate.filter(finite[np.argsort(-logits[finite], kind="stable")])
    if not len(valid):
        raise RuntimeError("no token satisfies both the grammar and the value rules")
    return _sample(logits, valid, temperature, top_p, rng)


def _sample(
    logits: np.ndarray, ids: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator
) -> int:
    values = logits[ids]
    if temperature <= 0:
        return int(ids[int(np.argmax(values))])
    scaled = (values - values[np.isfinite(values)].max()) / temperature
    probs = np.exp(scaled)
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    cumulative = np.cumsum(probs[order])
    keep = order[: int(np.searchsorted(cumulative, top_p) + 1)]
    kept = probs[keep] / probs[keep].sum()
    return int(ids[keep[rng.choice(len(keep), p=kept)]])


# llama-cpp-python's schema converter lets raw control characters (newlines
# included) into JSON strings, which makes invalid JSON; llama.cpp's own
# converter excludes them. We patch the one rule.
LOOSE_CHAR_RULE = 'char ::= [^"\\\\] |'
STRICT_CHAR_RULE = 'char ::= [^"\\\\\\x7F\\x00-\\x1F] |'


@lru_cache(maxsize=32)
def schema_grammar(schema_json: str) -> str:
    """The llama.cpp grammar of a JSON schema, control characters kept out of strings."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    grammar = json_schema_to_gbnf(schema_json)
    return grammar.replace(LOOSE_CHAR_RULE, STRICT_CHAR_RULE)
