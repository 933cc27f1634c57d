"""The whole training pipeline on the tiny model: data, 2 steps per adapter, DARE merge,
Q8_0 export, then the exported GGUF judges an item through the real engine with grammar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.records import JudgeItem, Protocol, Status
from models.backends import create_backend
from models.backends.base import BackendOptions, SamplingParams
from models.judge_settings import JudgeSettings
from tests.support.needs import SHARED_DATA, shared_file
from training.datasets.examples import read_examples
from training.lora.config import (
    DataConfig,
    EvalConfig,
    ExportConfig,
    MergeConfig,
    TrainConfig,
    TrainingConfig,
)
from training.lora.pipeline import run_pipeline

AUTOJ = SHARED_DATA / "autoj"

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _autoj_data() -> None:
    shared_file("autoj")


def tiny_config(run_dir: Path) -> TrainingConfig:
    return TrainingConfig(
        name="tiny-judge",
        base="smollm2-135m",  # replaced by the tiny model below
        output_dir=str(run_dir),
        data=DataConfig(
            autoj_dir=str(AUTOJ),
            single_limit=4,
            pairwise_limit=6,
            max_tokens=4096,
            max_input_chars=300,
            feedback_chars=80,
        ),
        train=TrainConfig(grad_accum=2, steps={"single": 2, "pairwise": 2}, checkpoint_every=1),
        merge=MergeConfig(method="dare_ties", density=0.7, compare=("linear",)),
        export=ExportConfig(gguf="q8_0", int8_check=False),
        eval=EvalConfig(calibration_pairs=4, limit=2, variants=("dare_ties", "base")),
    )


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_hf_model: Path, tiny_gguf_model: Path) -> dict:
    run_dir = tmp_path_factory.mktemp("run")
    return run_pipeline(
        tiny_config(run_dir),
        base_dir=tiny_hf_model,
        base_gguf_file=tiny_gguf_model,
        progress=False,
    )


def test_data_stage_holds_out_and_balances(tiny_run: dict) -> None:
    run = Path(tiny_run["run_dir"])
    counts = tiny_run["data"]["counts"]
    assert tiny_run["data"]["single_heldout"] == 160
    assert counts["single"] == 4
    pairwise = read_examples(run / "data" / "pairwise.jsonl")
    # Swap augmentation: every pair appears in both orders with the label mirrored.
    by_pair: dict[str, set[str]] = {}
    for example in pairwise:
        by_pair.setdefault(example.id.rsplit("-", 1)[0], set()).add(example.meta["label"])
    for labels in by_pair.values():
        assert labels in ({"A", "B"}, {"tie"})
    # Only value pieces carry loss; the structure is forced by the schema.
    first = pairwise[0]
    assert json.loads(first.target)["verdict"] == first.meta["label"]
    assert all(not p.text.strip().startswith("{") for p in first.pieces if p.value)


def test_adapters_train_and_log(tiny_run: dict) -> None:
    for name in ("single", "pairwise"):
        log = tiny_run["train"][name]
        assert log["steps"] == 2 and log["examples"] >= 2
        assert (Path(tiny_run["run_dir"]) / "adapters" / name / "adapter_config.json").exists()


def test_merge_and_export_give_a_gguf_that_judges(tiny_run: dict) -> None:
    assert set(tiny_run["merge"]) == {"dare_ties", "linear"}
    gguf = Path(tiny_run["export"]["gguf"])
    assert gguf.exists() and gguf.suffix == ".gguf"
    backend = create_backend("llama-cpp", str(gguf), BackendOptions(n_ctx=4096))
    try:
        service = JudgeService(backend, "tiny-judge")
        item = JudgeItem(
            id="1", question="Name a prime number.", answers=("7", "8"), scenario="default"
        )
        config = JudgeConfig(
            protocol=Protocol.PAIRWISE,
            sampling=SamplingParams(max_tokens=512),
            # no confidence threshold: the assertion reads the verdict itself
            judge=JudgeSettings(
                template="pocketjudge-compact", pair_combine="calibrated", uncertain_below=0
            ),
        )
        judgment = service.judge(item, config)
    finally:
        backend.close()
    assert judgment.status is Status.OK, judgment.error
    assert judgment.winner in ("A", "B", "tie")
    assert judgment.order_winners is not None and judgment.margin is not None


def test_rerun_skips_finished_stages(tiny_run: dict, tiny_hf_model, tiny_gguf_model) -> None:
    run_dir = Path(tiny_run["run_dir"])
    again = run_pipeline(
        tiny_config(run_dir),
        base_dir=tiny_hf_model,
        base_gguf_file=tiny_gguf_model,
        progress=False,
    )
    assert again["train"]["single"]["loss_last_10"] == tiny_run["train"]["single"]["loss_last_10"]
    assert again["calibrate"] == tiny_run["calibrate"]
    assert again["seconds"] < tiny_run["seconds"]


def test_calibration_and_evaluation_reports(tiny_run: dict) -> None:
    assert tiny_run["calibrate"]["pairs"] >= 1
    assert tiny_run["calibrate"]["tie_margin"] >= 0
    run = Path(tiny_run["run_dir"])
    report = json.loads((run / "eval" / "dare_ties-limit2" / "report.json").read_text())
    assert set(report["files"]) == {
        "pairwise_dev.jsonl",
        "natural.json",
        "adversarial_neighbor.json",
        "single_heldout.jsonl",
    }
    assert report["template"] == "pocketjudge-compact"
    summary = (run / "eval" / "summary.md").read_text()
    assert "longer answer wins" in summary and "base-limit2" in summary


def test_every_evaluated_variant_gets_its_own_tie_margin(tiny_run: dict) -> None:
    run = Path(tiny_run["run_dir"])
    own = json.loads((run / "calibrate" / "base" / "calibration.json").read_text())
    report = json.loads((run / "eval" / "base-limit2" / "report.json").read_text())
    assert own["pairs"] >= 1
    assert report["tie_margin"] == own["tie_margin"]
    assert tiny_run["ship"] == {"skipped": "ship.enabled is false in the config"}
