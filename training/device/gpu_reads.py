"""Likelihood reads of the fitting set in torch, for a lent GPU machine without llama.cpp.

    python -m training.device.gpu_reads tokens --gguf models/store/X.gguf --alpacaeval N --out T.npz
    python -m training.device.gpu_reads read --gguf X.gguf --tokens T.npz --out DIR     # the GPU
    python -m training.device.gpu_reads merge --reads DIR/reads-*.npz --cache CACHE

`tokens` (here, llama.cpp) writes the exact token ids the engine's likelihood read
decodes for every answer of the fitting set (`training.heads.likelihood_head`): after its
request in the chat template, and after an empty request. The GPU machine needs no
tokenizer, template or llama.cpp: `read` loads the same GGUF's weights through
transformers (dequantized, so the weights are the quantized ones the engine uses),
reads every sequence and keeps what the engine keeps: each answer token's
log-probability and, after the request, the mean and last final-layer state at the
positions that predict the answer. `merge` writes them into a reading cache
(`training.device.reading_cache`) that `likelihood_head fit --cache DIR` fits on.

Reads are longest first in batches of about `BATCH_TOKENS` tokens, right-padded (under
causal attention padding after a sequence changes nothing before it). `read` stops at
`--seconds` and writes what it has: what is left can be read by another run
(`--skip R.npz`).

The engine's reads are quantized throughout (llama.cpp multiplies Q4_K weights by
8-bit activations); these are not, so they differ a little: `compare` measures how
much on answers both have read.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BATCH_TOKENS = 32768
SHARD_READS = 3500  # reads per file: a file of them stays under 16 MB (what a call returns)
STATE_LEVELS = 127  # states travel as int8 with one scale per dimension


class ArrayTable:
    """A dataclass of numpy arrays, kept as one compressed .npz file."""

    def save(self, path: Path) -> None:
        np.savez_compressed(path, **vars(self))

    @classmethod
    def load(cls, path: Path):  # type: ignore[no-untyped-def]
        with np.load(path) as table:
            return cls(**{name: table[name] for name in table.files})


def sequence_starts(lengths: np.ndarray) -> np.ndarray:
    """Where each of the sequences `lengths` long begins in the array that holds them back to
    back."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def padded_ids(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, chosen: np.ndarray):  # type: ignore[no-untyped-def]
    """The sequences `chosen` of those `flat` holds back to back (at `starts`, `lengths`
    long), right-padded with 0 into one LongTensor: under causal attention padding after a
    sequence changes nothing before it."""
    import torch

    ids = torch.zeros((len(chosen), int(lengths[chosen].max())), dtype=torch.long)
    for row, n in enumerate(chosen):
        piece = flat[starts[n] : starts[n] + lengths[n]]
        ids[row, : len(piece)] = torch.from_numpy(piece.astype(np.int64))
    return ids


