"""Merge LoRA adapters trained on the same base into one adapter, with peft's DARE.

The `single` and `pairwise` adapters are trained separately on one base; this
stage combines them with `PeftModel.add_weighted_adapter` (DARE-TIES by default)
and writes, under the output folder:

- `adapter/`: the merged adapter alone (adapter_config.json and
  adapter_model.safetensors), loadable with `PeftModel.from_pretrained`;
- `model/`: the base with the merged adapter folded in (`merge_and_unload`),
  as safetensors, plus the base's tokenizer files, ready for export;
- `merge.json`: the method, density, weights, seed and adapters that produced them.

How peft combines LoRA factors (peft/tuners/lora/model.py): for the non-SVD
methods, A and B are combined separately, each scaled by
sqrt(weight * alpha / r), and the merged adapter has alpha = r. So
`linear` with two adapters gives (B1' + B2')(A1' + A2'), which holds cross terms
B1'A2' + B2'A1': it is not the sum of the two deltas. DARE drops entries of A
and B at random (density is the share kept) and rescales the kept ones by
1/density; the torch seed is set first so a merge is reproducible.

    python -m training.shipping.merge --base DIR --adapter single=DIR --adapter pairwise=DIR \
        --out DIR [--method dare_ties] [--density 0.7] [--weight single=1.0] [--no-full-model]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.foundation.errors import PocketJudgeError

METHODS = ("linear", "ties", "dare_linear", "dare_ties", "magnitude_prune")
MERGED = "merged"  # name of the merged adapter inside the PeftModel
# TOKENIZER_FILES (from models.build): what a merged model folder needs from the base.
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class MergeError(PocketJudgeError, ValueError):
    """The merge's arguments or adapters are invalid; the message says what to change."""


@dataclass(frozen=True)
class MergeResult:
    out_dir: Path
    adapter_dir: Path  # the merged adapter alone
    model_dir: Path | None  # the full merged model; None with save_full_model=False
    record: Path  # merge.json


def merge_adapters(
    base_dir: Path,
    adapters: dict[str, Path],
    out_dir: Path,
    method: str = "dare_ties",
    density: float = 0.7,
    weights: dict[str, float] | None = None,
    seed: int = 0,
    save_full_model: bool = True,
) -> MergeResult:
    """Merge `adapters` (name -> peft adapter folder) trained on `base_dir` into one.

    `density` (share of entries kept) is ignored by `linear`. An adapter
    missing from `weights` gets 1.0.
    """
    base_dir, out_dir = Path(base_dir), Path(out_dir)
    adapters = {name: Path(path) for name, path in adapters.items()}
    weights = _check_arguments(base_dir, adapters, method, density, weights)
    config = _check_compatible({name: _read_adapter_config(p) for name, p in adapters.items()})

    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    names = list(adapters)
    model = PeftModel.from_pretrained(base, str(adapters[names[0]]), adapter_name=names[0])
    for name in names[1:]:
        model.load_adapter(str(adapters[name]), adapter_name=name)
    combine_adapters(model, {name: weights[name] for name in names}, method, density, seed)

    out_dir.mkdir(parents=True, exist_ok=True)
    adapter_dir = save_merged_adapter(model, out_dir / "adapter")
    model_dir = None
    if save_full_model:
        model_dir = out_dir / "model"
        full = model.merge_and_unload(adapter_names=[MERGED])
        _replace_dir(model_dir, lambda tmp: _save_full_model(full, base_dir, tmp))

    record = out_dir / "merge.json"
    info: dict[str, Any] = {
        "method": method,
        "density": None if method == "linear" else density,
        "weights": weights,
        "seed": seed,
        "adapters": {name: str(path) for name, path in adapters.items()},
        "base": str(base_dir),
        "r": config["r"],
        "target_modules": config["target_modules"],
        "full_model": save_full_model,
    }
    record.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return MergeResult(out_dir=out_dir, adapter_dir=adapter_dir, model_dir=model_dir, record=record)


def combine_adapters(
    model: Any,
    weights: dict[str, float],
    method: str = "dare_ties",
    density: float = 0.7,
    seed: int = 0,
) -> str:
    """Add the adapters loaded in the PeftModel `model` (name -> weight) up as one more
    adapter, MERGED, made active; its name. Also used on a lent GPU, where the base comes
    from the GGUF (training.lora.reward_loan), so it takes a model rather than a folder."""
    import torch

    names = list(weights)
    # The merged adapter copies the first adapter's config with alpha = r, so its
    # scaling must be alpha / r = 1; with rsLoRA peft would use alpha / sqrt(r) instead.
    # The adapters' own scalings are already set on their layers and are kept.
    model.peft_config[names[0]].use_rslora = False
    extra = {} if method == "linear" else {"density": density}
    torch.manual_seed(seed)  # DARE drops entries at random
    model.add_weighted_adapter(
        names, [weights[name] for name in names], MERGED, combination_type=method, **extra
    )
    model.set_adapter(MERGED)
    return MERGED


