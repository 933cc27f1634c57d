"""Which requests are alike: all-MiniLM-L6-v2 sentence embeddings (the encoder BERTScore uses,
shipped on PyPI), compared by cosine. Used to pick counterexamples that answer a *neighbouring*
request, like LLMBar's adversarial neighbour pairs, rather than any request of the same kind."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.sentence_encoder import embed


def neighbours_by_similarity(texts: Sequence[str]) -> list[list[int]]:
    """For each text, the indices of the others, most similar first (identical texts left out)."""
    vectors = embed(texts)
    similarity = vectors @ vectors.T
    ranked: list[list[int]] = []
    for i, row in enumerate(similarity):
        order = np.argsort(-row, kind="stable")
        ranked.append([int(j) for j in order if j != i and texts[j] != texts[i]])
    return ranked
