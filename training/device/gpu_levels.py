"""Criterion reads of labelled rows, and request states, in torch on a lent GPU.

    python -m training.device.gpu_levels tokens --gguf G --out T.npz [--autoj-dev] [--vicuna]
                                         [--scenarios]                     # here
    python -m training.device.gpu_levels read --gguf G --tokens T.npz --out DIR     # the GPU
    python -m training.device.gpu_levels merge --gguf G --tokens T.npz --reads DIR \\
        --score-cache S --state-cache C                                      # here

A criterion read (app/deciding/criterion_reads.py) is one score-mode reply holding one value.
`tokens` builds, through the real service and llama.cpp's tokenizer, each read's prompt
tokens with the text the reply's schema forces before the value (what the engine
evaluates before it reads the value), and where two levels share a first token ("1"
starts 1 and 10) the same with that token after it: the engine looks one token ahead
there. The GPU needs no tokenizer, template, schema or llama.cpp: `read` returns the
logits of the few tokens a level can be written with (digits, structure, spaces) at
those positions, and the entropy of the whole next-token distribution. `merge` walks
each reply here with the engine's own `ReplyWalker` over those logits, so the reply is
the engine's (value, probabilities) and goes into a score cache that
`training.evaluation.evaluate --score-cache` serves; request states go into a state cache
(`training.scenario_states`).

The engine's reads are quantized throughout; these are not (TF32 over dequantized
weights), so probabilities differ a little: `compare` measures it on replies both read.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from models.run_settings import RUN_DEFAULTS
from training.device.gpu_reads import ArrayTable, padded_batches
from training.device.state_cache import text_key

LEVEL_CHARS = set('0123456789,]}"')


@dataclass
class LevelTable(ArrayTable):
    """Every criterion read as token ids. Read i (`keys[i]`, a score-cache key) is one or
    more sequences s (`seq_read[s] == i`): sequence s is `lengths[s]` tokens of `flat`
    whose first `value_at[s]` lead to the value, then `seq_ahead[s]` (-1: nothing) where
    two levels share a first token and the engine looks one token ahead. `ids` are the
    tokens whose logits come back. Request texts are read for their states (`text_flat`,
    `text_lengths`, keyed by `text_keys`)."""

    keys: np.ndarray
    flat: np.ndarray
    lengths: np.ndarray
    value_at: np.ndarray
    seq_read: np.ndarray
    seq_ahead: np.ndarray
    ids: np.ndarray
    text_keys: np.ndarray
    text_flat: np.ndarray
    text_lengths: np.ndarray


def level_ids(pieces: list[str]) -> np.ndarray:
    """Tokens a level, or what may end it, is written with: their logits are all a criterion
    read looks at."""
    return np.array(
        [i for i, p in enumerate(pieces) if not p.strip() or set(p.strip()) <= LEVEL_CHARS]
    )


# -- here: the reads as token ids -----------------------------------------------------
def criterion_requests(which: list[str]):  # type: ignore[no-untyped-def]
    """(item, config) of every labelled row whose criterion reads are wanted."""
    from app.catalog.criteria_resolution import CriteriaChoice
    from models.registry import load_registry
    from training.evaluation.evaluate import file_config

    entry = load_registry().get()
    jobs = []
    pairwise = {
        "autoj-dev": "autoj/pairwise_dev.jsonl",
        "llmbar-natural": "llmbar/natural.json",
        "llmbar-neighbor": "llmbar/adversarial_neighbor.json",
    }
    for name, path in pairwise.items():
        if name in which:
            from training.datasets.labelled_files import load_labelled

            rows = load_labelled(_shared(path), name).rows
            config = file_config("pairwise", entry, 4096)
            jobs += [(row.item, config) for row in rows]
    if "vicuna" in which:
        from app.io.reader import read_rows

        config = file_config("single", entry, 4096)
        for row in read_rows(_shared("prometheus/vicuna_eval.json")):
            assert row.item is not None, row.error
            item = row.item
            graded = replace(config, choice=CriteriaChoice(rubric=item.rubric))
            jobs.append((item, graded))
            jobs.append((item, replace(graded, use_reference=False)))
    return jobs


def _shared(name: str) -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "data" / name


def build_table(backend, service, jobs, texts: list[str]) -> LevelTable:  # type: ignore[no-untyped-def]
    """Every criterion read of `jobs` ((item, config) pairs) and every text, as token ids."""
    from models.backends.state_reader import READ_CONTEXT
    from training.device.score_cache import score_key

    table = backend._tokens
    keys: list[str] = []
    sequences: list[list[int]] = []
    value_at, seq_read, seq_ahead = [], [], []
    for item, config in jobs:
        for request in service.score_requests(item, config):
            prompt = backend.prompt_tokens(request.messages)
            key = score_key(prompt, request.output)
            if key in keys:
                continue
            walk = backend._walker(request).walk()
            lead = prompt + list(next(walk).tokens)  # the text forced before the value
            rule = request.output.value_rules.rule_for(("overall",), {})
            ids, matches = table.commitments("", rule.candidates)
            shared = [int(t) for t, m in zip(ids.tolist(), matches) if len(m) > 1]
            for token in shared or [-1]:
                sequences.append(lead + ([token] if token >= 0 else []))
                value_at.append(len(lead))
                seq_read.append(len(keys))
                seq_ahead.append(token)
            keys.append(key)
    text_tokens = [backend.llama.tokenize(t.encode("utf-8"))[:READ_CONTEXT] for t in texts]
    return LevelTable(
        keys=np.array(keys),
        flat=np.concatenate([np.array(s, dtype=np.int32) for s in sequences]),
        lengths=np.array([len(s) for s in sequences]),
        value_at=np.array(value_at),
        seq_read=np.array(seq_read),
        seq_ahead=np.array(seq_ahead),
        ids=level_ids(table.pieces),
        text_keys=np.array([text_key(t) for t in texts]),
        text_flat=np.concatenate([np.array(t, dtype=np.int32) for t in text_tokens])
        if text_tokens
        else np.zeros(0, dtype=np.int32),
        text_lengths=np.array([len(t) for t in text_tokens], dtype=np.int64),
    )


def build_tokens(
    gguf: Path, which: list[str], scenarios: bool, out: Path, state_cache: Path | None = None
) -> int:
    from app.api import load_judge

    judge = load_judge(str(gguf), threads=1, n_ctx=RUN_DEFAULTS.n_ctx)
    backend, service = judge.backend, judge
    if state_cache is not None:  # scenario detection reads these states (and keeps new ones)
        from training.device.state_cache import CachedStates

        backend.state_features = CachedStates(backend.state_features, state_cache, "tokens")
    texts = _scenario_texts() if scenarios else []
    table = build_table(backend, service, criterion_requests(which), texts)
    table.save(out)
    if "vicuna" in which:
        likelihood_tokens(backend, out.with_name(out.stem + "-likelihood.npz"))
    if state_cache is not None:
        backend.state_features.close()
    backend.close()
    tokens = table.lengths.sum()
    print(f"{len(table.keys)} criterion reads ({tokens} tokens), {len(texts)} texts")
    return 0


def likelihood_tokens(backend, out: Path) -> None:  # type: ignore[no-untyped-def]
    """The default head's likelihood reads of vicuna_eval's answers (training.device.gpu_reads)."""
    from app.deciding.state_head import load_state_head
    from app.io.reader import read_rows
    from models.registry import MODELS_DIR, load_registry
    from training.device.gpu_reads import tokenize_reads

    head = load_state_head(MODELS_DIR / load_registry().get().state_head)
    texts = [
        (row.item.question[: head.question_chars], row.item.answers[0][: head.answer_chars])
        for row in read_rows(_shared("prometheus/vicuna_eval.json"))
        if row.item is not None
    ]
    tokenize_reads(backend, texts).save(out)
    print(f"{len(texts)} likelihood reads' tokens to {out}")


def _scenario_texts() -> list[str]:
    """The scenario classifier's requests (train and test), as detection reads them."""
    from app.catalog.scenario_detection import request_text
    from training.heads.scenario_classifier import TEST_FILE, TRAIN_FILE, read_split

    texts = [request_text(t) for path in (TRAIN_FILE, TEST_FILE) for t in read_split(path)[0]]
    return list(dict.fromkeys(texts))


