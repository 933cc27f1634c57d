"""The reward model of issue 41 (training/lora/reward_model.py), run end to end on the tiny real
model on the CPU, as the GPU run will: pairs as the engine's token ids, the head reading the
state the engine reads, Bradley-Terry training that learns a learnable preference, and a run
cut short that goes on from its checkpoint to the same result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from app.records import JudgeItem, Label
from tests.models.backends.conftest import backend  # noqa: F401 - a fixture

torch = pytest.importorskip("torch")

COLOURS = ("red", "blue", "green", "yellow", "purple", "orange")


def items() -> list[JudgeItem]:
    """Pairs whose better answer says "Yes." (A or B by turns), and one tie."""
    found = []
    for n, colour in enumerate(COLOURS):
        question = f"Is {colour} a colour?"
        answers = ("Yes.", "No.") if n % 2 == 0 else ("No.", "Yes.")
        label = Label(winner="A" if n % 2 == 0 else "B")
        found.append(JudgeItem(id=f"p{n}", question=question, answers=answers, label=label))
    tie = Label(winner="tie")
    found.append(JudgeItem(id="t", question="Say hi.", answers=("Hi.", "Hello."), label=tie))
    return found


@pytest.fixture(scope="module")
def pairs(backend):  # noqa: F811
    from training.datasets.reward_data import pair_tokens

    return pair_tokens(backend, items())


def fresh_base(tiny_gguf_model: Path):  # type: ignore[no-untyped-def]
    from training.device.gpu_reads import load_model

    torch.set_num_threads(1)
    return load_model(tiny_gguf_model, "cpu")


def test_pairs_are_the_engines_reads_with_a_target_each(pairs) -> None:
    assert len(pairs.first) == len(COLOURS) + 1
    assert len(pairs.keys) == 2 * len(COLOURS) + 2  # each (request, answer) read once
    assert pairs.target.tolist() == [1.0, 0.0] * 3 + [0.5]
    assert pairs.group.tolist() == list(range(len(COLOURS) + 1))  # one request each
    assert pairs.lengths.sum() == len(pairs.flat)


def test_the_head_reads_the_state_the_engine_reads(backend, pairs, tiny_gguf_model: Path) -> None:  # noqa: F811
    from models.readings import pooled
    from training.lora.reward_model import RewardModel, batch_tensors

    model = RewardModel(fresh_base(tiny_gguf_model), rank=4, alpha=8)  # LoRA starts as nothing
    reads = np.arange(len(pairs.keys))
    ids, lengths = batch_tensors(pairs, reads, "cpu")
    with torch.no_grad():
        ours = model.states(ids, lengths).numpy()
    for row, item in enumerate(items()[:2]):
        engine = pooled(backend.read_reply(item.question, item.answers[0]).states)
        last = engine[len(engine) // 2 :]  # the engine keeps [mean, last]
        np.testing.assert_allclose(ours[2 * row], last, rtol=1e-3, atol=1e-3)


def test_training_learns_a_learnable_preference(
    pairs, tiny_gguf_model: Path, tmp_path: Path
) -> None:
    from training.lora.reward_model import TrainSettings, train

    settings = TrainSettings(steps=40, batch_pairs=7, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=20)  # fmt: skip
    state = train(fresh_base(tiny_gguf_model), pairs, tmp_path, settings, "cpu")
    assert state["step"] == 40
    assert np.mean(state["losses"][-5:]) < 0.5 * np.mean(state["losses"][:5])
    assert state["decided"] == 40 * 6 and state["right"] >= 0.8 * state["decided"]  # the ties aside
    head = json.loads((tmp_path / "value_head.json").read_text())
    assert len(head["weights"]) == fresh_base(tiny_gguf_model).config.hidden_size
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    record = json.loads((tmp_path / "training.json").read_text())
    assert record["device"] == "cpu" and record["step"] == 40


def graded() -> list[JudgeItem]:
    """Single answers rated 9 ("Yes.") or 2 ("No."), and one without a rating (left out)."""
    found = [
        JudgeItem(
            id=f"g{n}",
            question=f"Is {colour} a colour?",
            answers=(answer,),
            label=Label(score=score),
        )
        for n, colour in enumerate(COLOURS)
        for answer, score in (("Yes.", 9.0), ("No.", 2.0))
    ]
    return [*found, JudgeItem(id="u", question="Say hi.", answers=("Hi.",))]


def test_grades_train_the_same_head_to_a_rating(
    backend,  # noqa: F811
    tiny_gguf_model: Path,
    tmp_path: Path,
) -> None:
    from training.datasets.reward_data import GradeRows, grade_tokens, load_data
    from training.lora.reward_model import TrainSettings, train

    rows = grade_tokens(backend, graded())
    assert rows.rating.tolist() == [9.0, 2.0] * len(COLOURS)
    assert rows.group.tolist() == [n // 2 for n in range(2 * len(COLOURS))]
    rows.save(tmp_path / "grades.npz")
    assert isinstance(load_data(tmp_path / "grades.npz"), GradeRows)
    settings = TrainSettings(steps=30, batch_pairs=6, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=30, folds=2, fold=1)  # fmt: skip
    state = train(fresh_base(tiny_gguf_model), rows, tmp_path / "run", settings, "cpu")
    assert np.mean(state["losses"][-5:]) < 0.5 * np.mean(state["losses"][:5])
    assert state["right"] >= 0.8 * state["decided"]  # on the right side of 5.5
    assert state["held_out"]["rows"] == 6 and state["held_out"]["spearman"] > 0.8


def test_an_answer_graded_twice_is_one_read_rated_the_mean(backend) -> None:  # noqa: F811
    """Every table lines up read for read: a repeated (request, answer) is read once (the
    training split holds two such rows) with the mean of its ratings."""
    from training.datasets.reward_data import grade_tokens

    yes = graded()[0]  # rated 9
    again = yes.model_copy(update={"id": "again", "label": Label(score=7.0)})
    twice = [*graded()[:2], again]
    rows = grade_tokens(backend, twice)
    assert rows.rating.tolist() == [8.0, 2.0]
    assert len(rows.keys) == len(rows.lengths) == len(rows.answer_lengths) == len(rows.group) == 2
    assert rows.lengths.sum() == len(rows.flat)


def test_a_run_cut_short_goes_on_from_its_checkpoint_to_the_same_result(
    pairs, tiny_gguf_model: Path, tmp_path: Path
) -> None:
    from training.lora.reward_model import TrainSettings, train

    settings = TrainSettings(steps=6, batch_pairs=3, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=2)  # fmt: skip
    whole = train(fresh_base(tiny_gguf_model), pairs, tmp_path / "whole", settings, "cpu")
    cut = train(fresh_base(tiny_gguf_model), pairs, tmp_path / "cut",
                TrainSettings(**{**vars(settings), "steps": 3}), "cpu")  # fmt: skip
    assert cut["step"] == 3
    resumed = train(fresh_base(tiny_gguf_model), pairs, tmp_path / "cut", settings, "cpu")
    assert resumed["step"] == 6
    np.testing.assert_allclose(resumed["losses"], whole["losses"], rtol=1e-4, atol=1e-6)
    heads = [
        json.loads((tmp_path / run / "value_head.json").read_text()) for run in ("whole", "cut")
    ]
    np.testing.assert_allclose(heads[1]["weights"], heads[0]["weights"], rtol=1e-4, atol=1e-6)


def test_the_two_adapters_dare_ties_merged_keep_the_preference(
    backend,  # noqa: F811
    pairs,
    tiny_gguf_model: Path,
    tiny_hf_model: Path,
    tmp_path: Path,
) -> None:
    """The preference and grade adapters merged into one by training.shipping.merge (DARE-TIES, as
    the pipeline merges pj-smollm2-135m's): the preference head on the merged model's states
    still ranks every decided pair as labelled, by far more than on the base's."""
    from transformers import AutoModelForCausalLM

    from training.datasets.reward_data import grade_tokens
    from training.lora.reward_model import TrainSettings, batch_tensors, train
    from training.shipping.merge import merge_adapters

    settings = TrainSettings(steps=40, batch_pairs=7, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=40)  # fmt: skip
    train(fresh_base(tiny_gguf_model), pairs, tmp_path / "pairs", settings, "cpu")
    rows = grade_tokens(backend, graded())
    train(fresh_base(tiny_gguf_model), rows, tmp_path / "grades", settings, "cpu")
    adapters = {name: tmp_path / name / "adapter" for name in ("pairs", "grades")}
    merged = merge_adapters(tiny_hf_model, adapters, tmp_path / "merged", method="dare_ties")
    assert merged.model_dir is not None
    head = json.loads((tmp_path / "pairs" / "value_head.json").read_text())
    weights, bias = torch.tensor(head["weights"]), head["bias"]
    ids, lengths = batch_tensors(pairs, np.arange(len(pairs.keys)), "cpu")

    def margins(model) -> np.ndarray:  # type: ignore[no-untyped-def]
        with torch.no_grad():
            states = model.model(input_ids=ids).last_hidden_state
            rewards = (states[torch.arange(len(lengths)), lengths - 2] @ weights + bias).numpy()
        return (rewards[pairs.first] - rewards[pairs.second])[pairs.target != 0.5]

    model = AutoModelForCausalLM.from_pretrained(str(merged.model_dir), dtype=torch.float32)
    ours, base = margins(model), margins(fresh_base(tiny_gguf_model))
    decided = pairs.target[pairs.target != 0.5]
    assert ((ours > 0) == (decided > 0.5)).all(), ours
    assert np.abs(ours).min() > 3 * np.abs(base).max()


def test_the_gpu_part_runs_in_one_command_and_a_later_loan_goes_on(
    backend,  # noqa: F811
    pairs,
    tiny_gguf_model: Path,
    tmp_path: Path,
) -> None:
    """`training.lora.reward_loan` as on a lent machine (here on the CPU): the base joined from the
    parts earlier calls received, both adapters trained with a fold held out, merged, every
    evaluation file read by each model with each head, and the runs packed for the return in
    at most 8 files, adapters in bfloat16 and no optimizer; a later loan goes on from them."""
    from safetensors.torch import load_file

    from training.datasets.reward_data import RewardPairs, grade_tokens
    from training.datasets.written_negatives import make_orders, request_winners
    from training.device.device_transfer import receive, split, unpack
    from training.lora.reward_loan import WRITTEN, main
    from training.lora.reward_model import OPTIMIZER

    split(tiny_gguf_model, tmp_path / "parts", part_mb=0.05)
    receive(tmp_path / "parts", tmp_path / "device" / "store")
    pairs.save(tmp_path / "pairs.npz")
    grade_tokens(backend, graded()).save(tmp_path / "grades.npz")
    (tmp_path / "evals").mkdir()
    pairs.save(tmp_path / "evals" / "some_file.npz")
    common = ["--store", str(tmp_path / "device" / "store"), "--pairs", str(tmp_path / "pairs.npz"),
              "--grades", str(tmp_path / "grades.npz"), "--evals", str(tmp_path / "evals"),
              "--batch-pairs", "3", "--rank", "4", "--alpha", "8", "--learning-rate", "3e-3",
              "--folds", "3", "--seconds", "600", "--reserve", "0"]  # fmt: skip
    winners = request_winners(items(), pairs)
    neighbours = [("Name a fruit.", 0.6)] * len(winners)
    make_orders(backend, winners, neighbours, max_new_tokens=4).save(tmp_path / "orders.npz")
    first = ["--runs", str(tmp_path / "device" / "runs"), "--back", str(tmp_path / "out1" / "back"),
             "--pairs-epochs", "2", "--grades-epochs", "2", "--grades-weights", "0.5",
             "--orders", str(tmp_path / "orders.npz")]  # fmt: skip
    assert main([*common, *first]) == 0
    back = tmp_path / "out1" / "back"
    assert len(list(back.iterdir())) <= 8
    runs = unpack(back, tmp_path / "here")
    record = json.loads((runs / "loan.json").read_text())
    assert record["jobs"]["pairs"]["held_out"]["pairs"] > 0
    assert record["jobs"]["grades"]["held_out"]["rows"] > 0
    written = RewardPairs.load(runs / WRITTEN)  # the base's negatives come back with the runs
    assert record["written"]["pairs_added"] == len(written.first) - len(pairs.first) > 0
    for adapter in ("pairs/checkpoint/adapter", "grades/checkpoint/adapter", "merged/adapter"):
        weights = load_file(runs / adapter / "adapter_model.safetensors")
        assert {str(w.dtype) for w in weights.values()} == {"torch.bfloat16"}, adapter
    assert not (runs / "pairs" / "checkpoint" / OPTIMIZER).exists()  # never sent back
    assert not (runs / "pairs" / "adapter").exists()  # one copy: the checkpoint's
    rewards = np.load(runs / "rewards.npz")
    for key in ("pairs/pairs/some_file", "grades/grades/some_file", "merged/pairs/some_file",
                "merged/grades/some_file", "merged/pairs/train-pairs",
                "merged-grades0.5/pairs/some_file"):  # fmt: skip
        assert key in rewards.files, key
    assert np.isfinite(rewards["pairs/pairs/some_file"]).all()
    held = rewards["merged/pairs/train-pairs"]
    assert 0 < np.isfinite(held).sum() < len(held)  # the held-out fold's reads alone
    trained = rewards["pairs/pairs/some_file"]
    margins = (trained[pairs.first] - trained[pairs.second])[pairs.target != 0.5]
    assert ((margins > 0) == (pairs.target[pairs.target != 0.5] > 0.5)).mean() >= 0.8
    later = ["--runs", str(tmp_path / "fresh-machine"), "--back", str(tmp_path / "out2" / "back"),
             "--resume", str(runs), "--pairs-epochs", "3", "--grades-epochs", "3",
             "--pairs", str(runs / WRITTEN)]  # fmt: skip
    assert main([*common, *later]) == 0
    again = json.loads(
        (unpack(tmp_path / "out2" / "back", tmp_path / "here2") / "loan.json").read_text()
    )
    assert again["jobs"]["pairs"]["step"] > record["jobs"]["pairs"]["step"]


def test_the_engine_reads_the_merged_model_to_the_rewards_torch_trained(
    pairs, tiny_gguf_model: Path, tiny_hf_model: Path, tmp_path: Path
) -> None:
    """The serving path: the adapter merged into the base and exported as a GGUF, read by
    llama.cpp, with the value head on its `last` state, gives the rewards of training."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from models.converter import convert_hf_to_gguf
    from training.lora.reward_model import (
        RewardModel,
        TrainSettings,
        ValueHead,
        batch_tensors,
        load_checkpoint,
        train,
    )
    from training.shipping.merge import fold_adapter

    settings = TrainSettings(steps=20, batch_pairs=7, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=20)  # fmt: skip
    train(fresh_base(tiny_gguf_model), pairs, tmp_path / "run", settings, "cpu")
    model = RewardModel(fresh_base(tiny_gguf_model), rank=4, alpha=8)
    optimizer = torch.optim.AdamW(model.parameters())
    load_checkpoint(tmp_path / "run" / "checkpoint", model, optimizer)
    ids, lengths = batch_tensors(pairs, np.arange(len(pairs.keys)), "cpu")
    with torch.no_grad():
        trained = model.rewards(ids, lengths).numpy()

    folded = fold_adapter(tiny_hf_model, tmp_path / "run" / "adapter", tmp_path / "model")
    gguf = convert_hf_to_gguf(folded, tmp_path / "merged.gguf", "f32")
    engine = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    head = ValueHead.load(tmp_path / "run" / "value_head.json")
    try:
        served = [head.reward(engine, item.question, answer) for item in items()
                  for answer in item.answers]  # fmt: skip
    finally:
        engine.close()
    np.testing.assert_allclose(served, trained, rtol=1e-2, atol=2e-2)
    assert np.ptp(trained) > 1.0  # the rewards differ: the check compares something


@pytest.fixture(scope="module")
def built_adapter(pairs, tiny_gguf_model: Path, tiny_hf_model: Path, tmp_path_factory):  # type: ignore[no-untyped-def]
    """A reward model trained on the tiny base, its adapter committed in parts and built into a
    GGUF LoRA adapter as `make models` builds pj-qwen15-reward's: (the adapter file, its value
    head, the rewards torch trained)."""
    from models.lora_build import build_lora, split_adapter
    from models.registry import ModelEntry
    from training.lora.reward_model import TrainSettings, ValueHead, batch_tensors, train_until

    tmp_path = tmp_path_factory.mktemp("adapter")
    settings = TrainSettings(steps=20, batch_pairs=7, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=20)  # fmt: skip
    model, _ = train_until(fresh_base(tiny_gguf_model), pairs, tmp_path / "run", settings, "cpu")
    ids, lengths = batch_tensors(pairs, np.arange(len(pairs.keys)), "cpu")
    with torch.no_grad():
        trained = model.rewards(ids, lengths).numpy()
    model.model.save_pretrained(tmp_path / "adapter")
    config = json.loads((tiny_hf_model / "config.json").read_text())
    parts = split_adapter(tmp_path / "adapter", config, tmp_path / "models" / "judge" / "adapter")
    assert all(p.stat().st_size < 10_000_000 for p in parts)
    entry = ModelEntry(name="tiny-reward", backend="llama-cpp", file=tiny_gguf_model.name,
                       lora="tiny-lora.gguf", lora_from="judge/adapter")  # fmt: skip
    assert "built" in build_lora(entry, tmp_path / "store", tmp_path / "models")
    head = ValueHead(model.head.weight.detach().numpy()[0], float(model.head.bias.detach()))
    lora = entry.lora_path(tmp_path / "store")
    assert lora is not None
    return lora, head, trained


def test_the_engine_applies_the_adapter_at_load_to_the_rewards_torch_trained(
    built_adapter, tiny_gguf_model: Path
) -> None:
    """The served path of pj-qwen15-reward: the adapter committed in parts
    (models.lora_build), built by `make models` into a GGUF LoRA adapter that llama.cpp
    applies to the unchanged base at load, read with the value head on its `last` state,
    gives the rewards of training; without the adapter the same reads do not."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend

    lora, head, trained = built_adapter

    def served(lora: Path | None) -> np.ndarray:
        options = BackendOptions(n_ctx=512, n_threads=1, lora_path=lora and str(lora))
        engine = LlamaCppBackend(str(tiny_gguf_model), options)
        try:
            return np.array([head.reward(engine, item.question, answer) for item in items()
                             for answer in item.answers])  # fmt: skip
        finally:
            engine.close()

    np.testing.assert_allclose(served(lora), trained, rtol=1e-2, atol=2e-2)
    assert np.abs(served(None) - trained).max() > 0.5  # the adapter is what makes them
    assert np.ptp(trained) > 1.0


