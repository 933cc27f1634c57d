"""A quick agreement check of a pairwise adapter in torch, on a machine without llama.cpp.

The engine's evaluation (`training.evaluation.evaluate`, llama.cpp, score mode) gives the
figures we report. It takes hours for a 0.5B judge on this CPU; this check takes
seconds on a GPU, so a training run can tell at once whether the adapter learned
anything beyond "the longer answer wins", and compare itself with its base.

    prepare  (where llama.cpp is)  the labelled pairs of the eval files, in both
             orders, as the training examples are built, tokenized into check/
    score    (anywhere torch is)   the distribution over the verdict's first token
             ("A / "B / "tie) after each prompt, for the base and the adapter

It reads only the first token of each verdict and scores whole rows under the
training layout (answers cut to `data.max_input_chars`), so its figures are a
proxy: the engine's report is the measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.lora.config import TrainingConfig, load_config, resolve_config_path, resolve_path

VERDICTS = ("A", "B", "tie")
SWAPPED = {"A": "B", "B": "A", "tie": "tie"}


def prepare(config: TrainingConfig, out: Path) -> dict:
    """Tokenize every labelled pair of the eval files, both orders, into `out`/<file>.json."""
    from app.catalog.scenarios import load_catalog
    from app.io.reader import read_rows
    from models.base_models import base_gguf
    from training.datasets.examples import BuildReport, pairwise_examples
    from training.lora.train import IGNORE, ExampleTokenizer

    settings = config.data.model_copy(update={"swap": True, "reference_drop": 0.0})
    catalog = load_catalog()
    tokenizer = ExampleTokenizer(base_gguf(config.base))
    first_tokens = {
        verdict: tokenizer.backend.llama.tokenize(
            json.dumps(verdict).encode(), add_bos=False, special=False
        )[0]
        for verdict in VERDICTS
    }
    counts = {}
    try:
        for name in config.eval.files:
            items = [
                row.item
                for row in read_rows(resolve_path(name))
                if row.item is not None and row.item.label is not None and row.item.label.winner
            ]
            items = [item for item in items if len(item.answers) == 2]
            rows = []
            examples = list(pairwise_examples(items, settings, catalog, BuildReport()))
            for item, first, second in zip(items, examples[::2], examples[1::2], strict=True):
                prompts = []
                for example in (first, second):
                    tokens = tokenizer(example)
                    start = next(i for i, t in enumerate(tokens.labels) if t != IGNORE)
                    prompts.append(tokens.input_ids[:start])
                lengths = [len(answer) for answer in item.answers]
                rows.append(
                    {
                        "id": item.id,
                        "label": item.label.winner,
                        "longer": "A" if lengths[0] > lengths[1] else "B",
                        "prompts": prompts,
                    }
                )
            path = out / f"{Path(name).stem}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"first_tokens": first_tokens, "rows": rows}), "utf-8")
            counts[path.name] = len(rows)
    finally:
        tokenizer.close()
    return counts


def verdict_probabilities(model, prompts: list[list[int]], candidates: list[int], device):
    """P(first verdict token) over the candidates, renormalised, one row per prompt."""
    import torch

    rows = []
    with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16):
        for prompt in prompts:
            ids = torch.tensor([prompt], device=device)
            logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
            rows.append(torch.softmax(logits[candidates], dim=-1).cpu())
    return torch.stack(rows)


def agreement(rows: list[dict], probs) -> dict:
    """Calibrated verdict (both orders averaged) against the labels, beside length."""
    first, second = probs[0::2], probs[1::2]
    # second order shows the answers swapped: its "A" is the first order's "B"
    combined = (first + second[:, [1, 0, 2]]) / 2
    picked = [VERDICTS[int(i)] for i in combined.argmax(dim=1)]
    decisive = [int(i) for i in combined[:, :2].argmax(dim=1)]
    total = len(rows)

    def share(hits: int, count: int) -> float:
        return round(100 * hits / max(1, count), 1)

    winners = [i for i, row in enumerate(rows) if row["label"] != "tie"]
    consistent = sum(
        int(a.argmax()) == {0: 1, 1: 0, 2: 2}[int(b.argmax())] for a, b in zip(first, second)
    )
    return {
        "rows": total,
        "agree": round(100 * sum(p == r["label"] for p, r in zip(picked, rows)) / total, 1),
        "length_agree": round(100 * sum(r["longer"] == r["label"] for r in rows) / total, 1),
        "winner_rows": len(winners),
        "winner_agree": round(
            100
            * sum("AB"[decisive[i]] == rows[i]["label"] for i in winners)
            / max(1, len(winners)),
            1,
        ),
        "winner_length": round(
            100
            * sum(rows[i]["longer"] == rows[i]["label"] for i in winners)
            / max(1, len(winners)),
            1,
        ),
        "swap_consistent": round(100 * consistent / total, 1),
        "mean_p_A_first_order": round(float(first[:, 0].mean()), 3),
    }


def score(base_dir: Path, adapter: Path | None, check_dir: Path, device: str) -> dict:
    """The check's figures for every prepared file, for the base and (if given) the adapter."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.bfloat16).to(device)
    model.eval()
    report: dict = {}
    files = [
        (path.stem, json.loads(path.read_text("utf-8")))
        for path in sorted(check_dir.glob("*.json"))
    ]

    def run(name: str, judge) -> None:
        for stem, data in files:
            candidates = [data["first_tokens"][v] for v in VERDICTS]
            prompts = [p for row in data["rows"] for p in row["prompts"]]
            probs = verdict_probabilities(judge, prompts, candidates, device)
            report.setdefault(stem, {})[name] = agreement(data["rows"], probs)

    run("base", model)
    if adapter is not None:
        from peft import PeftModel

        run("adapter", PeftModel.from_pretrained(model, str(adapter)).eval())
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.lora.verdict_check", description=__doc__
    )
    parser.add_argument("action", choices=["prepare", "score"])
    parser.add_argument("config", help="training config name or path")
    parser.add_argument("--adapter", type=Path, help="score: a pairwise adapter folder")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args(argv)
    config = load_config(resolve_config_path(args.config))
    check_dir = config.run_dir() / "check"
    if args.action == "prepare":
        print(json.dumps(prepare(config, check_dir), indent=2))
        return 0
    from models.base_models import hf_base_dir
    from training.lora.train import training_device

    device = training_device(args.device)
    result = score(hf_base_dir(config.base), args.adapter, check_dir, device)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