# -- the GPU ------------------------------------------------------------------------
def read_levels(model, table: LevelTable, deadline: float):  # type: ignore[no-untyped-def]
    """Per sequence: logits of `table.ids` where the value starts and one token further
    (its look-ahead token, if any), and the entropy of the whole next-token distribution
    where the value starts."""
    import torch

    device = next(model.parameters()).device
    ids = torch.from_numpy(table.ids.astype(np.int64)).to(device)
    n = len(table.lengths)
    at_value = np.zeros((n, len(table.ids)), dtype=np.float16)
    after = np.zeros((n, len(table.ids)), dtype=np.float16)
    entropy = np.full(n, np.nan, dtype=np.float32)
    done = np.zeros(n, dtype=bool)
    for batch, tokens in padded_batches(table.flat, table.lengths, deadline):
        with torch.inference_mode():
            hidden = model.model(input_ids=tokens.to(device)).last_hidden_state
            for row, i in enumerate(batch):
                at = int(table.value_at[i]) - 1
                logits = model.lm_head(hidden[row, at : at + 2]).float()
                logp = torch.log_softmax(logits[0], dim=-1)
                entropy[i] = float(-(logp.exp() * logp).sum())
                picked = logits[:, ids]
                picked = picked - picked.max(dim=1, keepdim=True).values
                at_value[i] = picked[0].cpu().numpy()
                if table.seq_ahead[i] >= 0:
                    after[i] = picked[1].cpu().numpy()
                done[i] = True
    return at_value, after, entropy, done


