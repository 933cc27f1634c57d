"""A loan's reward model as a registry judge's committed files (here, on the CPU).

    python -m training.shipping.reward_ship --run training/runs/reward-loan1 --adapter merged \\
        --gguf models/store/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --out models/judges/pj-qwen15-reward

writes, under `--out`:

- `adapter/`: the chosen adapter (`merged`, `pairs` or `grades`) as models/lora_build.py
  commits it (bfloat16 parts under 10 MB, peft's config, the base's config read from the
  GGUF), which `make models` converts into the GGUF LoRA adapter llama.cpp applies at load;
- `state_head.json`: the preference head times the scale training.evaluation.reward_report fitted on
  the held-out fold (the calibration map), and the grade head, both on the states of the
  base with that adapter.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from training.decision.record_file import write_record_file
from training.lora.reward_head import BY, as_state_head, reward_record
from training.lora.reward_model import ValueHead

ADAPTERS = {"merged": "merged/adapter", "pairs": "pairs/checkpoint/adapter",
            "grades": "grades/checkpoint/adapter"}  # fmt: skip


def base_config(gguf: Path) -> dict:
    """The base's config.json, read from its GGUF (transformers; architecture and sizes)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name).to_dict()
    config["architectures"] = config.get("architectures") or ["Qwen2ForCausalLM"]
    return config


def ship(run: Path, adapter: str, gguf: Path, out: Path) -> Path:
    from models.lora_build import split_adapter

    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    pairs_key = f"{adapter if adapter != 'grades' else 'pairs'}/pairs"
    scale = report[pairs_key]["scale"]
    split_adapter(run / ADAPTERS[adapter], base_config(gguf), out / "adapter")
    loan = json.loads((run / "loan.json").read_text(encoding="utf-8"))
    pairs = ValueHead.load(run / "pairs" / "value_head.json")
    grades = ValueHead.load(run / "grades" / "value_head.json")
    steps = int(loan["jobs"]["pairs"]["step"])
    head = as_state_head(
        pairs,
        gguf.name,
        grades,
        scale=scale,
        fitted_on={
            "recipe": "training.lora.reward_model: LoRA r8 on all projections, value head, "
            "Bradley-Terry (ties a half); grades by regression; DARE-TIES merge",
            "adapter": adapter,
            "pairs": steps,
            "gpu": str(loan["gpu"]),
            "scale": scale,
            "tie_band": float(report[pairs_key]["tie_band"]),
        },
    )
    path = out / "state_head.json"
    path.write_text(head.model_dump_json(), encoding="utf-8")
    rows = f"adapter '{adapter}' trained on a lent {loan['gpu']}; the scale {scale} fitted on "
    rows += "requests it never trained on (training.evaluation.reward_report)"
    record = reward_record(out.name, pairs, grades, rows)
    write_record_file(out / "decision.yaml", record, tables=False, by=BY)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.shipping.reward_ship", description=__doc__
    )
    parser.add_argument("--run", type=Path, required=True, help="an unpacked loan's runs")
    parser.add_argument("--adapter", choices=sorted(ADAPTERS), default="merged")
    parser.add_argument("--gguf", type=Path, required=True, help="the base GGUF it trained on")
    parser.add_argument("--out", type=Path, required=True, help="models/judges/NAME")
    args = parser.parse_args(argv)
    print(ship(args.run, args.adapter, args.gguf, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
