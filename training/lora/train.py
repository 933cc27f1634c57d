"""LoRA training of one adapter (single or pairwise) on CPU or GPU.

On a CPU, batch size 1 with gradient accumulation (no padding waste); on a GPU,
the examples of a step packed into padded micro-batches (`train.micro_tokens`).
bf16 autocast, loss on the value tokens of the reply only. Logits are computed only
at the positions that carry loss: Gemma's vocabulary has 262k entries, and a
full logits tensor over a 800-token example would dominate time and memory.
A checkpoint (adapter, optimizer, scheduler, step) is written every few
optimizer steps; a rerun resumes from it.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from training.datasets.examples import Example
from training.lora.config import LoraConfigSpec, TrainConfig

IGNORE = -100
CHECKPOINT = "checkpoint"
DONE_FILE = "training_done.json"


@dataclass(frozen=True)
class Tokenized:
    input_ids: list[int]
    labels: list[int]  # IGNORE where no loss
    weights: list[float] | None = None  # per position, beside labels (None: all 1)


class ExampleTokenizer:
    """Tokenizes examples with the llama.cpp vocabulary of the base GGUF.

    The prompt goes through the llama.cpp backend's own `prompt_tokens`
    (chat template or plain layout, control tokens defused), so training
    sees the exact tokens the engine feeds at inference.
    """

    def __init__(self, gguf_path: Path) -> None:
        from models.backends.base import BackendOptions
        from models.backends.llama_cpp_backend import LlamaCppBackend

        self.backend = LlamaCppBackend(str(gguf_path), BackendOptions(n_ctx=512))

    def __call__(self, example: Example) -> Tokenized:
        from models.backends.base import Message

        messages = [Message(m["role"], m["content"]) for m in example.messages]
        ids = list(self.backend.prompt_tokens(messages))
        labels = [IGNORE] * len(ids)
        weights = [0.0] * len(ids)
        for piece in example.pieces:
            tokens = self.backend.llama.tokenize(
                piece.text.encode("utf-8"), add_bos=False, special=False
            )
            ids.extend(tokens)
            labels.extend(tokens if piece.value else [IGNORE] * len(tokens))
            weights.extend([piece.weight if piece.value else 0.0] * len(tokens))
        uniform = all(w == 1.0 for w, label in zip(weights, labels) if label != IGNORE)
        return Tokenized(ids, labels, None if uniform else weights)

    def close(self) -> None:
        self.backend.close()


def tokenize_all(
    examples: Sequence[Example], gguf_path: Path, max_tokens: int
) -> tuple[list[Tokenized], int]:
    """Tokenized examples that fit `max_tokens`, and how many were too long."""
    tokenizer = ExampleTokenizer(gguf_path)
    try:
        done = [tokenizer(example) for example in examples]
    finally:
        tokenizer.close()
    kept = [t for t in done if len(t.input_ids) <= max_tokens]
    return kept, len(done) - len(kept)


def lora_config(spec: LoraConfigSpec):
    from peft import LoraConfig

    return LoraConfig(
        r=spec.r,
        lora_alpha=spec.alpha,
        lora_dropout=spec.dropout,
        target_modules=list(spec.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )


def _target_logits(model, input_ids, labels, autocast: bool):
    """Logits at the positions whose next token carries loss, their targets, the mask."""
    import torch

    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    with torch.autocast(input_ids.device.type, dtype=torch.bfloat16, enabled=autocast):
        hidden = inner.model(input_ids=input_ids).last_hidden_state
        targets = labels[:, 1:]
        mask = targets != IGNORE
        logits = inner.lm_head(hidden[:, :-1][mask]).float()
    cap = getattr(inner.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits, targets[mask], mask


def target_loss(model, input_ids, labels, autocast: bool, weights=None):
    """Mean cross-entropy over the positions whose next token carries loss.

    With `weights` (a float tensor shaped like `labels`) the mean is weighted.
    """
    import torch.nn.functional as F

    logits, targets, mask = _target_logits(model, input_ids, labels, autocast)
    if weights is None:
        return F.cross_entropy(logits, targets)
    per_token = F.cross_entropy(logits, targets, reduction="none")
    chosen = weights[:, 1:][mask]
    return (per_token * chosen).sum() / chosen.sum().clamp_min(1e-8)


def batch_loss(model, batch: Sequence[Tokenized], autocast: bool, device="cpu"):
    """The sum over `batch` of each example's (weighted) mean target loss.

    Examples are padded on the right: under causal attention no real token sees
    the padding after it, so no attention mask is needed, and padding carries no
    loss. For one example this equals `target_loss`.
    """
    import torch
    import torch.nn.functional as F

    width = max(len(t.input_ids) for t in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE, dtype=torch.long)
    weights = torch.zeros((len(batch), width))
    for row, example in enumerate(batch):
        n = len(example.input_ids)
        ids[row, :n] = torch.tensor(example.input_ids)
        labels[row, :n] = torch.tensor(example.labels)
        weights[row, :n] = torch.tensor(example.weights) if example.weights else 1.0
    ids, labels, weights = ids.to(device), labels.to(device), weights.to(device)
    logits, targets, mask = _target_logits(model, ids, labels, autocast)
    per_token = F.cross_entropy(logits, targets, reduction="none")
    chosen = weights[:, 1:][mask]
    rows = mask.nonzero()[:, 0]  # the example of each selected position, in mask order
    total = torch.zeros(len(batch), device=per_token.device)
    norm = torch.zeros(len(batch), device=per_token.device)
    total = total.index_add(0, rows, per_token * chosen)
    norm = norm.index_add(0, rows, chosen)
    return (total / norm.clamp_min(1e-8)).sum()


def micro_batches(batch: Sequence[Tokenized], budget: int | None) -> list[list[Tokenized]]:
    """`batch` cut into micro-batches whose padded size stays within `budget` tokens.

    Sorted by length, so each micro-batch pads little; an example longer than the
    budget goes alone. No budget: one example per micro-batch.
    """
    if not budget:
        return [[example] for example in batch]
    chunks: list[list[Tokenized]] = []
    current: list[Tokenized] = []
    for example in sorted(batch, key=lambda t: len(t.input_ids)):
        if current and len(example.input_ids) * (len(current) + 1) > budget:
            chunks.append(current)
            current = []
        current.append(example)
    if current:
        chunks.append(current)
    return chunks


def training_device(name: str) -> str:
    """ "cuda" or "cpu" for a `train.device` setting ("auto": CUDA when torch sees one)."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("train.device is 'cuda' but torch sees no CUDA GPU: use 'auto' or 'cpu'")
    return name


