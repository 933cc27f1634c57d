"""A reward model for issue 41: LoRA on the base with a value head on the final-layer state at
the answer's last position (the `last` state the engine already reads), trained with the
Bradley-Terry loss on labelled pairs, Auto-J's ties as a half.

    python -m training.lora.reward_model pairs --gguf G.gguf --alpacaeval N --out P.npz   # here
    python -m training.lora.reward_model grades --gguf G.gguf --out R.npz                # here
    python -m training.lora.reward_model evals --gguf G.gguf --out DIR                   # here
    python -m training.lora.reward_model orders --gguf G.gguf --pairs P.npz --out O.npz  # here
    python -m training.lora.reward_model train --gguf G.gguf --data P.npz --out DIR \\
        [--steps N] [--seconds S]                                                   # a GPU
    python -m training.lora.reward_head --pairs-run DIR [--grades-run DIR] \\
        --gguf-name MERGED.gguf --out models/judges/NAME/state_head.json            # here

`pairs` (here, llama.cpp; training/datasets/reward_data.py) writes each answer of the fitting set's
pairs as the token ids the engine's read decodes (`training.device.gpu_reads.tokenize_reads`: the
chat template, the defused control tokens, the end-of-turn token, the cut to the read's
context) and each pair as two indices and a target. The GPU machine needs no tokenizer,
template or llama.cpp.

`grades` does the same for the graded single rows of the training split. `train` loads the
same GGUF through transformers, wraps every linear layer of its blocks in a LoRA adapter
(peft) and adds the value head; on pairs each step minimises binary cross-entropy between
sigmoid(r_first - r_second) and the target (1, 0, or 0.5 for a tie, which pulls the two
rewards together); on grades, the squared error of the reward against the rating mapped
to -1..1 (the second adapter, for single grades). It writes a checkpoint (adapter, head,
optimizer, step) every `--save-every` steps and when `--seconds` runs out, and goes on from
it when run again: a 15-minute loan trains what it can, the next one continues. The result is
`DIR/adapter/` (peft), `DIR/value_head.json` and `DIR/training.json` (steps, loss curve,
device, seconds): small enough to come back in one transfer. With `--folds N --fold K` the
pairs of every K-th request (of N) are held out and measured at the end (agreement, loss;
Spearman for grades): request-grouped cross-validation of the recipe on the training split.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from training.datasets.reward_data import (
    Data,
    GradeRows,
    RewardPairs,
    load_data,
    size,
    write_evals,
    write_grades,
    write_pairs,
)
from training.device.gpu_reads import load_model, padded_ids, sequence_starts, torch_device

MID_RATING, HALF_RANGE = 5.5, 4.5  # a 1-10 rating to -1..1
CHECKPOINT = "checkpoint"
OPTIMIZER = "optimizer.pt"  # in a checkpoint: twice the adapter's size, never sent back
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class RewardModel:
    """The base with LoRA adapters and a value head: `rewards(ids, lengths)` reads each
    right-padded sequence and scores the state at its last answer position (`lengths - 2`:
    the position that predicts the end-of-turn token the read ends with)."""

    def __init__(self, base, rank: int, alpha: int, dropout: float = 0.0) -> None:  # type: ignore[no-untyped-def]
        import torch
        from peft import LoraConfig, get_peft_model

        config = LoraConfig(
            r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(LORA_TARGETS)
        )
        self.model = get_peft_model(base, config)
        width = base.config.hidden_size
        device = next(base.parameters()).device
        self.head = torch.nn.Linear(width, 1).to(device)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def parameters(self) -> list:  # type: ignore[type-arg]
        trained = [p for p in self.model.parameters() if p.requires_grad]
        return trained + list(self.head.parameters())

    def states(self, ids, lengths):  # type: ignore[no-untyped-def]
        return final_states(self.model, ids, lengths)

    def rewards(self, ids, lengths):  # type: ignore[no-untyped-def]
        return self.head(self.states(ids, lengths).float())[:, 0]


def final_states(peft_model, ids, lengths):  # type: ignore[no-untyped-def]
    """The final-layer state at each right-padded sequence's last answer position, read
    through the PeftModel's active adapter."""
    import torch

    hidden = peft_model.get_base_model().model(input_ids=ids).last_hidden_state
    rows = torch.arange(len(lengths), device=ids.device)
    return hidden[rows, lengths - 2]