def test_an_adapter_read_beside_the_plain_weights_gives_the_trained_rewards(
    built_adapter, tiny_gguf_model: Path
) -> None:
    """One engine, the base loaded once: reads with the adapter (`adapter=`, a context of its
    own, as the default judge reads the reward model) give the rewards of training, and its
    plain reads, before and after, stay the base's."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend

    lora, head, trained = built_adapter

    class Through:  # the engine's reads with an adapter, as the value head asks for them
        def __init__(self, engine, adapter):  # type: ignore[no-untyped-def]
            self.engine, self.adapter = engine, adapter

        def read_reply(self, question: str, answer: str):  # type: ignore[no-untyped-def]
            return self.engine.read_reply(question, answer, adapter=self.adapter)

    engine = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=512, n_threads=1))
    texts = [(item.question, answer) for item in items() for answer in item.answers]
    try:
        plain = np.array([head.reward(engine, q, a) for q, a in texts])
        adapted = np.array([head.reward(Through(engine, str(lora)), q, a) for q, a in texts])
        again = np.array([head.reward(engine, q, a) for q, a in texts])
    finally:
        engine.close()
    np.testing.assert_allclose(adapted, trained, rtol=1e-2, atol=2e-2)
    np.testing.assert_allclose(again, plain, atol=1e-4)
    assert np.abs(plain - trained).max() > 0.5


def test_a_judge_weighs_the_reward_models_lead_where_its_record_weighs_it(
    built_adapter, pairs, tiny_gguf_model: Path
) -> None:
    """The `reward` signal through a head judge on the tiny model: read with the reward
    model's adapter on the judge's weights where the record weighs it (A's reward minus B's,
    as trained, moving the score by its weight), and not read where it does not."""
    from dataclasses import replace

    from app.deciding.reward import RewardReader
    from app.deciding.state_head import StateHead
    from app.records import Protocol
    from tests.support.head_configs import head_alone, random_reply_head, record_of, tiny_service

    lora, value_head, trained = built_adapter
    weights = (0.0,) * len(value_head.weights) + tuple(map(float, value_head.weights))  # `last`
    head_of = StateHead(base_file="tiny.gguf", reads="reply", weights=weights)
    reader = RewardReader("tiny-reward", lora, head_of)
    plain = record_of(states=1.0, pmi_mean=1.0)
    service, engine = next(opened := tiny_service(tiny_gguf_model, "tiny-rewarded"))
    head = random_reply_head(engine, 3)

    def judged(record):  # type: ignore[no-untyped-def]
        config = head_alone(head, Protocol.PAIRWISE, record)
        return service.judge(
            items()[0], replace(config, parts=replace(config.parts, reward=reader))
        )

    try:
        given, alone = judged(record_of(states=1.0, pmi_mean=1.0, reward=2.0)), judged(plain)
    finally:
        next(opened, None)  # the service's backend closed
    lead = given.verdict_parts["reward_difference"]
    assert lead == pytest.approx(trained[pairs.first[0]] - trained[pairs.second[0]], abs=5e-2)
    assert abs(lead) > 0.1
    score = alone.verdict_parts["score"] + 2.0 * lead
    assert given.verdict_parts["score"] == pytest.approx(score, abs=1e-3)
    assert "reward_difference" not in alone.verdict_parts  # not weighed: not read


def test_request_grouped_folds_hold_out_whole_requests_and_measure_them(
    pairs, tiny_gguf_model: Path, tmp_path: Path
) -> None:
    """`--folds 2 --fold 0`: the pairs of every other request are never trained on and are
    measured at the end; the learnable preference carries over to them."""
    from training.lora.reward_model import TrainSettings, held_out, step_order, train

    settings = TrainSettings(steps=40, batch_pairs=3, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=40, folds=2, fold=0)  # fmt: skip
    held = held_out(pairs, settings)
    assert held.tolist() == [g % 2 == 0 for g in pairs.group]
    trained = {int(i) for step in range(40) for i in step_order(pairs, settings, step)}
    assert trained == set(np.flatnonzero(~held).tolist())
    state = train(fresh_base(tiny_gguf_model), pairs, tmp_path, settings, "cpu")
    measured = state["held_out"]
    assert measured["pairs"] == int(held.sum()) and measured["agreement"] == 100.0
    record = json.loads((tmp_path / "training.json").read_text())
    assert record["held_out"] == measured


def test_the_engine_judges_a_pair_with_the_trained_heads_as_its_state_head(
    pairs,
    backend,  # noqa: F811
    tiny_gguf_model: Path,
    tiny_hf_model: Path,
    tmp_path: Path,
) -> None:
    """Served as the product serves a head judge: the merged GGUF through JudgeService with
    the reward heads written as a state head; P(A) is the sigmoid of the reward difference
    torch trained, and the grade is the grade head's rating."""
    from app.deciding.decision import DecisionRecord
    from app.judging.service import JudgeService
    from app.records import Protocol, Status
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from models.converter import convert_hf_to_gguf
    from tests.support.head_configs import head_alone
    from training.datasets.reward_data import grade_tokens
    from training.lora.reward_head import as_state_head, reward_record
    from training.lora.reward_model import TrainSettings, ValueHead, train
    from training.shipping.merge import fold_adapter

    settings = TrainSettings(steps=20, batch_pairs=7, learning_rate=3e-3, rank=4, alpha=8,
                             save_every=20)  # fmt: skip
    train(fresh_base(tiny_gguf_model), pairs, tmp_path / "pairs", settings, "cpu")
    rows = grade_tokens(backend, graded())
    train(fresh_base(tiny_gguf_model), rows, tmp_path / "grades", settings, "cpu")
    folded = fold_adapter(tiny_hf_model, tmp_path / "pairs" / "adapter", tmp_path / "model")
    gguf = convert_hf_to_gguf(folded, tmp_path / "reward.gguf", "f32")
    pair_head = ValueHead.load(tmp_path / "pairs" / "value_head.json")
    grade_head = ValueHead.load(tmp_path / "grades" / "value_head.json")
    head = as_state_head(pair_head, gguf.name, grade_head)
    record = DecisionRecord.model_validate(reward_record("r", pair_head, grade_head, "a test"))
    engine = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=2048, n_threads=1))
    try:
        item = items()[0]  # "Yes." (A) against "No."
        service = JudgeService(engine, "reward")
        judged = service.judge(item, head_alone(head, Protocol.PAIRWISE, record))
        rewards = [pair_head.reward(engine, item.question, a) for a in item.answers]
        single = item.model_copy(update={"answers": item.answers[:1]})
        graded_one = service.judge(single, head_alone(head, Protocol.SINGLE, record))
        expected_grade = 5.5 + 4.5 * grade_head.reward(engine, item.question, item.answers[0])
    finally:
        engine.close()
    assert judged.status is Status.OK and judged.leaning == "A"
    p_a = 1 / (1 + np.exp(-(rewards[0] - rewards[1])))
    assert judged.verdict_probs["A"] == pytest.approx(p_a, abs=1e-3)
    assert graded_one.answers[0].expected_overall == pytest.approx(
        min(max(expected_grade, 1), 10), abs=1e-2
    )


