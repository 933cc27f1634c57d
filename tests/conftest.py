"""Shared fixtures: the tiny real model the tests build, offline settings, and a run
history of each test's own (never the user's)."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from tests.support.fixtures import tiny_gguf_model, tiny_hf_model  # noqa: F401


@pytest.fixture(autouse=True)
def own_run_history(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test (and every process it starts) records runs in a folder of its own."""
    home = tmp_path_factory.mktemp("pocketjudge-home")
    monkeypatch.setenv("POCKETJUDGE_HOME", str(home))
    return home
