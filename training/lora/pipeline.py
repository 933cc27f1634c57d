"""`python -m training run CONFIG`: data, LoRA adapters, DARE merge, export, evaluation.

Every stage writes into the run folder (training/runs/<name>/ by default) and
is skipped when its output is already there, so an interrupted run continues
where it stopped (adapter training also resumes from its last checkpoint).

    data/      examples per adapter, held-out single rows, build counts
    tokens/    the examples tokenized (training on a machine without llama.cpp reads these)
    adapters/  single/ and pairwise/ (peft folders) with their training logs
    merged/    <method>/adapter (+ model/) for the configured merge and comparisons
    export/    <name>-q8_0.gguf (+ q4_k_m), INT8 check result
    calibrate/ tie margin of the position-calibrated verdict, tuned on training pairs
    eval/      <variant>/report.md|json per judge variant, summary.md side by side

`ship` (when the config enables it) copies the merged adapter, config, model
card and evaluation into models/judges/<name>/ and registers the judge, so
`make models` in a fresh clone rebuilds the same GGUF from the PyPI base.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pydantic import ValidationError

from models.foundation.errors import validation_message
from training.lora.config import TrainingConfig, load_config, resolve_config_path

STAGES = ("data", "train", "merge", "export", "calibrate", "eval", "ship")


def _log(message: str) -> None:
    print(f"[training] {message}", file=sys.stderr, flush=True)


def stage_data(config: TrainingConfig, run: Path) -> dict:
    from training.datasets.examples import build_examples, write_examples, write_single_rows

    done = run / "data" / "build.json"
    if done.exists():
        return json.loads(done.read_text(encoding="utf-8"))
    built = build_examples(config.data)
    for name in config.adapters:
        write_examples(run / "data" / f"{name}.jsonl", built["examples"][name])
    write_single_rows(built["single_heldout"], run / "data" / "single_heldout.jsonl")
    summary = {
        "counts": built["report"],
        "examples": {name: len(built["examples"][name]) for name in config.adapters},
        "single_heldout": len(built["single_heldout"]),
    }
    done.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def stage_train(
    config: TrainingConfig, run: Path, base_dir: Path, gguf: Path, progress: bool = True
) -> dict:
    from training.lora.train import train_adapter

    logs = {}
    for name in config.adapters:
        tokenized, too_long = training_tokens(config, run, name, gguf)
        _log(f"{name}: {len(tokenized)} examples ({too_long} longer than max_tokens, left out)")
        log = train_adapter(
            base_dir,
            tokenized,
            run / "adapters" / name,
            config.lora,
            config.train,
            label=name,
            progress=progress,
        )
        log["too_long"] = too_long
        logs[name] = {k: v for k, v in log.items() if k != "losses"}
    return logs


def training_tokens(config: TrainingConfig, run: Path, name: str, gguf: Path) -> tuple[list, int]:
    """The adapter's tokenized examples: from run/tokens/ when current, else tokenized
    now (llama.cpp) and kept there, so another machine can train from that file alone."""
    from training.datasets.examples import read_examples
    from training.datasets.token_cache import cache_key, load_tokens, save_tokens
    from training.lora.train import tokenize_all

    path = run / "tokens" / f"{name}.npz"
    key = cache_key(config.data.model_dump_json(), gguf.name)
    cached = load_tokens(path, key)
    if cached is not None:
        return cached
    examples = read_examples(run / "data" / f"{name}.jsonl")
    tokenized, too_long = tokenize_all(examples, gguf, config.data.max_tokens)
    save_tokens(path, key, tokenized, too_long)
    return tokenized, too_long


def stage_merge(config: TrainingConfig, run: Path, base_dir: Path) -> dict:
    from training.shipping.merge import merge_adapters

    adapters = {name: run / "adapters" / name for name in config.adapters}
    if len(adapters) < 2:
        return {"skipped": "one adapter: nothing to merge"}
    results = {}
    for method in (config.merge.method, *config.merge.compare):
        out = run / "merged" / method
        if not (out / "merge.json").exists():
            merge_adapters(
                base_dir,
                adapters,
                out,
                method=method,
                density=config.merge.density,
                weights=dict(config.merge.weights),
                seed=config.train.seed,
            )
        results[method] = str(out)
    return results


def final_model_dir(config: TrainingConfig, run: Path) -> Path:
    if len(config.adapters) < 2:
        raise NotImplementedError("export of a single unmerged adapter")
    return run / "merged" / config.merge.method / "model"


def stage_export(config: TrainingConfig, run: Path) -> dict:
    from training.shipping.export import check_int8, export_gguf, quantize_q4_k_m

    model_dir = final_model_dir(config, run)
    out = run / "export"
    gguf = out / f"{config.name}-{config.export.gguf}.gguf"
    result: dict = {}
    if not gguf.exists():
        export_gguf(model_dir, gguf, config.export.gguf)
    result["gguf"] = str(gguf)
    if config.export.q4_k_m:
        small = out / f"{config.name}-q4_k_m.gguf"
        if not small.exists():
            quantize_q4_k_m(gguf, small)
        result["q4_k_m"] = str(small)
    if config.export.int8_check:
        try:
            result["int8"] = check_int8(model_dir)
        except Exception as exc:  # reported, never hidden: INT8 needs bitsandbytes support
            result["int8"] = f"failed: {exc}"
    (out / "export.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def exported_gguf(config: TrainingConfig, run: Path) -> Path:
    return run / "export" / f"{config.name}-{config.export.gguf}.gguf"


def calibration_file(config: TrainingConfig) -> Path:
    """Training pairs for the tie margin: a seeded sample of pairwise_train, Auto-J layout."""
    import random

    from training.datasets.examples import PAIRWISE_FILE
    from training.lora.config import resolve_path

    source = resolve_path(config.data.autoj_dir) / PAIRWISE_FILE
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    random.Random(config.data.seed + 7).shuffle(lines)
    out = config.run_dir() / "calibrate" / "pairs.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines[: config.eval.calibration_pairs]) + "\n", encoding="utf-8")
    return out


def stage_calibrate(
    config: TrainingConfig,
    run: Path,
    progress: bool = True,
    variant: str | None = None,
    base_dir: Path | None = None,
) -> dict:
    """Tune one variant's tie margin on training pairs (default: the configured merge).

    Every variant gets its own margin: a margin tuned on one model's score gaps
    means nothing for another's, and a margin of 0 would almost never say tie.
    """
    from app.io.judgments import read_judgments
    from app.io.reader import read_rows
    from training.evaluation.evaluate import evaluate_files
    from training.evaluation.rescore import judgment_margin
    from training.heads.tie_band import tune_tie_margin

    variant = variant or config.merge.method
    out = run / "calibrate"
    if variant != config.merge.method:
        out = out / variant
    done = out / "calibration.json"
    if done.exists():
        return json.loads(done.read_text(encoding="utf-8"))
    if not config.eval.calibration_pairs:
        return {"tie_margin": 0.0, "pairs": 0}
    pairs_file = calibration_file(config)
    evaluate_files(
        [pairs_file],
        model=str(variant_gguf(config, run, variant, base_dir)),
        out_dir=out,
        threads=config.eval.threads,
        quiet=not progress,
        overrides=_eval_overrides(config, 0.0),
    )
    labels = {row.line: row.item.label.winner for row in read_rows(pairs_file) if row.item}
    judged = read_judgments(out / "judgments.jsonl")
    margins = [(judgment_margin(j), j.line) for j in judged]
    pairs = [(margin, labels[line]) for margin, line in margins if margin is not None]
    result = tune_tie_margin(pairs)
    done.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


def _eval_overrides(config: TrainingConfig, tie_margin: float):
    from app.judging.settings import SettingsLayer
    from training.evaluation.evaluate import Overrides

    return Overrides(
        SettingsLayer(
            template=config.data.template,
            pair_combine="calibrated",
            tie_margin=tie_margin,
            max_input_chars=config.data.max_input_chars,
            criterion_scores=config.data.criteria,  # trained on the decision alone: read so
        )
    )


def variant_gguf(
    config: TrainingConfig, run: Path, variant: str, base_dir: Path | None = None
) -> Path:
    """The GGUF of one judge variant, built on first use (same quantization as the export).

    `base_dir` (default: the config's base, built on demand) is needed only to
    build the base or a single adapter's model.
    """
    from models.base_models import hf_base_dir
    from training.shipping.export import export_gguf

    if variant == config.merge.method:
        return exported_gguf(config, run)
    out = run / "eval" / "models" / f"{variant}-{config.export.gguf}.gguf"
    if out.exists():
        return out
    if variant == "base" or variant in config.adapters:
        base_dir = base_dir or hf_base_dir(config.base)
    if variant == "base":
        model_dir = base_dir
    elif variant in config.adapters:
        model_dir = run / "eval" / "models" / variant
        if not (model_dir / "config.json").exists():
            apply_adapter(base_dir, run / "adapters" / variant, model_dir)
    else:
        model_dir = run / "merged" / variant / "model"
    export_gguf(model_dir, out, config.export.gguf, base=config.base)
    return out


def apply_adapter(base_dir: Path, adapter_dir: Path, out_dir: Path) -> Path:
    """Base + one LoRA adapter, merged into plain weights (safetensors, with the tokenizer)."""
    import shutil

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    merged.save_pretrained(str(out_dir), safe_serialization=True)
    for path in base_dir.iterdir():
        if path.is_file() and not path.name.endswith(".safetensors") and path.name != "config.json":
            shutil.copy2(path, out_dir / path.name)
    return out_dir


def eval_dir_name(variant: str, limit: int | None) -> str:
    """Results on the first N rows live apart from results on all rows."""
    return variant if limit is None else f"{variant}-limit{limit}"


def stage_eval(config: TrainingConfig, run: Path, base_dir: Path, progress: bool = True) -> dict:
    from training.evaluation.evaluate import evaluate_files
    from training.lora.config import resolve_path

    files = [resolve_path(f) for f in config.eval.files]
    heldout = run / "data" / "single_heldout.jsonl"
    if heldout.exists():
        files.append(heldout)
    reports = {}
    for variant in config.eval.variants:
        out = run / "eval" / eval_dir_name(variant, config.eval.limit)
        reports[variant] = str(out / "report.md")
        if (out / "report.json").exists():
            continue
        margin = stage_calibrate(config, run, progress, variant, base_dir)["tie_margin"]
        _log(f"evaluating {variant} (tie margin {margin})")
        evaluate_files(
            files,
            model=str(variant_gguf(config, run, variant, base_dir)),
            limit=config.eval.limit,
            out_dir=out,
            threads=config.eval.threads,
            quiet=not progress,
            overrides=_eval_overrides(config, margin),
        )
    from training.evaluation.compare import write_comparison

    write_comparison(run / "eval")
    return reports


def coin_flip(labels: dict[str, float] | None) -> float | None:
    """The agreement of a fair coin between the answers: half the rows with a winner."""
    if not labels:
        return None
    return round((labels.get("A", 0.0) + labels.get("B", 0.0)) / 2, 1)


def headline_metrics(report: dict) -> dict[str, dict]:
    """Per evaluation file: the numbers a model card shows."""
    rows = {}
    for name, entry in report["files"].items():
        judge = entry["judge"]
        if entry["kind"] == "pairwise":
            rows[name] = {
                "rows": judge.get("n"),
                "both orders %": judge.get("agreement_both"),
                "calibrated verdict %": judge.get("agreement_combined"),
                "longer answer wins %": entry["heuristic"].get("agreement_both"),
                "coin flip %": coin_flip(judge.get("labels")),
                "swap consistency %": judge.get("consistency"),
            }
        else:
            rows[name] = {
                "rows": judge.get("n"),
                "Pearson": judge.get("pearson"),
                "Spearman": judge.get("spearman"),
                "length Spearman": judge.get("heuristic", {}).get("spearman"),
            }
    return rows


def stage_ship(config: TrainingConfig, run: Path, config_path: Path | None) -> dict:
    import shutil

    from models.registry import MODELS_DIR, STORE_DIR
    from training.shipping.export import add_registry_entry, git_commit, write_model_card
    from training.shipping.registry_entry import shipped_entry

    if not config.ship.enabled:
        return {"skipped": "ship.enabled is false in the config"}
    dest = MODELS_DIR / "judges" / config.name
    adapter = dest / "adapter"
    adapter.mkdir(parents=True, exist_ok=True)
    merged = run / "merged" / config.merge.method / "adapter"
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        shutil.copy2(merged / name, adapter / name)
    if config_path is not None:
        shutil.copy2(config_path, dest / "training_config.yaml")
    report_dir = run / "eval" / config.merge.method
    metrics = None
    if (report_dir / "report.json").exists():
        shutil.copy2(report_dir / "report.md", dest / "eval_report.md")
        report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
        metrics = headline_metrics(report)
    if (run / "eval" / "summary.md").exists():
        shutil.copy2(run / "eval" / "summary.md", dest / "eval_variants.md")
    calibration = stage_calibrate(config, run, progress=False)
    data = json.loads((run / "data" / "build.json").read_text(encoding="utf-8"))
    write_model_card(
        dest,
        name=config.name,
        base=config.base,
        config_path=config_path or run / "config.json",
        data_summary={**data["counts"], "single held out": data["single_heldout"]},
        metrics=metrics,
        commit=git_commit(),
    )
    entry = shipped_entry(config, float(calibration["tie_margin"]))
    add_registry_entry(entry, make_default=config.ship.make_default)
    store_file = STORE_DIR / entry["file"]
    if not store_file.exists():
        shutil.copy2(exported_gguf(config, run), store_file)
    return {"dest": str(dest), "registry": entry["name"], "default": config.ship.make_default}


def run_pipeline(
    config: TrainingConfig,
    stages: tuple[str, ...] = STAGES,
    *,
    base_dir: Path | None = None,
    base_gguf_file: Path | None = None,
    progress: bool = True,
    config_path: Path | None = None,
) -> dict:
    """Run the stages in order. `base_dir` / `base_gguf_file` replace the named base (tests)."""
    from models.base_models import base_gguf, hf_base_dir

    run = config.run_dir()
    run.mkdir(parents=True, exist_ok=True)
    (run / "config.json").write_text(config.model_dump_json(indent=2) + "\n", encoding="utf-8")
    summary: dict = {"name": config.name, "base": config.base, "run_dir": str(run)}
    started = time.perf_counter()
    if "data" in stages:
        _log("building examples")
        summary["data"] = stage_data(config, run)
    if base_dir is None and {"train", "merge", "eval"} & set(stages):
        base_dir = hf_base_dir(config.base)
    if "train" in stages:
        gguf = base_gguf_file or base_gguf(config.base)
        summary["train"] = stage_train(config, run, base_dir, gguf, progress)
    if "merge" in stages:
        _log(f"merging adapters ({config.merge.method}, density {config.merge.density})")
        summary["merge"] = stage_merge(config, run, base_dir)
    if "export" in stages:
        _log(f"exporting GGUF {config.export.gguf}")
        summary["export"] = stage_export(config, run)
    if "calibrate" in stages:
        _log("tuning the tie margin on training pairs")
        summary["calibrate"] = stage_calibrate(config, run, progress)
    if "eval" in stages:
        summary["eval"] = stage_eval(config, run, base_dir, progress)
    if "ship" in stages:
        summary["ship"] = stage_ship(config, run, config_path)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    (run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _names(text: str) -> tuple[str, ...]:
    """A comma-separated option as names, blanks dropped."""
    return tuple(name.strip() for name in text.split(",") if name.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the training pipeline of a config")
    run.add_argument("config", help="YAML file, or a name in training/configs/")
    run.add_argument(
        "--stages", default=",".join(STAGES), help=f"comma-separated, from {', '.join(STAGES)}"
    )
    run.add_argument(
        "--variants", help="evaluate these variants instead of the config's (base, single, ...)"
    )
    run.add_argument("--limit", type=int, help="evaluate only the first N rows of each file")
    run.add_argument(
        "--adapters",
        help="train only these adapters (e.g. one per process, after the data stage)",
    )
    args = parser.parse_args(argv)
    stages = _names(args.stages)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"unknown stage(s) {unknown}; valid: {', '.join(STAGES)}")
    config_path = resolve_config_path(args.config)
    config = load_config(config_path)
    eval_changes: dict = {}
    if args.variants:
        eval_changes["variants"] = _names(args.variants)
    if args.limit is not None:
        eval_changes["limit"] = args.limit
    if eval_changes:
        try:
            config = TrainingConfig.model_validate(
                {**config.model_dump(), "eval": {**config.eval.model_dump(), **eval_changes}}
            )
        except ValidationError as error:
            parser.error("; ".join(validation_message(e) for e in error.errors()))
    if args.adapters:
        chosen = _names(args.adapters)
        others = [a for a in chosen if a not in config.adapters]
        if others:
            parser.error(f"adapter(s) {others} not in the config; it has {list(config.adapters)}")
        if set(stages) - {"train"}:
            parser.error("--adapters goes with --stages train only (the merge needs every adapter)")
        config = config.model_copy(update={"adapters": chosen})
    summary = run_pipeline(config, stages, config_path=config_path)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
