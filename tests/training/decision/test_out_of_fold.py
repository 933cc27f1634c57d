"""The head's fitting pairs in the one cache (training/decision/out_of_fold.py): each pair's
`states` value comes from the head refitted without its request, read by the tiny real model;
the fit then counts those pairs, where the same pairs read in-sample stay left out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.deciding.state_head import StateHead
from app.records import JudgeItem, Label
from models.readings import FEATURES
from training.decision.out_of_fold import head_fitting_rows
from training.heads.state_head import FOLDS

QUESTIONS = [f"Is {n} an even number?" for n in range(10)]
HEAD = StateHead(
    base_file="tiny.gguf",
    reads="reply",
    weights=(0.0, 0.0),  # the shipped weights play no part: each fold is fitted anew
    fitted_on={"variant": "states + likelihood + relevance", "C": 0.01},
)


def _pairs(flipped: str | None = None) -> list[JudgeItem]:
    pairs = []
    for n, question in enumerate(QUESTIONS):
        right, wrong = ("Yes, it is even.", "No.") if n % 2 == 0 else ("No, it is odd.", "Yes.")
        for k in range(3):
            answers, winner = ((right, wrong), "A") if k % 2 == 0 else ((wrong, right), "B")
            if question == flipped:
                winner = "B" if winner == "A" else "A"
            pairs.append(
                JudgeItem(id=f"{n}-{k}", question=question, answers=answers,
                          label=Label(winner=winner))
            )  # fmt: skip
    return pairs


@pytest.fixture(scope="module")
def readings(tiny_gguf_model: Path, tmp_path_factory: pytest.TempPathFactory):
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from models.readings import pooled
    from training.datasets.likelihood_data import cut
    from training.device.reading_cache import ReadingCache
    from training.heads.likelihood_fit import readings_of

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=512, n_threads=1))
    cache = ReadingCache(tmp_path_factory.mktemp("reads"))

    def read_cond(question: str, answer: str):
        reading = backend.read_reply(question, answer)
        return reading.logprobs, pooled(reading.states)

    def read_uncond(answer: str) -> np.ndarray:
        return backend.read_reply("", answer, states=False).logprobs

    pairs = _pairs()
    texts = list(dict.fromkeys(cut(p.question, a) for p in pairs for a in p.answers))
    cache.fill(texts, read_cond, read_uncond, "part0")
    backend.close()
    return readings_of(cache, pairs)


def test_a_pairs_states_come_from_the_head_fitted_without_its_request(readings):
    rows = head_fitting_rows(_pairs(), readings, HEAD)
    assert len({row["request"] for row in rows}) == len(QUESTIONS) >= FOLDS
    assert all(row["out_of_fold"] == ["states"] and row["set"] == "head-fitting" for row in rows)
    assert set(rows[0]["values"]) == {"states", "relevance", "length", *FEATURES}
    # the labels of one request turned round: its own pairs' values stay, as no fold that
    # judged them saw those labels; the pairs the changed fold was fitted for move
    flipped = head_fitting_rows(_pairs(QUESTIONS[0]), readings, HEAD)
    own = [n for n, row in enumerate(rows) if row["id"].startswith("0-")]
    others = [n for n in range(len(rows)) if n not in own]
    for n in own:
        assert flipped[n]["values"]["states"] == pytest.approx(rows[n]["values"]["states"])
    moved = [abs(flipped[n]["values"]["states"] - rows[n]["values"]["states"]) for n in others]
    assert max(moved) > 1e-6
    # the right answer leads out of fold on most pairs (the tiny model's states tell them apart)
    right = [(row["values"]["states"] > 0) == (p.label.winner == "A") for row, p in
             zip(rows, _pairs())]  # fmt: skip
    assert np.mean(right) > 0.5


def test_the_fit_counts_a_pair_read_out_of_fold_and_leaves_the_in_sample_one_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    import json

    from training.decision import reads

    item = _pairs()[0]
    row = {"key": reads.pair_key(item), "request": "r", "reference": False, "values": {}}
    lines = [row | {"set": "autoj"}, row | {"set": "head-fitting", "out_of_fold": ["states"]}]
    (tmp_path / "part0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    monkeypatch.setattr(reads, "training_pairs", lambda name: [item])
    monkeypatch.setattr(reads, "seen_by", lambda item, fits, judge: ["states"])
    found = reads.labelled_rows(tmp_path, {"states": "state_head"}, "pj-qwen15-likelihood")
    assert [(r["set"], r["seen_by"], r["label"]) for r in found] == [
        ("autoj", ["states"], "A"),
        ("head-fitting", [], "A"),
    ]
