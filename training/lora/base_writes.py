"""The base writes the answers of the writing orders (training.datasets.written_negatives) on a
GPU: each prompt's reply, sampled, cut at a stop token or the orders' token limit. Prompts go
in batches of similar length, left-padded; what a deadline leaves unwritten stays None, and
an order missing either of its answers adds no pair."""

from __future__ import annotations

import time

import numpy as np

from training.datasets.written_negatives import WritingOrders
from training.device.gpu_reads import sequence_starts

TEMPERATURE = 0.7
TOP_P = 0.9


def reply_of(tokens: np.ndarray, stops: set[int]) -> np.ndarray:
    """A generated row up to (without) its first stop token."""
    for at, token in enumerate(tokens):
        if int(token) in stops:
            return tokens[:at]
    return tokens


def write_replies(  # type: ignore[no-untyped-def]
    model, orders: WritingOrders, deadline: float, batch: int = 192, seed: int = 0
) -> list[np.ndarray | None]:
    """Every prompt's reply (token ids, no stop token) in `orders`' prompt order, or None
    for the prompts `deadline` (time.time()) left unwritten. bfloat16 autocast on a GPU."""
    import torch

    device = next(model.parameters()).device
    starts = sequence_starts(orders.lengths)
    stops = {int(s) for s in orders.stops}
    replies: list[np.ndarray | None] = [None] * len(orders.lengths)
    order = np.argsort(-orders.lengths, kind="stable")
    torch.manual_seed(seed)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    for begin in range(0, len(order), batch):
        if time.time() >= deadline:
            break
        chosen = order[begin : begin + batch]
        width = int(orders.lengths[chosen].max())
        ids = torch.full((len(chosen), width), int(orders.stops[0]), dtype=torch.long)
        mask = torch.zeros((len(chosen), width), dtype=torch.long)
        for row, k in enumerate(chosen):
            prompt = orders.flat[starts[k] : starts[k] + orders.lengths[k]]
            ids[row, width - len(prompt) :] = torch.from_numpy(prompt.astype(np.int64))
            mask[row, width - len(prompt) :] = 1
        with torch.inference_mode(), autocast:
            written = model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                max_new_tokens=int(orders.max_new_tokens[0]),
                do_sample=True,
                temperature=TEMPERATURE,
                top_p=TOP_P,
                eos_token_id=sorted(stops),
                pad_token_id=int(orders.stops[0]),
            )
        for row, k in enumerate(chosen):
            replies[k] = reply_of(written[row, width:].cpu().numpy().astype(np.int32), stops)
        done = sum(r is not None for r in replies)
        print(f"written {done}/{len(replies)} replies", flush=True)
    return replies