def test_state_head_writes_a_head_file_the_registry_validates(tmp_path: Path) -> None:
    from app.deciding.decision import load_decision
    from app.deciding.state_head import StateHead
    from training.lora.reward_head import main

    for run, weights, bias in (("pairs", [0.5, -1.0], 0.2), ("grades", [0.1, 0.3], -0.4)):
        (tmp_path / run).mkdir()
        (tmp_path / run / "value_head.json").write_text(
            json.dumps({"weights": weights, "bias": bias})
        )
    out = tmp_path / "judge" / "state_head.json"
    args = ["--pairs-run", str(tmp_path / "pairs"), "--grades-run",
            str(tmp_path / "grades"), "--gguf-name", "merged.gguf", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    head = StateHead.model_validate_json(out.read_text())
    assert head.reads == "reply" and head.base_file == "merged.gguf"
    assert head.weights == (0.0, 0.0, 0.5, -1.0)  # the last-state half only
    assert head.grade_weights == pytest.approx((0.0, 0.0, 0.45, 1.35))
    record = load_decision(out.with_name("decision.yaml"))  # every weight around the vectors
    assert record.weights() == {"states": 1.0}
    assert record.grade.weights() == {"grade_states": 1.0}
    assert record.grade.intercept == pytest.approx(5.5 - 4.5 * 0.4)


def test_a_step_cut_into_passes_has_the_whole_batchs_gradient(pairs, tiny_gguf_model: Path) -> None:
    """A step whose reads exceed the pass budget runs as several passes (so a batch of long
    answers cannot run the card out of memory) with the gradient of one pass over it all."""
    from training.lora.reward_model import RewardModel, passes, train_step

    chosen = np.arange(len(pairs.first))
    longest = int(pairs.lengths.max())
    assert len(passes(pairs, chosen, budget=2 * longest)) == len(chosen)
    assert len(passes(pairs, chosen, budget=10**6)) == 1
    grads = []
    for budget in (10**6, 2 * longest):
        torch.manual_seed(0)
        model = RewardModel(fresh_base(tiny_gguf_model), rank=4, alpha=8)
        torch.nn.init.normal_(model.head.weight)  # a gradient beyond the head's own
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        train_step(model, optimizer, pairs, chosen, "cpu", budget)
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) > 2
    for whole, cut in zip(*grads, strict=True):
        torch.testing.assert_close(whole, cut, rtol=1e-4, atol=1e-6)
