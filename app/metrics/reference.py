"""Reference metrics: ROUGE-1/2/L, BLEU and BERTScore F1 of each answer against one reference.

Every metric goes through one of our own `evaluate` modules in `app/metrics/modules`, loaded by
path (loading by name would need the Hugging Face hub). Modules, and the BERTScore model inside
the `pj_bertscore` module, are loaded once per process: the first BERTScore call takes seconds.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from models.foundation.errors import MetricsUnavailable, UnknownNameError
from models.minilm import minilm_dir, set_offline

if TYPE_CHECKING:
    import evaluate

METRIC_NAMES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL", "bleu", "bertscore_f1")
MODULES_DIR = Path(__file__).resolve().parent / "modules"

# Python package -> pip name, per evaluate module.
_REQUIREMENTS: dict[str, dict[str, str]] = {
    "pj_rouge": {"evaluate": "evaluate", "rouge_score": "rouge-score", "nltk": "nltk"},
    "pj_bleu": {"evaluate": "evaluate", "sacrebleu": "sacrebleu"},
    "pj_bertscore": {"evaluate": "evaluate", "bert_score": "bert-score", "torch": "torch"},
}


def _require(module_name: str) -> None:
    for package, pip_name in _REQUIREMENTS[module_name].items():
        try:
            importlib.import_module(package)
        except ImportError as exc:
            raise MetricsUnavailable(
                f"metric '{module_name}' needs the package '{pip_name}': pip install {pip_name}"
            ) from exc


@functools.cache
def load_module(module_name: str) -> evaluate.EvaluationModule:
    """Load one of our evaluate modules ('pj_rouge', 'pj_bleu', 'pj_bertscore'), once."""
    if module_name not in _REQUIREMENTS:
        raise UnknownNameError("metric module", module_name, list(_REQUIREMENTS))
    set_offline()
    _require(module_name)
    import evaluate

    return evaluate.load(str(MODULES_DIR / module_name), keep_in_memory=True)


def preload(*, bertscore: bool = True) -> None:
    """Load the modules (and the BERTScore model) now, e.g. while a UI starts."""
    load_module("pj_rouge")
    load_module("pj_bleu")
    if bertscore:
        load_module("pj_bertscore").scorer(str(minilm_dir()))


def _unit(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def _rouge_bleu(answers: list[str], references: list[str]) -> list[dict[str, float]]:
    rouge = load_module("pj_rouge").compute(predictions=answers, references=references)
    bleu = load_module("pj_bleu").compute(predictions=answers, references=references)
    return [
        {
            "rouge1": _unit(rouge["rouge1"][i]),
            "rouge2": _unit(rouge["rouge2"][i]),
            "rougeL": _unit(rouge["rougeL"][i]),
            "bleu": _unit(bleu["bleu"][i]),
        }
        for i in range(len(answers))
    ]


def _bertscore_f1(answers: list[str], references: list[str]) -> list[float]:
    model_dir = str(minilm_dir())
    result = load_module("pj_bertscore").compute(
        predictions=answers, references=references, model_type=model_dir
    )
    return [_unit(f1) for f1 in result["f1"]]


def reference_metrics(
    answers: Sequence[str], reference: str, *, bertscore: bool = True
) -> list[dict[str, float]]:
    """Scores of each answer against `reference`, all in 0..1, in the order of `answers`.

    Keys are METRIC_NAMES: ROUGE-1/2/L F-measure (stemmed), sentence BLEU (effective order) and
    BERTScore F1 (all-MiniLM-L6-v2, not rescaled); "bertscore_f1" only when `bertscore` is True.
    An empty answer or reference scores 0.0. Raises MetricsUnavailable if a package is missing.
    """
    if isinstance(answers, str):
        raise TypeError("answers must be a sequence of strings, not one string")
    texts = [answer or "" for answer in answers]
    if not texts:
        return []
    references = [reference or ""] * len(texts)
    rows = _rouge_bleu(texts, references)
    if bertscore:
        for row, f1 in zip(rows, _bertscore_f1(texts, references), strict=True):
            row["bertscore_f1"] = f1
    return rows