TOKENS_PER_PASS = 16384  # padded tokens a pass holds: about 60 GB of the 1.5B's activations


@dataclass(frozen=True)
class TrainSettings:
    steps: int = 400
    batch_pairs: int = 16
    learning_rate: float = 1e-4
    rank: int = 8  # all seven projections of the 1.5B: 9.2 M parameters, 37 MB (one return)
    alpha: int = 16
    save_every: int = 50
    seed: int = 0
    seconds: float = float("inf")
    # request-grouped cross-validation: with folds >= 2, the pairs (rows) of every request
    # whose group % folds == fold are held out of training and measured at the end
    folds: int = 0
    fold: int = 0


def batch_tensors(pairs: Data, reads: np.ndarray, device: str):  # type: ignore[no-untyped-def]
    """`reads` as right-padded token ids (training.device.gpu_reads.padded_ids) and their
    lengths."""
    import torch

    starts = sequence_starts(pairs.lengths)
    ids = padded_ids(pairs.flat, starts, pairs.lengths, reads)
    lengths = torch.from_numpy(pairs.lengths[reads].astype(np.int64))
    return ids.to(device), lengths.to(device)


def pair_loss(model: RewardModel, pairs: RewardPairs, chosen: np.ndarray, device: str):  # type: ignore[no-untyped-def]
    """Bradley-Terry cross-entropy of the pairs `chosen`, and how many it ranks as labelled."""
    import torch

    reads = np.concatenate([pairs.first[chosen], pairs.second[chosen]])
    ids, lengths = batch_tensors(pairs, reads, device)
    rewards = model.rewards(ids, lengths)
    margin = rewards[: len(chosen)] - rewards[len(chosen) :]
    target = torch.from_numpy(pairs.target[chosen]).to(device)
    loss = torch.nn.functional.binary_cross_entropy_with_logits(margin, target)
    decided = target != 0.5
    right = ((margin > 0) == (target > 0.5))[decided].sum().item()
    return loss, int(right), int(decided.sum().item())


def grade_loss(model: RewardModel, rows: GradeRows, chosen: np.ndarray, device: str):  # type: ignore[no-untyped-def]
    """Squared error of the reward against the rating mapped to -1..1, and how many it puts
    on the right side of the middle (5.5)."""
    import torch

    ids, lengths = batch_tensors(rows, chosen, device)
    rewards = model.rewards(ids, lengths)
    target = (torch.from_numpy(rows.rating[chosen]).to(device) - MID_RATING) / HALF_RANGE
    loss = torch.nn.functional.mse_loss(rewards, target)
    right = ((rewards > 0) == (target > 0)).sum().item()
    return loss, int(right), len(chosen)


def batch_loss(model: RewardModel, data: Data, chosen: np.ndarray, device: str):  # type: ignore[no-untyped-def]
    if isinstance(data, RewardPairs):
        return pair_loss(model, data, chosen, device)
    return grade_loss(model, data, chosen, device)


def held_out(data: Data, settings: TrainSettings) -> np.ndarray:
    """Whether each pair (row) is held out: its request's group in the fold (none without
    folds). Every pair of a request falls on the same side."""
    if settings.folds < 2:
        return np.zeros(size(data), dtype=bool)
    return data.group % settings.folds == settings.fold


