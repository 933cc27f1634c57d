"""MiniLM through llama.cpp gives sentence-transformers' embeddings: same word pieces, the
same cut at 256 of them, the same mean pooling, to a cosine of 0.9999."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.sentence_encoder import MAX_TOKENS, SentenceEncoder, build_encoder, cut
from tests.support.needs import need_module

LONG = " ".join(f"word{n} and then some more text, line {n}." for n in range(200))
TEXTS = (
    "What is the capital of Australia?",
    "Canberra.",
    "",
    "Crème brûlée at a naïve café in 東京",
    "def second_largest(xs):\n    return sorted(set(xs))[-2]",
    LONG,  # far over 256 word pieces: cut, the closing [SEP] kept
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("store")
    path, fresh = build_encoder(store)
    assert fresh and path.is_file() and path.parent == store
    assert build_encoder(store) == (path, False)  # a second call keeps the file
    return path


@pytest.fixture(scope="module")
def encoder(built: Path):
    encoder = SentenceEncoder(built)
    yield encoder
    encoder.close()


def test_the_embeddings_are_sentence_transformers_own(encoder: SentenceEncoder) -> None:
    need_module("sentence_transformers")
    from sentence_transformers import SentenceTransformer

    from models.minilm import minilm_dir

    reference = SentenceTransformer(str(minilm_dir()), device="cpu")
    assert reference.max_seq_length == MAX_TOKENS
    wanted = reference.encode(list(TEXTS), normalize_embeddings=True)
    got = encoder.encode(TEXTS)
    assert got.shape == wanted.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * wanted).sum(axis=1)
    assert cosines.min() > 0.9999, cosines
    # the long text is cut as sentence-transformers cuts it: not the same as uncut
    tokens = encoder.llama.tokenize(LONG.encode(), add_bos=True, special=False)
    assert len(tokens) > MAX_TOKENS
    hf = reference.tokenizer(LONG, truncation=True, max_length=MAX_TOKENS)["input_ids"]
    assert cut(tokens) == hf


def test_cut_keeps_the_closing_token() -> None:
    assert cut([101, 5, 6, 102], limit=4) == [101, 5, 6, 102]
    assert cut([101, 5, 6, 7, 8, 102], limit=4) == [101, 5, 6, 102]


def test_relevance_reads_through_it(built: Path) -> None:
    from app.deciding.relevance import request_similarities
    from models.sentence_encoder import shared_encoder

    assert isinstance(shared_encoder(), SentenceEncoder)
    near, far = request_similarities(
        "What is the capital of Australia?",
        ["Canberra is the capital of Australia.", "Bake the bread for forty minutes."],
    )
    assert near > far + 0.2


def test_an_isolated_process_embeds_in_a_worker_of_its_own_with_the_same_vectors(
    encoder: SentenceEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What models.loader turns on when a judge is opened isolated (the app, the CLI)."""
    from models import sentence_encoder
    from models.backends.worker_backend import EngineProcess

    texts = ["Name a primary colour.", "Red is one."]
    engine = EngineProcess()
    monkeypatch.setitem(sentence_encoder._WORKER, "engine", engine)
    try:
        there = sentence_encoder.embed(texts)
        assert engine.pid is not None and engine.starts == 1
    finally:
        engine.close()
    np.testing.assert_allclose(there, encoder.encode(texts), atol=1e-5)
