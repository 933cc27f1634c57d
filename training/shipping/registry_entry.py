"""A trained judge's entry in models/registry.yaml, added without losing the file's comments."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from models.base_models import get_base
from models.foundation.errors import ConfigError
from models.judge_settings import JUDGE_DEFAULTS
from models.registry import REGISTRY_FILE, ModelEntry, load_registry
from models.run_settings import RUN_DEFAULTS
from training.lora.config import DataConfig, TrainingConfig

TRAINED_TEMPLATE = DataConfig().template  # the template a LoRA judge is trained on


def registry_entry(
    name: str,
    *,
    base: str,
    adapter: str,
    file: str | None = None,
    template: str | None = TRAINED_TEMPLATE,
    pair_combine: str = JUDGE_DEFAULTS.pair_combine,
    tie_margin: float = JUDGE_DEFAULTS.tie_margin,
    context: int = RUN_DEFAULTS.n_ctx,
    max_input_chars: int | None = JUDGE_DEFAULTS.max_input_chars,
    criterion_scores: bool = JUDGE_DEFAULTS.criterion_scores,
    uncertain_below: float | None = None,
    relevance_join: dict[str, float] | None = None,
    card: str | None = None,
    description: str = "",
) -> dict[str, Any]:
    """A registry entry built from `base` + the LoRA adapter folder `adapter` (under models/).

    Validated as a ModelEntry; `file` defaults to `<name>-q8_0.gguf` in models/store/.
    """
    entry = {
        "name": name,
        "backend": "llama-cpp",
        "file": file or f"{name}-q8_0.gguf",
        "build": f"adapter:{adapter}",
        "base": get_base(base).name,
        "trained_for_judging": True,
        "context": context,
        "judging": _written(
            {
                "template": template,
                "pair_combine": pair_combine,
                "tie_margin": tie_margin,
                "max_input_chars": max_input_chars,
                "uncertain_below": uncertain_below,  # written only when given
                "criterion_scores": None if criterion_scores else False,  # only when not default
                "relevance_join": relevance_join,
            }
        ),
        "card": card,
        "description": description
        or f"PocketJudge judge trained from {base} (LoRA, merged), GGUF Q8_0.",
    }
    entry = _written(entry)
    ModelEntry.model_validate(entry)
    return entry


def _written(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that are set (None: left to the default)."""
    return {name: value for name, value in fields.items() if value is not None}


_ITEM = re.compile(r"^(?P<indent>\s*)- ")
_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:")
_DEFAULT = re.compile(r"^default:[^#\n]*?(?=\s*(#|$))")  # the value, not a trailing comment


def add_registry_entry(
    entry: dict[str, Any], registry_file: Path = REGISTRY_FILE, make_default: bool = False
) -> Path:
    """Add `entry` to the registry file, or replace the entry of the same name.

    The file is edited as text, so its comments and the other entries stay as
    they are; the result is validated with load_registry before it replaces
    the file.
    """
    import yaml

    registry_file = Path(registry_file)
    ModelEntry.model_validate(entry)
    ordered = {"name": entry["name"], "backend": entry["backend"], **entry}
    text = registry_file.read_text(encoding="utf-8")
    head, blocks, tail = _split_models(text, registry_file)
    indent = _ITEM.match(blocks[0][1][0]).group("indent") if blocks else "  "
    rendered = yaml.safe_dump([ordered], sort_keys=False, allow_unicode=True, width=88)
    body = [indent + line if line else line for line in rendered.splitlines(keepends=True)]
    names = [yaml.safe_load("".join(b))[0].get("name") for _, b in blocks]
    if ordered["name"] in names:
        index = names.index(ordered["name"])
        blocks[index] = (blocks[index][0], body)
    else:
        blocks.append(([], body))
    if make_default:
        head = [_DEFAULT.sub(f"default: {ordered['name']}", line) for line in head]
    new_text = "".join(head) + "".join("".join(c) + "".join(b) for c, b in blocks) + "".join(tail)
    _replace_validated(registry_file, text, new_text)
    return registry_file


def _split_models(
    text: str, path: Path
) -> tuple[list[str], list[tuple[list[str], list[str]]], list[str]]:
    """(lines up to `models:`, [(comment lines, entry lines)], top-level lines after)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = next((i for i, line in enumerate(lines) if line.startswith("models:")), None)
    if start is None or lines[start].split(":", 1)[1].strip() not in ("", "[]"):
        raise ConfigError(path, "models", "expected a block list under a 'models:' line")
    if lines[start].split(":", 1)[1].strip() == "[]":
        lines[start] = "models:\n"
    head, rest = lines[: start + 1], lines[start + 1 :]
    end = next((i for i, line in enumerate(rest) if _TOP_KEY.match(line)), len(rest))
    rest, tail = rest[:end], rest[end:]
    first = next((m for m in map(_ITEM.match, rest) if m), None)
    indent = first.group("indent") if first else "  "
    blocks: list[tuple[list[str], list[str]]] = []
    pending: list[str] = []  # comments and blank lines belong to the entry after them
    for line in rest:
        if line.startswith(indent + "- "):  # an entry; deeper "- " lines are inside one
            blocks.append((pending, [line]))
            pending = []
        elif not line.strip() or line.lstrip().startswith("#"):
            pending.append(line)
        elif blocks:
            blocks[-1][1].extend([*pending, line])
            pending = []
        else:
            raise ConfigError(path, "models", f"unexpected line before the first entry: {line!r}")
    return head, blocks, pending + tail


def _replace_validated(path: Path, old_text: str, new_text: str) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(new_text, encoding="utf-8")
    try:
        load_registry.cache_clear()
        load_registry(partial)
    except Exception:
        partial.unlink(missing_ok=True)
        raise
    finally:
        load_registry.cache_clear()
    if path.read_text(encoding="utf-8") != old_text:
        partial.unlink(missing_ok=True)
        raise ConfigError(path, "", "the file changed while the entry was being added: retry")
    os.replace(partial, path)


def shipped_entry(config: TrainingConfig, tie_margin: float) -> dict:
    """The registry entry the ship stage writes for the config's judge."""
    return registry_entry(
        config.name,
        base=config.base,
        adapter=f"judges/{config.name}/adapter",
        template=config.data.template,
        pair_combine="calibrated",
        tie_margin=tie_margin,
        max_input_chars=config.data.max_input_chars,
        criterion_scores=config.data.criteria,
        uncertain_below=config.ship.uncertain_below,
        relevance_join=(
            config.ship.relevance_join.model_dump() if config.ship.relevance_join else None
        ),
        card=f"judges/{config.name}/MODEL_CARD.md",
        description=(
            f"PocketJudge's own judge: {config.base} with LoRA adapters for single and "
            f"pairwise judging, {config.merge.method}-merged, GGUF {config.export.gguf}. "
            "See models/judges/" + config.name + "/MODEL_CARD.md for how it scores."
        ),
    )