def step_order(data: Data, settings: TrainSettings, step: int) -> np.ndarray:
    """The pairs (or rows) of `step`: epochs of a seeded shuffle of those trained on, the
    same on every rerun."""
    pool = np.flatnonzero(~held_out(data, settings))
    per_epoch = max(1, len(pool) // settings.batch_pairs)
    epoch, within = divmod(step, per_epoch)
    order = pool[np.random.default_rng(settings.seed + epoch).permutation(len(pool))]
    return order[within * settings.batch_pairs : (within + 1) * settings.batch_pairs]


def measure(model: RewardModel, data: Data, chosen: np.ndarray, device: str, batch: int) -> dict:  # type: ignore[no-untyped-def]
    """The trained model on the pairs (rows) `chosen`: for pairs, the share of decided ones
    ranked as labelled and the mean Bradley-Terry loss; for grades, the Spearman
    correlation of reward and rating."""
    import torch
    from scipy.stats import spearmanr

    losses, right, decided, rewards = [], 0, 0, []
    with torch.no_grad():
        for start in range(0, len(chosen), batch):
            part = chosen[start : start + batch]
            if isinstance(data, RewardPairs):
                loss, ok, counted = pair_loss(model, data, part, device)
                losses.append(float(loss) * len(part))
                right, decided = right + ok, decided + counted
            else:
                ids, lengths = batch_tensors(data, part, device)
                rewards += model.rewards(ids, lengths).float().cpu().tolist()
    if isinstance(data, RewardPairs):
        return {"pairs": len(chosen), "agreement": round(100 * right / max(decided, 1), 1),
                "loss": round(sum(losses) / max(len(chosen), 1), 4)}  # fmt: skip
    rho = spearmanr(rewards, data.rating[chosen]).statistic if len(chosen) > 2 else float("nan")
    return {"rows": len(chosen), "spearman": round(float(rho), 4)}


def save_checkpoint(folder: Path, model: RewardModel, optimizer, state: dict) -> None:  # type: ignore[no-untyped-def]
    """Adapter, head, optimizer and progress, written beside and then swapped in whole.
    Without its optimizer file (what comes back from a GPU machine) a checkpoint still
    goes on: the optimizer's moments start over."""
    import torch

    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.model.save_pretrained(partial / "adapter")
    torch.save(model.head.state_dict(), partial / "head.pt")
    torch.save(optimizer.state_dict(), partial / OPTIMIZER)
    (partial / "state.json").write_text(json.dumps(state), encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def load_checkpoint(folder: Path, model: RewardModel, optimizer) -> dict:  # type: ignore[no-untyped-def]
    """Progress of an earlier run (adapter, head and optimizer restored), or a fresh start."""
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    if not (folder / "state.json").is_file():
        return {"step": 0, "losses": [], "right": 0, "decided": 0, "seconds": 0.0}
    set_peft_model_state_dict(
        model.model, load_file(folder / "adapter" / "adapter_model.safetensors")
    )
    device = next(model.head.parameters()).device
    model.head.load_state_dict(torch.load(folder / "head.pt", map_location=device))
    if (folder / OPTIMIZER).is_file():  # a checkpoint brought back from a GPU has none
        optimizer.load_state_dict(torch.load(folder / OPTIMIZER, map_location=device))
    return json.loads((folder / "state.json").read_text(encoding="utf-8"))


def train(base, data: Data, out: Path, settings: TrainSettings, device: str) -> dict:  # type: ignore[no-untyped-def]
    """Train (or go on training) until `settings.steps` or `settings.seconds`; the progress.
    Pairs train the preference (Bradley-Terry), graded rows the grade (regression through
    the same head). The adapter, head and record go to `out` once the last step is done."""
    model, state = train_until(base, data, out, settings, device)
    if state["step"] >= settings.steps:
        finish(model, data, out, state, settings, device)
    return state


def train_until(base, data: Data, out: Path, settings: TrainSettings, device: str):  # type: ignore[no-untyped-def]
    """The model and its progress after training until `settings.steps` or
    `settings.seconds`, from `out`'s checkpoint if there is one; checkpointed on the way."""
    import torch

    torch.manual_seed(settings.seed)
    random.seed(settings.seed)
    model = RewardModel(base, settings.rank, settings.alpha)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    checkpoint = out / CHECKPOINT
    state = load_checkpoint(checkpoint, model, optimizer)
    began = time.time()
    while state["step"] < settings.steps and time.time() - began < settings.seconds:
        chosen = step_order(data, settings, state["step"])
        loss, right, decided = train_step(model, optimizer, data, chosen, device)
        state["step"] += 1
        state["losses"].append(round(loss, 5))
        state["right"] += right
        state["decided"] += decided
        if state["step"] % settings.save_every == 0:
            save_checkpoint(checkpoint, model, optimizer, state)
            recent = np.mean(state["losses"][-settings.save_every :])
            print(f"step {state['step']}: loss {recent:.4f}", flush=True)
    state["seconds"] = round(state["seconds"] + time.time() - began, 1)
    save_checkpoint(checkpoint, model, optimizer, state)
    return model, state


def finish(  # type: ignore[no-untyped-def]
    model: RewardModel, data: Data, out: Path, state: dict, settings: TrainSettings, device: str
) -> None:
    """The held-out fold measured (with folds) and the result written to `out`."""
    held = np.flatnonzero(held_out(data, settings))
    if len(held):
        state["held_out"] = measure(model, data, held, device, settings.batch_pairs)
        print(f"held-out fold {settings.fold} of {settings.folds}: {state['held_out']}")
    write_result(out, model, state, settings, device)


def passes(data: Data, chosen: np.ndarray, budget: int = TOKENS_PER_PASS) -> list[np.ndarray]:
    """`chosen` cut, in order, into runs whose reads padded to their longest hold at most
    `budget` tokens (a run holds one pair or row at least): one forward and backward pass
    each, so a step's memory does not depend on its longest answers."""
    if isinstance(data, RewardPairs):
        longest = np.maximum(data.lengths[data.first[chosen]], data.lengths[data.second[chosen]])
        reads = 2
    else:
        longest, reads = data.lengths[chosen], 1
    runs: list[list[int]] = [[]]
    widest = 0
    for item, length in zip(chosen.tolist(), longest.tolist(), strict=True):
        widest = max(widest, length)
        if runs[-1] and widest * reads * (len(runs[-1]) + 1) > budget:
            runs.append([])
            widest = length
        runs[-1].append(item)
    return [np.array(run, dtype=chosen.dtype) for run in runs]


def train_step(  # type: ignore[no-untyped-def]
    model: RewardModel,
    optimizer,
    data: Data,
    chosen: np.ndarray,
    device: str,
    budget: int = TOKENS_PER_PASS,
):
    """One optimizer step on `chosen`, its gradient summed over passes (`passes`) weighted by
    their share, so it is the whole batch's mean; the loss, right and decided counts."""
    import torch

    optimizer.zero_grad()
    total, right, decided = 0.0, 0, 0
    for run in passes(data, chosen, budget):
        with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
            loss, ok, counted = batch_loss(model, data, run, device)
        share = len(run) / len(chosen)
        (loss * share).backward()
        total += float(loss.item()) * share
        right, decided = right + ok, decided + counted
    optimizer.step()
    return total, right, decided


def write_result(
    out: Path, model: RewardModel, state: dict, settings: TrainSettings, device: str
) -> None:
    """`out/adapter/`, `out/value_head.json` and `out/training.json`."""
    import torch

    model.model.save_pretrained(out / "adapter")
    head = {
        "weights": model.head.weight.detach().float().cpu().numpy()[0].tolist(),
        "bias": float(model.head.bias.detach().float().cpu()),
        "reads": "the final-layer state at the answer's last position (the engine's `last`)",
    }
    (out / "value_head.json").write_text(json.dumps(head), encoding="utf-8")
    gpu = torch.cuda.get_device_name() if device == "cuda" else None
    record = {**state, "settings": vars(settings) | {"seconds": str(settings.seconds)},
              "device": device, "gpu": gpu, "torch": torch.__version__}  # fmt: skip
    (out / "training.json").write_text(json.dumps(record, indent=1), encoding="utf-8")


def run_training(args: argparse.Namespace) -> int:
    device = torch_device()
    given = {f.name: getattr(args, f.name) for f in fields(TrainSettings) if hasattr(args, f.name)}
    settings = TrainSettings(**given)
    data = load_data(args.data)
    base = load_model(args.gguf, device)
    state = train(base, data, args.out, settings, device)
    done = "done" if state["step"] >= settings.steps else "stopped (run again to go on)"
    print(f"{done} at step {state['step']} of {settings.steps} in {state['seconds']} s")
    return 0


@dataclass(frozen=True)
class ValueHead:
    """A trained value head (`value_head.json`), applied to the engine's own read."""

    weights: np.ndarray
    bias: float

    @classmethod
    def load(cls, path: Path) -> ValueHead:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return cls(np.array(saved["weights"], dtype=np.float32), float(saved["bias"]))

    def reward(self, backend, question: str, answer: str) -> float:  # type: ignore[no-untyped-def]
        """The reward of `answer` read after `question` by llama.cpp (a GGUF with the adapter
        merged in): the head on the `last` half of the read's pooled states."""
        from models.readings import pooled

        read = pooled(backend.read_reply(question, answer).states)
        return float(read[len(read) // 2 :] @ self.weights + self.bias)


def add_training_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--data", type=Path, required=True, help="a pairs or grades file")
    defaults = TrainSettings()
    for name in ("steps", "batch_pairs", "rank", "alpha", "save_every", "folds", "fold"):
        flag = f"--{name.replace('_', '-')}"
        command.add_argument(flag, type=int, default=getattr(defaults, name))
    command.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    command.add_argument("--seconds", type=float, default=defaults.seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.lora.reward_model", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    pairs = commands.add_parser("pairs", help="the fitting set's pairs as token ids (here)")
    pairs.add_argument("--gguf", type=Path, required=True)
    pairs.add_argument("--alpacaeval", type=int, default=3600)
    pairs.add_argument("--per-request", type=int, default=16)
    pairs.add_argument("--out", type=Path, required=True)
    grades = commands.add_parser("grades", help="the graded single rows as token ids (here)")
    grades.add_argument("--gguf", type=Path, required=True)
    grades.add_argument("--out", type=Path, required=True)
    evals = commands.add_parser("evals", help="the evaluation files as token ids (here)")
    evals.add_argument("--gguf", type=Path, required=True)
    evals.add_argument("--out", type=Path, required=True, help="a folder, one file each")
    orders = commands.add_parser("orders", help="hard negatives for the base to write (here)")
    orders.add_argument("--gguf", type=Path, required=True)
    orders.add_argument("--pairs", type=Path, required=True, help="the pairs file they join")
    orders.add_argument("--alpacaeval", type=int, default=3600)
    orders.add_argument("--per-request", type=int, default=16)
    orders.add_argument("--out", type=Path, required=True)
    training = commands.add_parser("train", help="LoRA + value head on pairs or grades (a GPU)")
    training.add_argument("--gguf", type=Path, required=True)
    training.add_argument("--out", type=Path, required=True)
    add_training_options(training)
    args = parser.parse_args(argv)
    if args.command == "pairs":
        return write_pairs(args.gguf, args.alpacaeval, args.per_request, args.out)
    if args.command == "grades":
        return write_grades(args.gguf, args.out)
    if args.command == "evals":
        return write_evals(args.gguf, args.out)
    if args.command == "orders":
        from training.datasets.written_negatives import write_orders

        return write_orders(args.gguf, args.pairs, args.alpacaeval, args.per_request, args.out)
    return run_training(args)


if __name__ == "__main__":
    sys.exit(main())
