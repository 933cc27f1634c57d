"""Training configuration (training/configs/*.yaml), validated on load.

Every error names the file and the field. Paths in a config are relative to
the repository root unless absolute.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.foundation.datafiles import read_mapping, validate
from models.verdict_settings import RelevanceJoin

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS_DIR = Path(__file__).resolve().parents[1] / "configs"

AdapterName = Literal["single", "pairwise"]
CounterexampleMatch = Literal["group", "nearest"]
MergeMethod = Literal["linear", "ties", "dare_linear", "dare_ties", "magnitude_prune"]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataConfig(_Strict):
    autoj_dir: str = "../shared/data/autoj"
    template: str = "pocketjudge-compact"
    max_tokens: int = Field(default=768, ge=128)  # prompt + target, longer examples are cut
    max_input_chars: int = Field(default=2400, ge=200)  # question + answers, cut in the middle
    single_heldout: int = Field(default=160, ge=0)  # single_train rows kept for evaluation
    single_limit: int | None = Field(default=None, ge=1)
    pairwise_limit: int | None = Field(default=None, ge=1)  # pairs, before augmentation
    swap: bool = True  # each pair in both orders, label swapped
    reference_drop: float = Field(default=0.5, ge=0, le=1)  # share of rows shown without reference
    counterexamples: float = Field(
        default=0.3, ge=0, le=2
    )  # per pair: off-topic longer answer loses
    # where a counterexample's off-topic answer comes from: any other request of the same
    # scenario group, or the most similar other request (MiniLM), like LLMBar's neighbours
    counterexample_match: CounterexampleMatch = "group"
    length_balance: bool = True  # drop longer-wins pairs until they match shorter-wins pairs
    # loss weight of reply values that restate the first score (data.restate_weights)
    restated_weight: float = Field(default=1.0, ge=0, le=1)
    feedback_weight: float = Field(default=1.0, ge=0, le=1)  # loss weight of feedback text
    feedback_chars: int = Field(default=300, ge=0)  # single targets: critique cut to this
    # decision-first templates only: False leaves the criterion scores out of the reply, so
    # a pair's target is its verdict token alone and a single answer's is its grade and critique
    criteria: bool = True
    # length-balanced AlpacaEval pairs (GPT-4-class preferences) added to the Auto-J pairs
    alpacaeval_pairs: int = Field(default=0, ge=0)
    alpacaeval_file: str = "../shared/data/alpacaeval/pairs.jsonl.gz"
    pair_scores: dict[str, int] = Field(
        default_factory=lambda: {"win": 8, "lose": 4, "tie": 6}
    )  # how a preference label becomes criterion scores in a pairwise target
    seed: int = 0


class LoraConfigSpec(_Strict):
    r: int = Field(default=8, ge=1)
    alpha: int = Field(default=16, ge=1)
    dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: tuple[str, ...] = ("q_proj", "v_proj")


class TrainConfig(_Strict):
    lr: float = Field(default=2e-4, gt=0)
    scheduler: Literal["cosine", "linear", "constant"] = "cosine"
    warmup_ratio: float = Field(default=0.03, ge=0, lt=1)
    epochs: float = Field(default=1.0, gt=0)
    max_steps: int | None = Field(default=None, ge=1)  # optimizer steps; overrides epochs
    steps: dict[AdapterName, int] = Field(default_factory=dict)  # per adapter; overrides both
    grad_accum: int = Field(default=8, ge=1)
    bf16: bool = True  # autocast (CPU or CUDA)
    threads: int | None = Field(default=None, ge=1)
    device: Literal["auto", "cpu", "cuda"] = "auto"  # auto: CUDA when torch sees a GPU
    # padded tokens per forward pass: the grad_accum examples of a step are sorted by
    # length and packed up to this budget (a GPU wants batches); None: one at a time
    micro_tokens: int | None = Field(default=None, ge=128)
    checkpoint_every: int = Field(default=25, ge=1)  # optimizer steps
    weight_decay: float = Field(default=0.0, ge=0)
    seed: int = 0


class MergeConfig(_Strict):
    method: MergeMethod = "dare_ties"
    density: float = Field(default=0.7, gt=0, le=1)
    weights: dict[AdapterName, float] = Field(
        default_factory=lambda: {"single": 1.0, "pairwise": 1.0}
    )
    compare: tuple[MergeMethod, ...] = ("linear",)  # also built, for the report


class ExportConfig(_Strict):
    gguf: Literal["q8_0", "f16", "f32"] = "q8_0"
    q4_k_m: bool = False
    int8_check: bool = True


class EvalConfig(_Strict):
    calibration_pairs: int = Field(default=80, ge=0)  # pairwise_train pairs to tune the tie margin
    variants: tuple[str, ...] = ("dare_ties",)  # base, single, pairwise, or a merge method
    files: tuple[str, ...] = (
        "../shared/data/autoj/pairwise_dev.jsonl",
        "../shared/data/llmbar/natural.json",
        "../shared/data/llmbar/adversarial_neighbor.json",
    )
    limit: int | None = Field(default=None, ge=1)
    threads: int | None = Field(default=None, ge=1)  # llama.cpp threads (None: its default)


class ShipConfig(_Strict):
    enabled: bool = False  # copy the merged adapter to models/judges/<name>/ and register it
    make_default: bool = False  # and make it the registry's default judge
    # The entry's confidence threshold (None: the registry's default, 0.5); a judge that
    # almost never says tie needs more than half of its probability to have decided.
    uncertain_below: float | None = Field(default=None, ge=0, le=1)
    # Pairwise verdicts joined with request relevance: weights from training.heads.relevance_join.
    relevance_join: RelevanceJoin | None = None


class TrainingConfig(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    base: str
    adapters: tuple[AdapterName, ...] = ("single", "pairwise")
    output_dir: str | None = None  # default training/runs/<name>
    data: DataConfig = Field(default_factory=DataConfig)
    lora: LoraConfigSpec = Field(default_factory=LoraConfigSpec)
    train: TrainConfig = Field(default_factory=TrainConfig)
    merge: MergeConfig = Field(default_factory=MergeConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    ship: ShipConfig = Field(default_factory=ShipConfig)

    @model_validator(mode="after")
    def _adapters_unique(self) -> TrainingConfig:
        if len(set(self.adapters)) != len(self.adapters) or not self.adapters:
            raise ValueError("adapters must list 'single' and/or 'pairwise' once each")
        unknown = [v for v in self.eval.variants if v not in self.variant_names()]
        if unknown:
            raise ValueError(
                f"eval.variants: unknown {unknown}; valid: {', '.join(self.variant_names())}"
            )
        return self

    def variant_names(self) -> tuple[str, ...]:
        """Judges a run can evaluate: the base, each adapter alone, each merge it builds."""
        merges = (self.merge.method, *self.merge.compare)
        return ("base", *self.adapters, *dict.fromkeys(merges))

    def run_dir(self) -> Path:
        return resolve_path(self.output_dir or f"training/runs/{self.name}")


def resolve_path(value: str | Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (REPO_ROOT / path).resolve()


def resolve_config_path(path: Path | str) -> Path:
    """A config file path, or a name in training/configs/ (with or without .yaml)."""
    path = Path(path)
    if not path.is_absolute() and not path.exists():
        candidate = CONFIGS_DIR / path
        path = candidate if candidate.exists() else candidate.with_suffix(".yaml")
    return path


def load_config(path: Path | str) -> TrainingConfig:
    path = resolve_config_path(path)
    return validate(TrainingConfig, read_mapping(path), path)