def padded_batches(flat: np.ndarray, lengths: np.ndarray, deadline: float = float("inf")):  # type: ignore[no-untyped-def]
    """(indices, right-padded token ids) of the sequences `flat` holds back to back, longest
    first in batches of about BATCH_TOKENS tokens, until `deadline` (time.time())."""

    starts = sequence_starts(lengths)
    order = np.argsort(-lengths, kind="stable")
    begin = 0
    while begin < len(order) and time.time() < deadline:
        longest = int(lengths[order[begin]])
        batch = order[begin : begin + max(1, BATCH_TOKENS // longest)]
        begin += len(batch)
        yield batch, padded_ids(flat, starts, lengths, batch)
        print(f"{begin}/{len(order)} read", flush=True)


@dataclass
class TokenTable(ArrayTable):
    """Every read as token ids: `keys[i]` (the reading cache's key) reads the i-th
    `lengths[i]` tokens of `flat`, whose last `answer_lengths[i]` are the answer."""

    keys: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    answer_lengths: np.ndarray


def tokenize_reads(  # type: ignore[no-untyped-def]
    backend, texts: list[tuple[str, str]], unconditioned: bool = True
) -> TokenTable:
    """The tokens the engine's likelihood read decodes for each (request, answer): after the
    request and (`unconditioned`) after an empty one (an answer met with several requests is
    read without one once), the answer cut as the engine cuts it; each read once, in the
    order first met."""
    from models.backends.state_reader import READ_CONTEXT
    from training.device.reading_cache import cond_key, uncond_key

    keys: list[str] = []
    sequences: list[list[int]] = []
    answer_lengths: list[int] = []
    seen: set[str] = set()
    for question, answer in texts:
        reads = [(cond_key(question, answer), question)]
        if unconditioned:
            reads.append((uncond_key(answer), ""))
        for key, request in reads:
            if key in seen:
                continue
            seen.add(key)
            prompt, tokens = backend.reply_tokens(request, answer)
            tokens = tokens[: READ_CONTEXT - len(prompt)]
            keys.append(key)
            sequences.append(prompt + tokens)
            answer_lengths.append(len(tokens))
    return TokenTable(
        keys=np.array(keys),
        flat=np.concatenate([np.array(s, dtype=np.int32) for s in sequences]),
        lengths=np.array([len(s) for s in sequences]),
        answer_lengths=np.array(answer_lengths),
    )


def token_table(gguf: Path, alpacaeval: int, per_request: int, out: Path) -> int:
    """Write the reads of the fitting set's work order as token ids (see the module)."""
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from training.datasets.likelihood_data import work_order

    backend = LlamaCppBackend(str(gguf), BackendOptions(n_ctx=512, n_threads=1))
    table = tokenize_reads(backend, work_order(alpacaeval, per_request) + heldout_texts())
    backend.close()
    table.save(out)
    tokens, answers = table.lengths.sum(), table.answer_lengths.sum()
    print(f"{len(table.keys)} reads, {tokens} tokens ({answers} of answers)")
    return 0


def heldout_texts() -> list[tuple[str, str]]:
    """The held-out single rows, cut as the fitting set's: read too, so a grade head can be
    tried on them before the engine reads them (the figures reported are the engine's)."""
    from training.datasets.likelihood_data import cut
    from training.datasets.state_head_data import single_rows

    return [cut(row.question, row.answers[0]) for row in single_rows()[1]]


def load_model(gguf: Path, device: str):  # type: ignore[no-untyped-def]
    """The GGUF's model in float32 on `device` (transformers dequantizes it)."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    return model.to(device).eval()


def read_sequences(
    model, table: TokenTable, order: np.ndarray, deadline: float = float("inf")
) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:  # type: ignore[no-untyped-def]
    """Read `table`'s reads in `order` (longest first reads fastest) until `deadline`
    (time.time()): their keys, answer-token log-probabilities, and for each read after a
    request, the mean and last final-layer state at the positions that predict the answer."""
    import torch

    device = next(model.parameters()).device
    starts = sequence_starts(table.lengths)
    found_keys: list[str] = []
    logprobs: list[np.ndarray] = []
    states: list[np.ndarray] = []
    done = 0
    for batch in token_batches(order, table.lengths, BATCH_TOKENS):
        if time.time() >= deadline:
            break
        done += len(batch)
        ids = padded_ids(table.flat, starts, table.lengths, batch)
        with torch.inference_mode():
            hidden = model.model(input_ids=ids.to(device)).last_hidden_state
            for row, i in enumerate(batch):
                n, answer = int(table.lengths[i]), int(table.answer_lengths[i])
                at = hidden[row, n - answer - 1 : n - 1]  # the positions that predict the answer
                logits = model.lm_head(at).float()
                targets = ids[row, n - answer : n].to(device)
                picked = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])[:, 0]
                found_keys.append(str(table.keys[i]))
                logprobs.append(picked.cpu().numpy().astype(np.float32))
                if str(table.keys[i]).startswith("c"):
                    states.append(torch.cat([at.mean(0), at[-1]]).float().cpu().numpy())
        print(f"{done}/{len(order)} reads", flush=True)
    return found_keys, logprobs, states


def token_batches(order: np.ndarray, lengths: np.ndarray, budget: int) -> Iterator[np.ndarray]:
    """`order` (longest first) cut into batches of as many reads as fit `budget` padded
    tokens at the first's length (one at least)."""
    begin = 0
    while begin < len(order):
        batch = order[begin : begin + max(1, budget // int(lengths[order[begin]]))]
        begin += len(batch)
        yield batch


def torch_device() -> str:
    """ "cuda" (TF32 matmuls) where there is a GPU, else one CPU thread."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if torch.cuda.is_available():
        return "cuda"
    torch.set_num_threads(1)
    return "cpu"


def read_all(args: argparse.Namespace) -> int:
    started = time.time()
    device = torch_device()
    table = TokenTable.load(args.tokens)
    wanted = np.arange(len(table.keys) if args.limit is None else min(args.limit, len(table.keys)))
    if args.keys:
        chosen = set(Path(args.keys).read_text().split())
        wanted = np.array([i for i in wanted if table.keys[i] in chosen], dtype=int)
    done: set[str] = set()
    for path in args.skip or []:
        with np.load(path) as earlier:
            done |= set(earlier["keys"].tolist())
    wanted = np.array([i for i in wanted if table.keys[i] not in done], dtype=int)
    order = wanted[np.argsort(-table.lengths[wanted], kind="stable")]
    model = load_model(args.gguf, device)
    print(f"loaded in {time.time() - started:.0f} s on {device}; {len(order)} reads", flush=True)
    keys, logprobs, states = read_sequences(model, table, order, started + args.seconds)
    write_shards(args.out, keys, logprobs, states)
    print(f"{len(keys)} reads written to {args.out} in {time.time() - started:.0f} s")
    return 0


def write_shards(
    out: Path, keys: list[str], logprobs: list[np.ndarray], states: list[np.ndarray]
) -> list[Path]:
    """`reads-NN.npz` files of SHARD_READS reads each under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    cond = np.cumsum([k.startswith("c") for k in keys])  # states held up to each read
    paths = []
    for shard, first in enumerate(range(0, len(keys), SHARD_READS)):
        last = min(first + SHARD_READS, len(keys))
        held = int(cond[first - 1]) if first else 0
        paths.append(out / f"reads-{shard:02d}.npz")
        save_reads(
            paths[-1], keys[first:last], logprobs[first:last], states[held : int(cond[last - 1])]
        )
    return paths


def save_reads(
    out: Path, keys: list[str], logprobs: list[np.ndarray], states: list[np.ndarray]
) -> None:
    """Log-probabilities as float16 (errors far below the engine's own batch noise) and the
    states as int8 with one scale per dimension: small enough to come back in one call."""
    stacked = np.stack(states) if states else np.zeros((0, 0), dtype=np.float32)
    scale = np.abs(stacked).max(axis=0) / STATE_LEVELS if len(stacked) else np.zeros(0)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    np.savez(
        out,
        keys=np.array(keys),
        lengths=np.array([len(lp) for lp in logprobs]),
        logprobs=np.concatenate(logprobs).astype(np.float16) if logprobs else np.zeros(0),
        states=np.round(stacked / scale).astype(np.int8),
        scale=scale,
    )


def load_reads(path: Path) -> dict[str, np.ndarray]:
    """Cache entries (`<cond key>.lp`, `<cond key>.st`, `<uncond key>`) from a `read` file."""
    with np.load(path) as reads:
        keys, lengths = reads["keys"].tolist(), reads["lengths"]
        flat = reads["logprobs"].astype(np.float64)
        states = reads["states"].astype(np.float32) * reads["scale"]
    entries: dict[str, np.ndarray] = {}
    offset, state = 0, 0
    for key, n in zip(keys, lengths):
        logprobs = flat[offset : offset + n]
        offset += n
        if key.startswith("c"):
            entries[key + ".lp"] = logprobs
            entries[key + ".st"] = states[state]
            state += 1
        else:
            entries[key] = logprobs
    return entries


def merge(args: argparse.Namespace) -> int:
    args.cache.mkdir(parents=True, exist_ok=True)
    first = len(list(args.cache.glob("gpu-*.npz")))  # after an earlier merge's files
    for number, path in enumerate(args.reads, start=first):
        entries = load_reads(path)
        np.savez(args.cache / f"gpu-{number:05d}.npz", **entries)
        print(f"{path}: {len(entries)} entries into {args.cache}")
    return 0


def compare(args: argparse.Namespace) -> int:
    """How far these reads are from the engine's on the answers both read."""
    from training.device.reading_cache import ReadingCache

    engine = ReadingCache(args.cache).arrays
    ours: dict[str, np.ndarray] = {}
    for path in args.reads:
        ours |= load_reads(path)
    lp_gaps, mean_gaps, cosines = [], [], []
    for key, value in ours.items():
        if key not in engine:
            continue
        if key.endswith(".st"):
            other = engine[key]
            cosines.append(float(value @ other / np.linalg.norm(value) / np.linalg.norm(other)))
        else:
            n = min(len(value), len(engine[key]))
            lp_gaps.append(np.abs(value[:n] - engine[key][:n]).mean())
            mean_gaps.append(abs(value[:n].mean() - engine[key][:n].mean()))
    print(
        f"{len(lp_gaps)} log-probability reads in both: token gap {np.mean(lp_gaps):.4f} on "
        f"average; per-token mean gap {np.mean(mean_gaps):.4f} (max {np.max(mean_gaps):.4f})"
    )
    if cosines:
        low, mean = min(cosines), np.mean(cosines)
        print(f"{len(cosines)} states in both: cosine min {low:.5f}, mean {mean:.5f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.device.gpu_reads", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    tokens = commands.add_parser("tokens")
    tokens.add_argument("--gguf", type=Path, required=True)
    tokens.add_argument("--alpacaeval", type=int, default=800)
    tokens.add_argument("--per-request", type=int, default=4)
    tokens.add_argument("--out", type=Path, required=True)
    read = commands.add_parser("read")
    read.add_argument("--gguf", type=Path, required=True)
    read.add_argument("--tokens", type=Path, required=True)
    read.add_argument("--out", type=Path, required=True, help="a folder for the reads files")
    read.add_argument("--seconds", type=float, default=float("inf"))
    read.add_argument("--limit", type=int, help="the first N reads only")
    read.add_argument("--keys", help="a file of the keys to read (whitespace-separated)")
    read.add_argument("--skip", type=Path, nargs="*", help="reads files whose keys are done")

    for name in ("merge", "compare"):
        command = commands.add_parser(name)
        command.add_argument("--reads", type=Path, nargs="+", required=True)
        command.add_argument("--cache", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "tokens":
        return token_table(args.gguf, args.alpacaeval, args.per_request, args.out)
    return {"read": read_all, "merge": merge, "compare": compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
