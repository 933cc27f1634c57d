"""The one cache of reads (training/decision/reads.py): rows keyed by pair, no text and no
label kept, the labels joined from the data when the fit reads it, a cut line skipped."""

from __future__ import annotations

import json
from pathlib import Path

from app.records import JudgeItem, Judgment, Protocol, Status
from training.decision.reads import (
    cache_row,
    labelled_rows,
    pair_key,
    request_key,
    training_pairs,
)


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
    assert seen_by(training_pairs("autoj")[0], fits, "pj-qwen15-head") == ["states"]
    assert seen_by(training_pairs("reference")[0], fits, "pj-qwen15-head") == []


def test_the_default_heads_file_records_the_fitting_set_its_card_says_it_read():
    """The decision fit leaves out the pairs of the fitting set the judge's head file records:
    the default's head read 3,600 AlpacaEval pairs, up to 16 of one instruction (its card's
    command), not the 200 of the older head (session 39 left out the older head's pairs)."""
    from app.deciding.state_head import load_state_head
    from models.registry import MODELS_DIR, load_registry

    entry = load_registry().get("pj-qwen15-likelihood")
    fitted = load_state_head(MODELS_DIR / str(entry.judging.state_head)).fitted_on
    card = (MODELS_DIR / "judges" / entry.name / "MODEL_CARD.md").read_text(encoding="utf-8")
    card = " ".join(card.split())  # its lines wrap
    recipe = f"--alpacaeval {fitted['alpacaeval_pairs']} --per-request {fitted['per_request']}"
    assert recipe == "--alpacaeval 3600 --per-request 16" and recipe in card


def test_a_head_without_its_fitting_set_recorded_is_refused_naming_the_field():
    import pytest

    from training.decision.in_sample import state_head_texts

    with pytest.raises(ValueError, match=r"fitted_on\.alpacaeval_pairs"):
        state_head_texts("pj-qwen15-reward")


def test_the_reads_record_every_candidate_the_judges_record_leaves_out(tiny_gguf_model: Path):
    """A record that no longer weighs the reference's likelihood (left out by the fit) still
    has it read for the cache, or the fit could never choose it again; the verdict moves by
    no more than the read weight times its value."""
    import pytest

    from app.deciding.decision import DecisionRecord, Fitted, Signal
    from app.judging.config import JudgeConfig, JudgeParts
    from app.judging.settings import with_changes
    from app.records import JudgeItem
    from tests.support.head_configs import random_reply_head, tiny_service
    from training.decision.fit_config import load_config
    from training.decision.reads import READ_WEIGHT, reading_config, reading_record

    service, backend = next(tiny_service(tiny_gguf_model, "tiny-head"))
    try:
        head = random_reply_head(backend, 2)
        states = Signal(
            name="states", value="the states", share="states", reads=("states",), cost="a read",
            weight=1.0, fitted=Fitted(by="hand", rows="none"),
        )  # fmt: skip
        record = DecisionRecord(judge="tiny", signals=(states,), doubt_below=0.5)
        base = JudgeConfig(protocol=Protocol.PAIRWISE, parts=JudgeParts(head=head, decision=record))
        config = with_changes(base, {"criterion_scores": False})
        item = JudgeItem(
            id="r",
            question="What is 7 times 8?",
            answers=("56", "7 times 8 is 54."),
            reference="7 times 8 is 56.",
        )
        alone = service.judge(item, config)
        reading = reading_config(config)
        read = service.judge(item, reading)
    finally:
        backend.close()
    main = load_config().main_part()
    candidates = {signal.name for signal in main.signals}
    assert set(reading.parts.decision.used()) == candidates | {"states"}
    assert "reward" not in candidates  # read apart, on its own pairs (reward_reads)
    assert reading_record(reading.parts.decision, main.signals) == reading.parts.decision
    assert "reference_likelihood_difference" not in alone.verdict_parts
    for name in ("reference_likelihood", "reference_check", "reference_words"):
        assert f"{name}_difference" in read.verdict_parts, name
    moved = abs(read.verdict_parts["score"] - alone.verdict_parts["score"])
    values = [abs(v) for k, v in read.verdict_parts.items() if k.endswith("_difference")]
    assert moved <= READ_WEIGHT * sum(values) + 1e-4
    assert read.winner == alone.winner
    assert read.verdict_probs["A"] == pytest.approx(alone.verdict_probs["A"], abs=1e-4)


