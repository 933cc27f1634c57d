"""The one cache of reads (training/decision/reads.py): rows keyed by pair, no text and no
label kept, the labels joined from the data when the fit reads it, a cut line skipped."""

from __future__ import annotations

import json
from pathlib import Path

from app.records import Judgment, Protocol, Status
from training.decision.reads import cache_row, labelled_rows, pair_key, training_pairs


def test_a_cached_row_keeps_values_not_texts_and_gets_its_label_back(tmp_path: Path):
    pairs = training_pairs("reference")
    first, second = pairs[0], pairs[1]
    judged = Judgment(
        id=first.id,
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        leaning="A",
        verdict_parts={"states": 0.5, "states_difference": 0.5, "reference_words_difference": 1.0},
    )
    row = cache_row("reference", first, judged)
    assert row["values"] == {"states": 0.5, "reference_words": 1.0}
    text = json.dumps(row)
    assert first.question not in text and first.answers[0] not in text and "label" not in row
    swapped = first.model_copy(update={"answers": first.answers[::-1]})
    assert pair_key(swapped) != pair_key(first)
    cache = tmp_path / "part0.jsonl"
    other = cache_row("reference", second, judged)
    cache.write_text(json.dumps(row) + "\n" + json.dumps(other)[:40] + "\n", encoding="utf-8")
    (found,) = labelled_rows(tmp_path)  # the line a stopped run cut short is left out
    assert found["label"] == first.label.winner and found["key"] == pair_key(first)


def test_the_state_heads_fitting_pairs_are_seen_by_states_and_the_reference_pairs_are_not():
    from training.decision.in_sample import seen_by

    fits = {"states": "state_head"}
    assert seen_by(training_pairs("autoj")[0], fits) == ["states"]
    assert seen_by(training_pairs("reference")[0], fits) == []
