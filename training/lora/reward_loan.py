"""The whole GPU part of issue 41 in one command, for a lent machine's few minutes.

    python -m training.lora.reward_loan --store S --runs R --back $OUT/back \\
        --pairs P.npz --grades G.npz --evals DIR --seconds N [--resume DIR] [--orders O.npz]

On the device machine, after earlier calls left the base's parts in `--store`
(training.device.device_transfer), it:

1. joins the base GGUF and loads it once (transformers dequantizes it);
   with `--orders`, the base first writes the hard negatives (training.datasets.written_negatives)
   within `--write-seconds`, and their pairs join `--pairs` (kept in the runs for a later loan);
2. trains the preference adapter on `--pairs` and then the grade adapter on `--grades`
   (training.lora.reward_model), each from a fresh copy of the base, within what is left of
   `--seconds` (four fifths of it to the pairs), at most `--pairs-epochs` and
   `--grades-epochs`; with `--folds` one fold of requests is held out and measured, the
   recipe's cross-validation on the training split;
3. merges the two adapters with DARE-TIES (training.shipping.merge.combine_adapters, as the pipeline
   merges pj-smollm2-135m's); each of `--grades-weights` is another merge, read but not kept;
4. reads every file of `--evals` (token ids: training.lora.reward_model evals) and the held-out
   fold with each of the three models, each of its heads applied: `rewards.npz`, keyed
   `model/head/set`, one value per read (NaN where not read);
5. packs the runs for the return after each stage (adapters in bfloat16, no optimizer), so
   a call cut short still brings back what was done.

`--resume DIR` (an earlier loan's unpacked runs) goes on from its checkpoints.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from training.datasets.reward_data import Data, RewardPairs, load_data, size
from training.device.device_transfer import MANIFEST, join, pack
from training.device.gpu_reads import load_model, token_batches, torch_device
from training.lora.reward_model import (
    CHECKPOINT,
    OPTIMIZER,
    TOKENS_PER_PASS,
    TrainSettings,
    batch_tensors,
    final_states,
    finish,
    held_out,
    train_until,
)

JOBS = ("pairs", "grades")
MERGED = "merged"
WRITTEN = "pairs-written.npz"  # the pairs with the written negatives, back for a later loan
PAIRS_SHARE = 0.8  # of the training time left when the pairs begin


def joined_base(store: Path) -> Path:
    """The base GGUF, joined from the parts in `store` once."""
    manifest = json.loads((store / MANIFEST).read_text(encoding="utf-8"))
    gguf = store.parent / manifest["file"]
    if not gguf.is_file():
        join(store, gguf)
    return gguf


def job_settings(data: Data, epochs: float, seconds: float, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The training settings of one adapter: at most `epochs` over the pairs (rows) kept for
    training, at most `seconds`."""
    settings = TrainSettings(
        batch_pairs=args.batch_pairs,
        learning_rate=args.learning_rate,
        rank=args.rank,
        alpha=args.alpha,
        folds=args.folds,
        fold=args.fold,
        seconds=max(seconds, 1.0),
    )
    trained = int((~held_out(data, settings)).sum())
    return replace(settings, steps=max(1, math.ceil(epochs * trained / settings.batch_pairs)))


def held_reads(data: Data, settings: TrainSettings) -> np.ndarray:
    """The reads of the held-out fold's pairs (rows)."""
    held = np.flatnonzero(held_out(data, settings))
    if isinstance(data, RewardPairs):
        return np.unique(np.concatenate([data.first[held], data.second[held]]))
    return held


def read_rewards(peft_model, heads: dict, table: Data, reads: np.ndarray, device: str) -> dict:  # type: ignore[no-untyped-def]
    """Each head's reward of each read in `reads` (float32, TF32 on a GPU, as close to the
    engine's arithmetic as the card allows): name -> one value per read of `table`, NaN
    for those not read. Longest first, in batches of at most TOKENS_PER_PASS tokens."""
    import torch

    found = {name: np.full(len(table.lengths), np.nan, np.float32) for name in heads}
    order = reads[np.argsort(-table.lengths[reads], kind="stable")]
    with torch.no_grad():
        for batch in token_batches(order, table.lengths, TOKENS_PER_PASS):
            ids, lengths = batch_tensors(table, batch, device)
            states = final_states(peft_model, ids, lengths).float()
            for name, head in heads.items():
                found[name][batch] = head(states)[:, 0].cpu().numpy()
    return found


