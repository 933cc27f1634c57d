"""The model registry file: validated on load, errors name the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.foundation.errors import ConfigError
from models.registry import load_registry

ENTRY = """
  - name: {name}
    backend: llama-cpp
    file: {name}.gguf
"""


def registry(tmp_path: Path, *extra: str, cascade: str | None = None) -> Path:
    text = "default: first\nmodels:\n" + ENTRY.format(name="first")
    if cascade is not None:
        text += f"    cascade_to: {cascade}\n    cascade_below: 0.7\n"
    for name in extra:
        text += ENTRY.format(name=name)
    path = tmp_path / "registry.yaml"
    path.write_text(text)
    return path


def test_the_shipped_registry_loads() -> None:
    assert load_registry().default in load_registry().names()


def test_a_second_judge_must_be_another_model_of_the_registry(tmp_path: Path) -> None:
    loaded = load_registry(registry(tmp_path, "second", cascade="second"))
    first = loaded.get("first")
    assert (first.cascade_to, first.cascade_below) == ("second", 0.7)
    for wrong in ("nowhere", "first"):  # unknown, and itself
        folder = tmp_path / wrong
        folder.mkdir()
        with pytest.raises(ConfigError) as error:
            load_registry(registry(folder, "second", cascade=wrong))
        assert "models.0.cascade_to" in str(error.value) and wrong in str(error.value)


def test_an_adapter_build_names_the_adapter_file_it_makes(tmp_path: Path) -> None:
    """`lora_from` (a committed peft adapter make models converts) needs `lora`, the GGUF
    adapter llama.cpp applies at load; the shipped reward judge has both, in place."""
    from models.registry import MODELS_DIR

    path = registry(tmp_path)
    path.write_text(path.read_text() + "    lora_from: judges/x/adapter\n")
    with pytest.raises(ConfigError) as error:
        load_registry(path)
    assert "models[0]: lora_from" in str(error.value)
    shipped = load_registry().get("pj-qwen15-reward")
    assert shipped.lora and shipped.lora_from
    assert (MODELS_DIR / shipped.lora_from / "adapter_config.json").is_file()
