"""A reward model for issue 41: LoRA on the base with a value head on the final-layer state at
the answer's last position (the `last` state the engine already reads), trained with the
Bradley-Terry loss on labelled pairs, Auto-J's ties as a half.

    python -m training.reward_model pairs --gguf G.gguf --alpacaeval N --out P.npz   # here
    python -m training.reward_model grades --gguf G.gguf --out R.npz                # here
    python -m training.reward_model train --gguf G.gguf --data P.npz --out DIR \\
        [--steps N] [--seconds S]                                                   # a GPU
    python -m training.reward_model gpu-run --store S --runs R --back $OUT/back --data P.npz

`pairs` (here, llama.cpp) writes each answer of the fitting set's pairs as the token ids the
engine's read decodes (`training.gpu_reads.tokenize_reads`: the chat template, the defused
control tokens, the end-of-turn token, the cut to the read's context) and each pair as two
indices and a target. The GPU machine needs no tokenizer, template or llama.cpp.

`grades` does the same for the graded single rows of the training split. `train` loads the
same GGUF through transformers, wraps every linear layer of its blocks in a LoRA adapter
(peft) and adds the value head; on pairs each step minimises binary cross-entropy between
sigmoid(r_first - r_second) and the target (1, 0, or 0.5 for a tie, which pulls the two
rewards together); on grades, the squared error of the reward against the rating mapped
to -1..1 (the second adapter, for single grades). It writes a checkpoint (adapter, head,
optimizer, step) every `--save-every` steps and when `--seconds` runs out, and goes on from
it when run again: a 15-minute loan trains what it can, the next one continues. The result is
`DIR/adapter/` (peft), `DIR/value_head.json` and `DIR/training.json` (steps, loss curve,
device, seconds): small enough to come back in one transfer.
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

from training.gpu_reads import ArrayTable, load_model, tokenize_reads, torch_device

TARGETS = {"A": 1.0, "B": 0.0, "tie": 0.5}
MID_RATING, HALF_RANGE = 5.5, 4.5  # a 1-10 rating to -1..1
CHECKPOINT = "checkpoint"
OPTIMIZER = "optimizer.pt"  # in a checkpoint: twice the adapter's size, never sent back
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class RewardPairs(ArrayTable):
    """Reads as token ids (`training.gpu_reads.TokenTable`'s fields) and the pairs over them:
    pair i compares read `first[i]` with read `second[i]`, `target[i]` the probability that
    the first is better (1, 0, or 0.5 for a tie), `group[i]` its request (for grouped splits)."""

    keys: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    answer_lengths: np.ndarray
    first: np.ndarray
    second: np.ndarray
    target: np.ndarray
    group: np.ndarray


def pair_tokens(backend, items) -> RewardPairs:  # type: ignore[no-untyped-def]
    """The reads and pairs of labelled pairwise `items` (those with a winner)."""
    from training.likelihood_data import cut
    from training.reading_cache import cond_key

    labelled = [i for i in items if i.label is not None and i.label.winner in TARGETS]
    texts = [cut(item.question, answer) for item in labelled for answer in item.answers]
    table = tokenize_reads(backend, texts)
    conditioned = [n for n, key in enumerate(table.keys) if str(key).startswith("c")]
    keep = np.array(conditioned, dtype=int)
    starts = np.concatenate([[0], np.cumsum(table.lengths)[:-1]])
    flat = [table.flat[starts[n] : starts[n] + table.lengths[n]] for n in keep]
    index = {str(table.keys[n]): row for row, n in enumerate(keep)}
    requests: dict[str, int] = {}
    first, second, target, group = [], [], [], []
    for item in labelled:
        a, b = (index[cond_key(*cut(item.question, answer))] for answer in item.answers)
        first.append(a)
        second.append(b)
        target.append(TARGETS[item.label.winner])
        group.append(requests.setdefault(item.question, len(requests)))
    return RewardPairs(
        keys=table.keys[keep],
        flat=np.concatenate(flat).astype(np.int32),
        lengths=table.lengths[keep],
        answer_lengths=table.answer_lengths[keep],
        first=np.array(first, dtype=np.int32),
        second=np.array(second, dtype=np.int32),
        target=np.array(target, dtype=np.float32),
        group=np.array(group, dtype=np.int32),
    )


def write_pairs(gguf: Path, alpacaeval: int, per_request: int, out: Path) -> int:
    """The fitting set's pairs (training split only: training.likelihood_data) as token ids."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.likelihood_data import fitting_pairs

    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    pairs = pair_tokens(backend, fitting_pairs(alpacaeval, per_request))
    backend.close()
    pairs.save(out)
    ties = int((pairs.target == 0.5).sum())
    print(f"{len(pairs.first)} pairs ({ties} ties) over {len(pairs.keys)} reads, "
          f"{int(pairs.lengths.sum())} tokens")  # fmt: skip
    return 0


@dataclass
class GradeRows(ArrayTable):
    """Graded single answers as token ids (`TokenTable`'s fields), `rating[i]` the 1-10
    rating of read i and `group[i]` its request."""

    keys: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    answer_lengths: np.ndarray
    rating: np.ndarray
    group: np.ndarray


def grade_tokens(backend, items) -> GradeRows:  # type: ignore[no-untyped-def]
    """The reads of graded single-answer `items` (those with a score)."""
    from training.likelihood_data import cut

    rated = [i for i in items if i.label is not None and i.label.score is not None]
    table = tokenize_reads(backend, [cut(item.question, item.answers[0]) for item in rated])
    conditioned = np.array([str(k).startswith("c") for k in table.keys])
    starts = np.concatenate([[0], np.cumsum(table.lengths)[:-1]])
    flat = [table.flat[b : b + n] for b, n, c in zip(starts, table.lengths, conditioned) if c]
    requests: dict[str, int] = {}
    return GradeRows(
        keys=table.keys[conditioned],
        flat=np.concatenate(flat).astype(np.int32),
        lengths=table.lengths[conditioned],
        answer_lengths=table.answer_lengths[conditioned],
        rating=np.array([i.label.score for i in rated], dtype=np.float32),
        group=np.array([requests.setdefault(i.question, len(requests)) for i in rated]),
    )


def write_grades(gguf: Path, out: Path) -> int:
    """The training split's graded single rows (training.state_head_data) as token ids."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.state_head_data import single_rows

    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    rows = grade_tokens(backend, single_rows()[0])
    backend.close()
    rows.save(out)
    print(f"{len(rows.rating)} graded rows, {int(rows.lengths.sum())} tokens")
    return 0


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
        """The final-layer state at each sequence's last answer position."""
        import torch

        inner = self.model.get_base_model()
        hidden = inner.model(input_ids=ids).last_hidden_state
        rows = torch.arange(len(lengths), device=ids.device)
        return hidden[rows, lengths - 2]

    def rewards(self, ids, lengths):  # type: ignore[no-untyped-def]
        return self.head(self.states(ids, lengths).float())[:, 0]


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


def batch_tensors(pairs: RewardPairs | GradeRows, reads: np.ndarray, device: str):  # type: ignore[no-untyped-def]
    """`reads` as right-padded token ids and their lengths (padding after a sequence changes
    nothing before it under causal attention)."""
    import torch

    starts = np.concatenate([[0], np.cumsum(pairs.lengths)[:-1]])
    longest = int(pairs.lengths[reads].max())
    ids = torch.zeros((len(reads), longest), dtype=torch.long)
    for row, n in enumerate(reads):
        piece = pairs.flat[starts[n] : starts[n] + pairs.lengths[n]]
        ids[row, : len(piece)] = torch.from_numpy(piece.astype(np.int64))
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


def batch_loss(model: RewardModel, data: RewardPairs | GradeRows, chosen: np.ndarray, device: str):  # type: ignore[no-untyped-def]
    if isinstance(data, RewardPairs):
        return pair_loss(model, data, chosen, device)
    return grade_loss(model, data, chosen, device)


def size(data: RewardPairs | GradeRows) -> int:
    """Pairs, or graded rows: what a step draws from."""
    return len(data.first) if isinstance(data, RewardPairs) else len(data.rating)


def load_data(path: Path) -> RewardPairs | GradeRows:
    """A `pairs` or a `grades` file."""
    with np.load(path) as table:
        kind = RewardPairs if "first" in table.files else GradeRows
    return kind.load(path)


def step_order(data: RewardPairs | GradeRows, settings: TrainSettings, step: int) -> np.ndarray:
    """The pairs (or rows) of `step`: epochs of a seeded shuffle, the same on every rerun."""
    per_epoch = max(1, size(data) // settings.batch_pairs)
    epoch, within = divmod(step, per_epoch)
    order = np.random.default_rng(settings.seed + epoch).permutation(size(data))
    return order[within * settings.batch_pairs : (within + 1) * settings.batch_pairs]


def save_checkpoint(folder: Path, model: RewardModel, optimizer, state: dict) -> None:  # type: ignore[no-untyped-def]
    """Adapter, head, optimizer and progress, written beside and then swapped in whole.
    Without its optimizer file (what comes back from a GPU machine) a checkpoint still
    goes on: the optimizer's moments start over."""
    import shutil

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


def train(
    base, data: RewardPairs | GradeRows, out: Path, settings: TrainSettings, device: str
) -> dict:  # type: ignore[no-untyped-def]
    """Train (or go on training) until `settings.steps` or `settings.seconds`; the progress.
    Pairs train the preference (Bradley-Terry), graded rows the grade (regression through
    the same head). The adapter, head and record go to `out` once the last step is done."""
    import torch

    torch.manual_seed(settings.seed)
    random.seed(settings.seed)
    model = RewardModel(base, settings.rank, settings.alpha)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
    checkpoint = out / CHECKPOINT
    state = load_checkpoint(checkpoint, model, optimizer)
    began = time.time()
    autocast = device == "cuda"
    while state["step"] < settings.steps and time.time() - began < settings.seconds:
        chosen = step_order(data, settings, state["step"])
        with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
            loss, right, decided = batch_loss(model, data, chosen, device)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        state["step"] += 1
        state["losses"].append(round(float(loss.item()), 5))
        state["right"] += right
        state["decided"] += decided
        if state["step"] % settings.save_every == 0:
            save_checkpoint(checkpoint, model, optimizer, state)
            recent = np.mean(state["losses"][-settings.save_every :])
            print(f"step {state['step']}: loss {recent:.4f}", flush=True)
    state["seconds"] = round(state["seconds"] + time.time() - began, 1)
    save_checkpoint(checkpoint, model, optimizer, state)
    if state["step"] >= settings.steps:
        write_result(out, model, state, settings, device)
    return state


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


def gpu_run(args: argparse.Namespace) -> int:
    """The whole GPU part in one command: the base joined from the parts earlier calls left
    in `--store` (training.device_transfer), an earlier loan's checkpoint carried back in
    (`--resume`), training for `--seconds`, and the run packed into `--back` for the
    return: its checkpoint without the optimizer (whose adapter is the result's), the
    value head and the record once done."""
    from training.device_transfer import MANIFEST, join, pack

    manifest = json.loads((args.store / MANIFEST).read_text(encoding="utf-8"))
    gguf = args.store.parent / manifest["file"]
    if not gguf.is_file():
        join(args.store, gguf)
    run = args.runs / args.data.stem
    if args.resume is not None and not (run / CHECKPOINT / "state.json").is_file():
        shutil.copytree(args.resume, run / CHECKPOINT, dirs_exist_ok=True)
    args.gguf, args.out = gguf, run
    code = run_training(args)
    # the checkpoint's adapter is the result's too: one copy comes back (37 MB), no optimizer
    pack(run, args.back, leave_out=(f"{CHECKPOINT}/{OPTIMIZER}", "adapter"))
    return code


def add_training_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--data", type=Path, required=True, help="a pairs or grades file")
    defaults = TrainSettings()
    for name in ("steps", "batch_pairs", "rank", "alpha", "save_every"):
        flag = f"--{name.replace('_', '-')}"
        command.add_argument(flag, type=int, default=getattr(defaults, name))
    command.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    command.add_argument("--seconds", type=float, default=defaults.seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.reward_model", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    pairs = commands.add_parser("pairs", help="the fitting set's pairs as token ids (here)")
    pairs.add_argument("--gguf", type=Path, required=True)
    pairs.add_argument("--alpacaeval", type=int, default=3600)
    pairs.add_argument("--per-request", type=int, default=16)
    pairs.add_argument("--out", type=Path, required=True)
    grades = commands.add_parser("grades", help="the graded single rows as token ids (here)")
    grades.add_argument("--gguf", type=Path, required=True)
    grades.add_argument("--out", type=Path, required=True)
    training = commands.add_parser("train", help="LoRA + value head on pairs or grades (a GPU)")
    training.add_argument("--gguf", type=Path, required=True)
    training.add_argument("--out", type=Path, required=True)
    add_training_options(training)
    gpu = commands.add_parser("gpu-run", help="join the base, train, pack (the GPU machine)")
    gpu.add_argument("--store", type=Path, required=True, help="where the parts were received")
    gpu.add_argument("--runs", type=Path, required=True, help="runs, outside the checkout")
    gpu.add_argument("--back", type=Path, required=True, help="under $OUT: what comes back")
    gpu.add_argument("--resume", type=Path, help="a checkpoint an earlier loan brought back")
    add_training_options(gpu)
    args = parser.parse_args(argv)
    if args.command == "gpu-run":
        return gpu_run(args)
    if args.command == "pairs":
        return write_pairs(args.gguf, args.alpacaeval, args.per_request, args.out)
    if args.command == "grades":
        return write_grades(args.gguf, args.out)
    return run_training(args)


if __name__ == "__main__":
    sys.exit(main())
