"""Moving a model to a lent GPU machine in parts and an adapter back (training/
device_transfer.py): every byte arrives, a damaged or missing part is refused, and what
comes back fits the device tool's limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from training.device.device_transfer import MANIFEST, join, pack, receive, split, stage, unpack


def test_a_file_goes_over_in_parts_and_is_joined_whole(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    manifest = split(tiny_gguf_model, tmp_path / "parts", part_mb=0.05)
    parts = manifest["parts"]
    assert len(parts) == -(-tiny_gguf_model.stat().st_size // int(0.05 * 1024 * 1024)) > 2
    store = tmp_path / "store"
    for number, part in enumerate(parts):  # one call each: one part and the manifest
        stage(tmp_path / "parts", number, tmp_path / "call")
        assert sorted(p.name for p in (tmp_path / "call").iterdir()) == [MANIFEST, part["name"]]
        assert receive(tmp_path / "call", store) == [part["name"]]
    joined = join(store, tmp_path / "model.gguf")
    assert joined.read_bytes() == tiny_gguf_model.read_bytes()


def test_a_damaged_part_is_not_received_and_the_join_names_what_is_missing(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    parts = split(tiny_gguf_model, tmp_path / "parts", part_mb=0.05)["parts"]
    damaged = tmp_path / "parts" / parts[1]["name"]
    damaged.write_bytes(b"x" + damaged.read_bytes()[1:])
    assert parts[1]["name"] not in receive(tmp_path / "parts", tmp_path / "store")
    with pytest.raises(ValueError, match=parts[1]["name"]):
        join(tmp_path / "store", tmp_path / "model.gguf")
    assert not (tmp_path / "model.gguf").exists()


def test_an_adapter_comes_back_in_few_parts_under_the_size_a_file_may_have(tmp_path: Path) -> None:
    adapter = tmp_path / "run" / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_bytes(os.urandom(300_000))
    (adapter / "adapter_config.json").write_text('{"r": 16}')
    (tmp_path / "run" / "value_head.json").write_text('{"bias": 0.0}')
    packed = tmp_path / "out" / "back"
    manifest = pack(tmp_path / "run", packed, part_mb=0.1)
    files = sorted(packed.iterdir())
    assert len(files) == len(manifest["parts"]) + 1 <= 8  # the parts and the manifest
    assert all(f.stat().st_size <= 0.1 * 1024 * 1024 for f in files if f.name != MANIFEST)
    rebuilt = unpack(packed, tmp_path / "here")
    assert rebuilt == tmp_path / "here" / "run"
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert (rebuilt / path.relative_to(tmp_path / "run")).read_bytes() == path.read_bytes()