def test_a_pair_read_with_the_judges_own_answer_joins_its_row_with_states_out_of_fold(
    tmp_path: Path,
):
    """A head-fitting pair read again with the own answer keeps its out-of-fold states (the
    engine's read of it is in-sample) and gains only the own answer's values; a pair the head
    never saw is taken as read."""
    import gzip

    from training.datasets.likelihood_data import OUT_OF_FOLD

    with gzip.open(OUT_OF_FOLD, "rt", encoding="utf-8") as lines:
        fitting = json.loads(lines.readline())
    reference = training_pairs("reference-bare")[0]
    own = {"self_reference_check": 2.0, "self_reference_words": 0.5}
    read_again = fitting | {"set": "autoj", "values": {"states": 9.0, **own}}
    bare = cache_row(
        "reference-bare",
        reference,
        Judgment(
            id=reference.id,
            protocol=Protocol.PAIRWISE,
            status=Status.OK,
            winner="A",
            leaning="A",
            verdict_parts={"states_difference": 0.5, "self_reference_check_difference": -1.0},
        ),
    )
    folder = tmp_path / "own-reads"
    folder.mkdir()
    text = "\n".join(json.dumps(row) for row in (read_again, bare)) + "\n"
    (folder / "part0.jsonl").write_text(text, encoding="utf-8")
    rows = {row["key"]: row for row in labelled_rows(tmp_path, own_reads=folder)}
    joined = rows[fitting["key"]]
    assert joined["set"] == "head-fitting" and joined["out_of_fold"] == ["states"]
    # states out of fold, not 9.0; the own answer's text signals computed again from the texts
    text = ("self_reference_words", "self_reference_order")
    read = {k: v for k, v in joined["values"].items() if not k.startswith(text)}
    assert read == fitting["values"] | {"self_reference_check": 2.0}
    assert joined["label"] is not None
    taken = {k: v for k, v in rows[pair_key(reference)]["values"].items() if not k.startswith(text)}
    assert taken == {"states": 0.5, "self_reference_check": -1.0}
    assert rows[pair_key(reference)]["label"] == reference.label.winner
    assert labelled_rows(tmp_path) == []  # without own_reads, none of them


def test_an_answer_written_where_programs_could_compute_it_replaces_one_written_before(
    tmp_path: Path,
):
    from training.decision.reads import own_answers

    written = {"request": "r1", "set": "reference", "text": "It is 24.", "mean_logprob": -0.1}
    computed = written | {"text": "33", "computed": True}
    (tmp_path / "part0.jsonl").write_text(json.dumps(computed) + "\n", encoding="utf-8")
    (tmp_path / "part1.jsonl").write_text(json.dumps(written) + "\n", encoding="utf-8")
    assert own_answers(tmp_path)["r1"]["text"] == "33"  # whichever file holds it first


def test_a_probe_that_computed_nothing_replaces_an_old_answer_but_not_a_computed_one(
    tmp_path: Path,
):
    from training.decision.reads import own_answers

    old = {"request": "r1", "set": "autoj", "text": "It is 24.", "mean_logprob": -0.1}
    probed = old | {"text": "", "mean_logprob": None, "computed": False}
    computed = old | {"text": "33", "computed": True}
    rows = [old, probed, computed | {"request": "r2"}, probed | {"request": "r2"}]
    (tmp_path / "part0.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8"
    )
    found = own_answers(tmp_path)
    assert found["r1"]["computed"] is False and found["r1"]["text"] == ""  # probed: none
    assert found["r2"]["text"] == "33"  # a program's result outranks a later empty probe


def test_only_the_pairs_whose_kept_answer_a_program_computed_are_read_again():
    from app.deciding.state_head import QUESTION_CHARS
    from training.decision.reads import answered

    item = JudgeItem(id="p", question="What is 7 times 8?", answers=("56", "54"))
    key = request_key(item.question[:QUESTION_CHARS])
    computed = {key: {"request": key, "text": "56", "computed": True}}
    probed = {key: {"request": key, "text": "", "computed": False}}
    assert answered(item, computed, computed=True) and answered(item, probed)
    assert not answered(item, probed, computed=True) and not answered(item, {}, computed=False)


def test_the_own_answers_text_signals_are_computed_again_from_the_texts():
    """A pair read before `self_reference_order` existed, against a computed "6.0", gains the
    order's value and its words read against "6" (as the engine now keeps the result)."""
    from app.deciding.state_head import QUESTION_CHARS
    from training.decision.reads import with_own_text_values

    item = next(p for p in training_pairs("reference-bare") if p.question.startswith("Sort these"))
    key = request_key(item.question[:QUESTION_CHARS])
    words = [w for w in item.answers[0].replace(",", " ").split() if w.isdigit()]
    kept = {
        key: {"request": key, "text": f"[{', '.join(sorted(words, key=int))}]"}
        | {"mean_logprob": -0.1, "tokens": 20, "finished": True, "computed": True}
    }
    row = {"key": pair_key(item), "set": "reference-bare", "values": {"self_reference_check": 1.0}}
    again = with_own_text_values([row, row | {"key": "elsewhere"}], kept)
    assert again[1] == row | {"key": "elsewhere"}  # not a training pair: as it was
    assert again[0]["values"]["self_reference_check"] == 1.0
    assert "self_reference_order_computed" in again[0]["values"]
    assert with_own_text_values([row], {}) == [row]  # no answer kept: as it was