def read_texts(model, table: LevelTable, deadline: float) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    """Mean and last final-layer state of each request text (the engine's `state_features`)."""
    import torch

    device = next(model.parameters()).device
    states: list[np.ndarray | None] = [None] * len(table.text_keys)
    for batch, tokens in padded_batches(table.text_flat, table.text_lengths, deadline):
        with torch.inference_mode():
            hidden = model.model(input_ids=tokens.to(device)).last_hidden_state
            for row, i in enumerate(batch):
                seq = hidden[row, : int(table.text_lengths[i])].float()
                states[i] = torch.cat([seq.mean(0), seq[-1]]).cpu().numpy()
    found = np.array([s is not None for s in states])
    width = next((len(s) for s in states if s is not None), 0)
    stacked = np.stack([s if s is not None else np.zeros(width) for s in states])
    return stacked.astype(np.float32), found


def write_reads(model, table: LevelTable, out: Path, deadline: float) -> None:  # type: ignore[no-untyped-def]
    """Read `table` and write what comes back from the machine: at most 16 MiB a file."""
    out.mkdir(parents=True, exist_ok=True)
    at_value, after, entropy, done = read_levels(model, table, deadline)
    np.savez(out / "levels-value.npz", at_value=at_value, entropy=entropy, done=done)
    np.savez(out / "levels-after.npz", after=after[table.seq_ahead >= 0])
    if len(table.text_keys):
        states, found = read_texts(model, table, deadline)
        scale = np.abs(states).max(axis=0).astype(np.float32) / 127
        scale = np.where(scale > 0, scale, 1.0)
        quantized = np.round(states / scale).astype(np.int8)
        np.savez(out / "texts.npz", states=quantized, scale=scale, found=found)


def gpu_read(args: argparse.Namespace) -> int:
    from training.device.gpu_reads import (
        TokenTable,
        load_model,
        read_sequences,
        torch_device,
        write_shards,
    )

    started = time.time()
    device = torch_device()
    model = load_model(args.gguf, device)
    print(f"loaded in {time.time() - started:.0f} s on {device}", flush=True)
    write_reads(model, LevelTable.load(args.tokens), args.out, started + args.seconds)
    if args.likelihood is not None:
        reads = TokenTable.load(args.likelihood)
        order = np.argsort(-reads.lengths, kind="stable")
        keys, logprobs, states = read_sequences(model, reads, order, started + args.seconds)
        write_shards(args.out / "likelihood", keys, logprobs, states)
    print(f"done in {time.time() - started:.0f} s", flush=True)
    return 0


# -- here: the replies --------------------------------------------------------------
def replay(backend, request, logits: np.ndarray, after: dict[int, np.ndarray], entropy: float):  # type: ignore[no-untyped-def]
    """The engine's reply to `request` walked over logits read elsewhere: `logits` where the
    value starts, `after[t]` once token t is written there (the look-ahead)."""
    from models.backends.base import Generation
    from models.backends.value_reader import Feed

    walk = backend._walker(request).walk()
    request_made = next(walk)
    first = True
    try:
        while True:
            if isinstance(request_made, Feed) and first:
                first = False
                request_made = walk.send(logits.copy())
            elif isinstance(request_made, Feed):
                # a look-ahead token, or the same token written as the chosen value ("10")
                (token,) = request_made.tokens
                if token not in after:
                    raise ValueError(f"a read asked for more than was read: {request_made}")
                request_made = walk.send(after[token].copy())
            else:
                request_made = walk.send(None)
    except StopIteration as stop:
        reply = stop.value
    distributions = tuple(replace(d, entropy=float(entropy)) for d in reply.distributions)
    return Generation(text=reply.text, distributions=distributions, finish_reason="stop")