def fold_adapter(base_dir: Path, adapter_dir: Path, model_dir: Path) -> Path:
    """The base with one adapter folded in (`merge_and_unload`), saved as safetensors with the
    base's tokenizer files: a single adapter's model, ready for export like a merge's."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    full = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    _replace_dir(Path(model_dir), lambda tmp: _save_full_model(full, Path(base_dir), tmp))
    return Path(model_dir)


def _check_arguments(
    base_dir: Path,
    adapters: dict[str, Path],
    method: str,
    density: float,
    weights: dict[str, float] | None,
) -> dict[str, float]:
    """Validate the arguments; return the weights, one per adapter."""
    if method not in METHODS:
        raise MergeError(f"unknown merge method '{method}'; use one of {', '.join(METHODS)}")
    if method != "linear" and not 0 < density <= 1:
        raise MergeError(f"density must be in (0, 1] (the share of entries kept), got {density}")
    if len(adapters) < 2:
        raise MergeError(f"give at least two adapters to merge, got {sorted(adapters)}")
    for name in adapters:
        if not _NAME.match(name) or name == MERGED:
            raise MergeError(
                f"adapter name '{name}' is not allowed: use letters, digits, '_' or '-', "
                f"and not '{MERGED}'"
            )
    if not (base_dir / "config.json").is_file():
        raise MergeError(f"{base_dir}: no config.json; pass the base model's safetensors folder")
    weights = weights or {}
    unknown = sorted(set(weights) - set(adapters))
    if unknown:
        raise MergeError(
            f"weights are given for {unknown}, which are not adapters; "
            f"the adapters are {sorted(adapters)}"
        )
    return {name: float(weights.get(name, 1.0)) for name in adapters}


def _read_adapter_config(path: Path) -> dict[str, Any]:
    config_file = path / "adapter_config.json"
    if not config_file.is_file():
        raise MergeError(f"{path}: no adapter_config.json; pass a peft save_pretrained folder")
    return json.loads(config_file.read_text(encoding="utf-8"))


def _check_compatible(configs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The LoRA settings the adapters must share to be merged factor by factor.

    Returns them (r, target_modules) for the record.
    """
    for name, config in configs.items():
        if config.get("peft_type") != "LORA":
            raise MergeError(f"adapter '{name}' is {config.get('peft_type')}, not a LoRA adapter")
        if config.get("use_dora"):
            raise MergeError(f"adapter '{name}' uses DoRA, which add_weighted_adapter cannot merge")
        if config.get("rank_pattern"):
            raise MergeError(f"adapter '{name}' has a rank_pattern; merging needs one rank r")
    seen = {
        name: {"r": config.get("r"), "target_modules": _modules(config.get("target_modules"))}
        for name, config in configs.items()
    }
    for key, what in (("r", "rank"), ("target_modules", "target modules")):
        values = {name: settings[key] for name, settings in seen.items()}
        if len({json.dumps(value) for value in values.values()}) > 1:
            shown = ", ".join(f"{name}: {value}" for name, value in values.items())
            raise MergeError(
                f"the adapters differ in {what} ({shown}); train them with the same "
                "LoRA settings (r and target_modules) to merge them"
            )
    return next(iter(seen.values()))


def _modules(target_modules: Any) -> str | list[str] | None:
    """target_modules in a comparable form: a regex string, or a sorted list."""
    if target_modules is None or isinstance(target_modules, str):
        return target_modules
    return sorted(target_modules)


def save_merged_adapter(model: Any, adapter_dir: Path) -> Path:
    """Save only the merged adapter, flat in `adapter_dir`.

    peft writes a selected adapter not named "default" into a subfolder named
    after it; that subfolder becomes `adapter_dir`.
    """

    def save(tmp: Path) -> None:
        staging = tmp.with_name(tmp.name + ".peft")
        shutil.rmtree(staging, ignore_errors=True)
        model.save_pretrained(str(staging), selected_adapters=[MERGED])
        (staging / MERGED).rename(tmp)
        shutil.rmtree(staging)

    _replace_dir(adapter_dir, save)
    return adapter_dir


def _save_full_model(full: Any, base_dir: Path, model_dir: Path) -> None:
    from models.build import TOKENIZER_FILES  # here: the GPU machine's image cannot import it

    full.save_pretrained(str(model_dir))
    for name in TOKENIZER_FILES:  # a base without a tokenizer gets a model without one
        if (base_dir / name).is_file():
            shutil.copy2(base_dir / name, model_dir / name)


def _replace_dir(target: Path, write: Any) -> None:
    """Call `write(tmp)` to fill a fresh folder, then put it in place of `target`."""
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    write(tmp)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def _pairs(values: list[str], option: str, cast: Any) -> dict[str, Any]:
    """Parse repeated `NAME=VALUE` options."""
    parsed: dict[str, Any] = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise MergeError(f"{option} expects NAME=VALUE, got '{value}'")
        if name in parsed:
            raise MergeError(f"{option} {name} is given twice")
        try:
            parsed[name] = cast(rest)
        except ValueError:
            raise MergeError(f"{option} {name}: '{rest}' is not a number") from None
    return parsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.shipping.merge", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--base", type=Path, required=True, help="base model safetensors folder")
    parser.add_argument(
        "--adapter", action="append", default=[], metavar="NAME=DIR", help="repeat per adapter"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--method", default="dare_ties", help=f"one of {', '.join(METHODS)}")
    parser.add_argument("--density", type=float, default=0.7, help="share of entries kept")
    parser.add_argument(
        "--weight", action="append", default=[], metavar="NAME=W", help="default 1.0"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-full-model", action="store_true", help="save the merged adapter only")
    args = parser.parse_args(argv)
    try:
        adapters = _pairs(args.adapter, "--adapter", Path)
        weights = _pairs(args.weight, "--weight", float) or None
        result = merge_adapters(
            args.base,
            adapters,
            args.out,
            method=args.method,
            density=args.density,
            weights=weights,
            seed=args.seed,
            save_full_model=not args.no_full_model,
        )
    except MergeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"merged adapter: {result.adapter_dir}")
    if result.model_dir is not None:
        print(f"merged model:   {result.model_dir}")
    print(f"record:         {result.record}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
