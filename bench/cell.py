"""One cell of the benchmark, in its own process (so its peak memory is its own).

    python -m bench.cell MODE THREADS PAIRS OUT.json [MODEL] [ROWS]

Modes, on the first PAIRS pairs of Auto-J's pairwise_dev.jsonl, both orders, the
default judge's settings, every item fitted to the same 4096-token context:

- a: transformers, float32, plain `generate` of the whole reply (what a user
  would write), the judge's own weights (base + its adapter, merged);
- b: llama.cpp, full generation (the whole reply, critique included);
- c: llama.cpp, score mode, every prompt evaluated in full;
- d: llama.cpp, score mode, instructions and shared requests kept in the cache;
- e: as d with the decision-first compact template and no criterion scores: only
  the verdict token is read;
- f: the judge's state head, where its registry entry has one (app/deciding/state_head.py): the
  verdict read from the model's hidden states of each answer, no reply at all. Modes
  a-e run the same model without its head (and without a relevance join).
- g: the whole result page of mode f: the verdict, the criterion scores as the judge's
  settings read them and (where a row has a reference) the reference metrics.
- i: as g with every criterion read apart (`criteria_read: apart`).
- s: as f with the judge's own answer written first and read (`self_reference: on`,
  app/deciding/own_answer.py): its cost beside the verdict alone.
- n: as f with no own answer at all (`self_reference: off`): what mode f's own answer (as
  the judge's record asks for it: where a program computes it) costs beside it.
- v: as n with the record's reward model's signal left out too (nothing read with its
  adapter): the verdict alone, what the reward model's read costs beside mode n.

MODEL: a registry name (default: the registry's default judge). ROWS: `autoj` (the
default), `reference`: pairs of two answers to one request with its reference answer
(Prometheus vicuna_eval, as training/datasets/reference_pairs.py makes them), judged on
their scenario's library criteria as a user's pair with a reference is; or
`reference-rubric`: the same pairs on their own rubric (its level texts: read apart).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from dataclasses import replace
from itertools import islice
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "data" / "autoj" / "pairwise_dev.jsonl"
WITH_REFERENCES = REPO.parent / "shared" / "data" / "prometheus" / "vicuna_eval.json"
N_CTX = 4096
HEAD_MODES = ("f", "g", "i", "n", "s", "v")  # decided by the judge's state head


def main(argv: list[str]) -> int:
    mode, threads, pairs, out = argv[0], int(argv[1]), int(argv[2]), Path(argv[3])
    name = argv[4] if len(argv) > 4 else None
    source = argv[5] if len(argv) > 5 else "autoj"
    from app.api import load_judge
    from app.io.writer import write_jsonl
    from app.judging.settings import SettingsLayer, judge_config, with_changes
    from app.records import Protocol, Status
    from models.backends.base import BackendOptions, run_sampling
    from models.registry import load_registry

    entry = load_registry().get(name)
    # Modes a-e: the judging modes of the LLM engine. A registry's relevance join (MiniLM
    # through torch, app/deciding/relevance.py) would add the same cost to every one, and a state
    # head would replace them all, so both are left out; mode f is the state head's path.
    judge_alone = SettingsLayer(relevance_join=False, state_head=False)
    if mode in HEAD_MODES and entry.judging.state_head is None:
        raise SystemExit(f"mode {mode} needs a judge with a state head; {entry.name} has none")
    rows = bench_rows(source, pairs)
    options = BackendOptions(n_ctx=N_CTX, n_threads=threads, prefix_cache=mode != "c")
    started = time.perf_counter()
    if mode == "a":
        judge = load_judge(str(merged_folder(entry)), options=options, backend="transformers")
    else:
        judge = load_judge(entry.name, options=options)
    load_s = time.perf_counter() - started
    config = judge_config(
        entry,
        None if mode in HEAD_MODES else judge_alone,
        context_tokens=N_CTX,
        protocol=Protocol.PAIRWISE,
        mode="score" if mode in ("c", "d", "e", *HEAD_MODES) else "generate",
        sampling=run_sampling(),
    )
    if mode in HEAD_MODES:  # the head alone (f, n, s), or the whole page (g, i)
        page = mode in ("g", "i")
        config = with_changes(config, {"criterion_scores": page, "reference_metrics": page})
        if mode == "i":
            config = with_changes(config, {"criteria_read": "apart"})
    if mode in ("n", "s", "v"):
        config = with_changes(config, {"self_reference": "on" if mode == "s" else "off"})
    if mode == "v" and (record := config.parts.decision) is not None:
        kept = tuple(s for s in record.signals if "reward" not in s.reads)
        alone = record.model_copy(update={"signals": kept})
        config = replace(config, parts=replace(config.parts, decision=alone))
    if mode == "e":
        config = with_changes(
            config, {"template": "pocketjudge-decision-compact", "criterion_scores": False}
        )
    if mode == "a":  # nothing constrains plain generate: give it the model's own template
        config = replace(config, sampling=replace(config.sampling, repeat_penalty=1.0))
    started = time.perf_counter()
    window = 16 if mode in ("d", "e") else 1
    judgments = list(judge.judge_rows(rows, config, window=window))
    seconds = time.perf_counter() - started
    judge.close()
    labels = [row.item.label.winner for row in rows]
    leanings = [j.leaning or j.winner if j.status is Status.OK else None for j in judgments]
    result = {
        "mode": mode,
        "threads": threads,
        "pairs": len(rows),
        "seconds": seconds,
        "load_seconds": load_s,
        "pairs_per_s": len(rows) / seconds,
        "peak_rss_mb": peak_rss_mb(),
        "agreement": 100 * sum(a == b for a, b in zip(leanings, labels)) / len(rows),
        "ok": sum(j.status is Status.OK for j in judgments),
        "uncertain": sum(bool(j.uncertain) for j in judgments),
        "truncated": sum(j.truncated for j in judgments),
        "prompt_tokens": sum(j.prompt_tokens or 0 for j in judgments),
        "completion_tokens": sum(j.completion_tokens or 0 for j in judgments),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_jsonl(judgments, out.with_suffix(".jsonl"))  # to compare the modes pair by pair
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0


def bench_rows(source: str, pairs: int) -> list:
    """The first `pairs` rows: Auto-J dev's, or pairs with a reference answer."""
    from app.io.reader import read_rows

    if source == "autoj":
        return list(islice(read_rows(DEV), pairs))
    if source in ("reference", "reference-rubric"):
        from training.datasets.reference_pairs import pairs_of

        graded = [row for row in read_rows(WITH_REFERENCES) if row.item is not None]
        found = pairs_of(graded)[:pairs]
        if source == "reference-rubric":
            return found
        return [
            replace(row, item=row.item.model_copy(update={"rubric": None}))
            for row in found
            if row.item is not None
        ]
    raise SystemExit(f"ROWS must be autoj, reference or reference-rubric, not {source!r}")


def peak_rss_mb() -> float:
    """This process's own peak resident memory. VmHWM belongs to the memory map made at
    exec; getrusage's ru_maxrss also keeps the peak of the process that forked this one
    (a test runner's gigabyte)."""
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def merged_folder(entry) -> Path:
    """The default judge as a float32 safetensors folder (base + adapter), built once."""
    from models.build import TOKENIZER_FILES
    from models.registry import MODELS_DIR, STORE_DIR

    target = STORE_DIR / "hf" / f"{entry.name}-merged"
    if (target / "config.json").is_file():
        return target
    import shutil

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from models.base_models import hf_base_dir

    base_dir = hf_base_dir(entry.base)
    model = AutoModelForCausalLM.from_pretrained(
        base_dir, dtype=torch.float32, local_files_only=True, use_safetensors=True
    )
    adapter = MODELS_DIR / entry.build.partition(":")[2]
    merged = PeftModel.from_pretrained(model, adapter).merge_and_unload()
    partial = target.with_name(target.name + ".partial")
    merged.save_pretrained(partial, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (base_dir / name).is_file():
            shutil.copy2(base_dir / name, partial / name)
    partial.rename(target)
    return target


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