def merge_replies(backend, service, jobs, table: LevelTable, reads: Path, cache) -> int:  # type: ignore[no-untyped-def]
    """Walk every read reply of `jobs` over the logits in `reads`, into `cache`."""
    from training.device.score_cache import generation_entry, score_key

    with np.load(reads / "levels-value.npz") as read:
        at_value, entropy, done = read["at_value"], read["entropy"], read["done"]
    after = np.zeros_like(at_value)
    with np.load(reads / "levels-after.npz") as read:
        after[table.seq_ahead >= 0] = read["after"]
    vocab = len(backend._tokens.pieces)
    sequences: dict[str, list[int]] = {}
    for s, i in enumerate(table.seq_read.tolist()):
        sequences.setdefault(str(table.keys[i]), []).append(s)

    def full(values: np.ndarray) -> np.ndarray:
        logits = np.full(vocab, -np.inf, dtype=np.float32)
        logits[table.ids] = values
        return logits

    merged = 0
    for item, config in jobs:
        for request in service.score_requests(item, config):
            key = score_key(backend.prompt_tokens(request.messages), request.output)
            mine = sequences.get(key)
            if mine is None or not done[mine].all() or key in cache.entries:
                continue
            ahead = {
                int(table.seq_ahead[s]): full(after[s]) for s in mine if table.seq_ahead[s] >= 0
            }
            generation = replay(
                backend, request, full(at_value[mine[0]]), ahead, float(entropy[mine[0]])
            )
            cache.put(key, generation_entry(generation))
            merged += 1
    cache.flush()
    return merged


def text_states(table: LevelTable, reads: Path) -> dict[str, np.ndarray]:
    """Each read request text's states, by `text_key`."""
    with np.load(reads / "texts.npz") as read:
        states = read["states"].astype(np.float32) * read["scale"]
        found = read["found"]
    return {str(k): states[i] for i, k in enumerate(table.text_keys) if found[i]}


def merge(args: argparse.Namespace) -> int:
    from app.api import load_judge
    from training.device.score_cache import ScoreCache

    table = LevelTable.load(args.tokens)
    judge = load_judge(str(args.gguf), threads=1, n_ctx=RUN_DEFAULTS.n_ctx)
    backend, service = judge.backend, judge
    if args.state_cache is not None and args.state_cache.is_dir():
        from training.device.state_cache import CachedStates

        backend.state_features = CachedStates(backend.state_features, args.state_cache, "merge")
    cache = ScoreCache(args.score_cache, label="gpu")
    merged = merge_replies(
        backend, service, criterion_requests(args.which), table, args.reads, cache
    )
    backend.close()
    print(f"{merged} replies into {args.score_cache}")
    if (args.reads / "texts.npz").is_file() and args.state_cache is not None:
        kept = text_states(table, args.reads)
        args.state_cache.mkdir(parents=True, exist_ok=True)
        np.savez(args.state_cache / "gpu.npz", **kept)
        print(f"{len(kept)} request states into {args.state_cache}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.device.gpu_levels", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    tokens = commands.add_parser("tokens")
    tokens.add_argument("--gguf", type=Path, required=True)
    tokens.add_argument("--out", type=Path, required=True)
    tokens.add_argument("--which", nargs="*", default=["autoj-dev", "vicuna"])
    tokens.add_argument("--scenarios", action="store_true")
    tokens.add_argument("--state-cache", type=Path, help="request states for scenario detection")
    read = commands.add_parser("read")
    read.add_argument("--gguf", type=Path, required=True)
    read.add_argument("--tokens", type=Path, required=True)
    read.add_argument("--likelihood", type=Path, help="a training.device.gpu_reads token table too")
    read.add_argument("--out", type=Path, required=True)
    read.add_argument("--seconds", type=float, default=float("inf"))
    merged = commands.add_parser("merge")
    merged.add_argument("--gguf", type=Path, required=True)
    merged.add_argument("--tokens", type=Path, required=True)
    merged.add_argument("--reads", type=Path, required=True)
    merged.add_argument("--which", nargs="*", default=["autoj-dev", "vicuna"])
    merged.add_argument("--score-cache", type=Path, required=True)
    merged.add_argument("--state-cache", type=Path)
    args = parser.parse_args(argv)
    if args.command == "tokens":
        return build_tokens(args.gguf, args.which, args.scenarios, args.out, args.state_cache)
    return {"read": gpu_read, "merge": merge}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