def _schedule(name: str, total: int, warmup: int):
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        progress = (step - warmup) / max(1, total - warmup)
        if name == "cosine":
            return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
        if name == "linear":
            return max(0.0, 1 - progress)
        return 1.0

    return factor


def train_adapter(
    base_dir: Path,
    examples: Sequence[Tokenized],
    out_dir: Path,
    lora: LoraConfigSpec,
    train: TrainConfig,
    *,
    label: str = "",
    progress: bool = True,
) -> dict:
    """Train one LoRA adapter; resumes from out_dir/checkpoint. Returns the training log."""
    import torch
    from tqdm import tqdm

    if (out_dir / DONE_FILE).exists():
        return json.loads((out_dir / DONE_FILE).read_text(encoding="utf-8"))
    if not examples:
        raise ValueError(f"{label or out_dir.name}: no training examples")
    torch.manual_seed(train.seed)
    torch.set_num_threads(train.threads or os.cpu_count() or 1)
    device = training_device(train.device)
    checkpoint = out_dir / CHECKPOINT
    model, state = _model_to_train(base_dir, checkpoint, lora, device)
    model.to(device)
    model.train()
    per_epoch = math.ceil(len(examples) / train.grad_accum)
    total_steps = (
        train.steps.get(label) or train.max_steps or max(1, math.ceil(per_epoch * train.epochs))
    )
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=train.lr, weight_decay=train.weight_decay)
    warmup = int(train.warmup_ratio * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, _schedule(train.scheduler, total_steps, warmup)
    )
    step, losses = 0, []
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step, losses = state["step"], state["losses"]
    order = _example_order(len(examples), total_steps * train.grad_accum, train.seed)
    started = time.perf_counter()
    bar = tqdm(
        total=total_steps,
        initial=step,
        desc=f"lora {label}".strip(),
        unit="step",
        disable=not progress,
        dynamic_ncols=True,
    )
    while step < total_steps:
        batch = [
            examples[order[step * train.grad_accum + micro]] for micro in range(train.grad_accum)
        ]
        losses.append(_step(model, batch, train, device, (params, optimizer, scheduler)))
        step += 1
        bar.set_postfix(loss=f"{losses[-1]:.3f}", avg=f"{_recent(losses):.3f}")
        bar.update(1)
        if step % train.checkpoint_every == 0 and step < total_steps:
            _save_checkpoint(model, optimizer, scheduler, step, losses, checkpoint)
    bar.close()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    log = {
        "adapter": label,
        "examples": len(examples),
        "steps": total_steps,
        "grad_accum": train.grad_accum,
        "device": device,
        "seconds_this_run": round(time.perf_counter() - started, 1),
        **_loss_summary(losses),
    }
    (out_dir / DONE_FILE).write_text(json.dumps(log, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(checkpoint, ignore_errors=True)
    return log


def _model_to_train(base_dir: Path, checkpoint: Path, lora: LoraConfigSpec, device: str):  # type: ignore[no-untyped-def]
    """The base with a fresh adapter, or with the checkpoint's adapter and its saved
    optimizer state (None for a fresh start)."""
    import torch
    from peft import PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    model.config.use_cache = False
    if not (checkpoint / "state.pt").exists():
        return get_peft_model(model, lora_config(lora)), None
    model = PeftModel.from_pretrained(model, str(checkpoint), is_trainable=True)
    return model, torch.load(checkpoint / "state.pt", weights_only=False, map_location=device)


def _step(model, batch, train: TrainConfig, device: str, optimizing) -> float:  # type: ignore[no-untyped-def]
    """One optimizer step over `batch` (micro-batched, gradients accumulated); its mean
    example loss. `optimizing`: the trained parameters, the optimizer and the scheduler."""
    import torch

    params, optimizer, scheduler = optimizing
    step_loss = 0.0
    for chunk in micro_batches(batch, train.micro_tokens):
        loss = batch_loss(model, chunk, train.bf16, device) / train.grad_accum
        loss.backward()
        step_loss += loss.item()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return step_loss


def _loss_summary(losses: Sequence[float]) -> dict:
    return {
        "loss_first_10": round(sum(losses[:10]) / max(1, len(losses[:10])), 4),
        "loss_last_10": round(_recent(losses), 4),
        "losses": [round(v, 4) for v in losses],
    }


def _recent(losses: Sequence[float], n: int = 10) -> float:
    tail = losses[-n:]
    return sum(tail) / len(tail) if tail else float("nan")


def _example_order(count: int, needed: int, seed: int) -> list[int]:
    """Epoch after epoch of shuffled indices, fixed by the seed (so resume sees the same)."""
    rng = random.Random(seed)
    order: list[int] = []
    while len(order) < needed:
        epoch = list(range(count))
        rng.shuffle(epoch)
        order.extend(epoch)
    return order


def _save_checkpoint(model, optimizer, scheduler, step, losses, checkpoint: Path) -> None:
    import torch

    partial = checkpoint.with_name(CHECKPOINT + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial))
    torch.save(
        {
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "losses": losses,
        },
        partial / "state.pt",
    )
    shutil.rmtree(checkpoint, ignore_errors=True)
    partial.rename(checkpoint)