def read_all(rewards: dict, name: str, peft_model, heads: dict, sets: dict, device: str) -> None:  # type: ignore[no-untyped-def]
    """`rewards[model/head/set]` for every set (name -> (table, reads))."""
    began = time.time()
    for set_name, (table, reads) in sets.items():
        for head, values in read_rewards(peft_model, heads, table, reads, device).items():
            rewards[f"{name}/{head}/{set_name}"] = values
    print(f"{name}: {len(sets)} sets read in {time.time() - began:.1f} s", flush=True)


def to_bfloat16(adapter: Path) -> None:
    """The adapter's weights rewritten in bfloat16: half the size for the return."""
    import torch
    from safetensors.torch import load_file, save_file

    path = adapter / "adapter_model.safetensors"
    weights = {k: v.to(torch.bfloat16).contiguous() for k, v in load_file(path).items()}
    save_file(weights, path, metadata={"format": "pt"})


def pack_back(runs: Path, back: Path, record: dict, rewards: dict) -> None:
    """What is done so far, packed into `back` (replacing an earlier pack): the checkpoints
    without their optimizer, the results without their second copy of the adapter."""
    (runs / "loan.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    np.savez_compressed(runs / "rewards.npz", **rewards)
    kept_here = (f"{CHECKPOINT}/{OPTIMIZER}", "adapter")
    leave_out = tuple(f"{job}/{part}" for job in JOBS for part in kept_here)
    fresh = back.with_name(back.name + "-next")
    shutil.rmtree(fresh, ignore_errors=True)
    pack(runs, fresh, leave_out=leave_out)
    shutil.rmtree(back, ignore_errors=True)
    fresh.rename(back)
    print(f"packed: {sorted(p.name for p in back.iterdir())}", flush=True)


def train_job(job: str, base, data: Data, seconds: float, args, device: str):  # type: ignore[no-untyped-def]
    """One adapter trained (from `--resume`'s checkpoint if any) and finished: the model and
    its progress."""
    out = args.runs / job
    earlier = args.resume / job / CHECKPOINT if args.resume else None
    if earlier is not None and earlier.is_dir() and not (out / CHECKPOINT).is_dir():
        shutil.copytree(earlier, out / CHECKPOINT)
    epochs = args.pairs_epochs if job == "pairs" else args.grades_epochs
    settings = job_settings(data, epochs, seconds, args)
    print(f"{job}: {size(data)} items, up to {settings.steps} steps, {seconds:.0f} s", flush=True)
    model, state = train_until(copy.deepcopy(base), data, out, settings, device)
    state["stopped_by_time"] = state["step"] < settings.steps
    finish(model, data, out, state, settings, device)
    return model, state


def merged_model(base, runs: Path, args, grades_weight: float = 1.0):  # type: ignore[no-untyped-def]
    """A fresh copy of the base with both adapters loaded and merged (DARE-TIES), active."""
    from peft import PeftModel

    from training.shipping.merge import combine_adapters

    model = PeftModel.from_pretrained(
        copy.deepcopy(base), str(runs / "pairs" / "adapter"), adapter_name="pairs"
    )
    model.load_adapter(str(runs / "grades" / "adapter"), adapter_name="grades")
    weights = {"pairs": 1.0, "grades": grades_weight}
    combine_adapters(model, weights, args.method, args.density, seed=0)
    return model.eval()


def written_pairs(base, pairs: RewardPairs, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """`pairs` with the hard negatives the base writes for `--orders` within `--write-seconds`
    (training.datasets.written_negatives), kept in the runs for the return; and a record."""
    from training.datasets.written_negatives import WritingOrders, with_written
    from training.lora.base_writes import write_replies

    began = time.time()
    orders = WritingOrders.load(args.orders)
    replies = write_replies(base, orders, began + args.write_seconds)
    more = with_written(pairs, orders, replies)
    args.runs.mkdir(parents=True, exist_ok=True)
    more.save(args.runs / WRITTEN)
    written = [len(r) for r in replies if r is not None]
    return more, {"orders": len(orders.own), "prompts": len(replies), "written": len(written),
                  "mean_tokens": round(float(np.mean(written)), 1) if written else 0.0,
                  "pairs_added": size(more) - size(pairs),
                  "seconds": round(time.time() - began, 1)}  # fmt: skip


def run_loan(args: argparse.Namespace) -> int:
    import torch

    began = time.time()
    deadline = began + args.seconds
    device = torch_device()
    torch.backends.cuda.matmul.allow_tf32 = True
    base = load_model(joined_base(args.store), device)
    record: dict = {"load_seconds": round(time.time() - began, 1), "device": device,
                    "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
                    "torch": torch.__version__, "jobs": {}}  # fmt: skip
    print(f"base loaded in {record['load_seconds']} s on {record['gpu'] or device}", flush=True)
    data = {"pairs": load_data(args.pairs), "grades": load_data(args.grades)}
    if args.orders:
        data["pairs"], record["written"] = written_pairs(base, data["pairs"], args)
        print(f"written: {record['written']}", flush=True)
    sets = {p.stem: (t, np.arange(len(t.lengths))) for p in sorted(args.evals.glob("*.npz"))
            for t in [load_data(p)]}  # fmt: skip
    folds = TrainSettings(folds=args.folds, fold=args.fold)
    sets |= {f"train-{job}": (data[job], held_reads(data[job], folds)) for job in JOBS}
    rewards: dict = {}
    heads: dict = {}
    for job in JOBS:
        left = deadline - time.time() - args.reserve
        seconds = left * (PAIRS_SHARE if job == "pairs" else 1.0)
        model, state = train_job(job, base, data[job], seconds, args, device)
        record["jobs"][job] = {k: v for k, v in state.items() if k != "losses"}
        heads[job] = model.head
        read_all(rewards, job, model.model, {job: model.head}, sets, device)
        del model
        torch.cuda.empty_cache()
        to_bfloat16(args.runs / job / CHECKPOINT / "adapter")
        pack_back(args.runs, args.back, record, rewards)
    merged = merged_model(base, args.runs, args)
    read_all(rewards, MERGED, merged, heads, sets, device)
    from training.shipping.merge import save_merged_adapter

    to_bfloat16(save_merged_adapter(merged, args.runs / MERGED / "adapter"))
    record["merge"] = {"method": args.method, "density": args.density, "seed": 0}
    pack_back(args.runs, args.back, record, rewards)
    del merged
    for weight in args.grades_weights:  # other merges, read only: rebuilt here from the two
        if time.time() < deadline:
            other = merged_model(base, args.runs, args, weight)
            read_all(rewards, f"{MERGED}-grades{weight:g}", other, heads, sets, device)
            del other
    record["seconds"] = round(time.time() - began, 1)
    pack_back(args.runs, args.back, record, rewards)
    print(f"loan done in {record['seconds']} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.lora.reward_loan", description=__doc__
    )
    parser.add_argument("--store", type=Path, required=True, help="where the parts were received")
    parser.add_argument("--runs", type=Path, required=True, help="runs, outside the checkout")
    parser.add_argument("--back", type=Path, required=True, help="under $OUT: what comes back")
    parser.add_argument("--pairs", type=Path, required=True, help="reward_model pairs' file")
    parser.add_argument("--grades", type=Path, required=True, help="reward_model grades' file")
    parser.add_argument("--evals", type=Path, required=True, help="reward_model evals' folder")
    parser.add_argument("--seconds", type=float, required=True, help="the whole command's time")
    parser.add_argument("--reserve", type=float, default=75.0, help="seconds kept for reads")
    parser.add_argument("--resume", type=Path, help="an earlier loan's unpacked runs")
    parser.add_argument("--pairs-epochs", type=float, default=2.0)
    parser.add_argument("--grades-epochs", type=float, default=4.0)
    defaults = TrainSettings()
    for name in ("batch_pairs", "rank", "alpha", "folds", "fold"):
        flag = f"--{name.replace('_', '-')}"
        parser.add_argument(flag, type=int, default=getattr(defaults, name))
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    parser.add_argument("--method", default="dare_ties")
    parser.add_argument("--density", type=float, default=0.7)
    parser.add_argument("--grades-weights", type=float, nargs="*", default=[],
                        help="other merges' grade-adapter weights, read only")  # fmt: skip
    parser.add_argument("--orders", type=Path, help="written_negatives' orders: the base writes")
    parser.add_argument("--write-seconds", type=float, default=90.0)
    return run_loan(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
