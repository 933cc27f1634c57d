"""A missing, damaged or too large model file is refused with a message that says what to do.

Everything here is a real file: copies and cuts of the tiny GGUF the tests build,
random bytes, and sparse files (which take no disk space) larger than this
machine's memory. The files fail before any weights are loaded, so this runs fast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models import loader, model_file
from models.backends.base import BackendOptions
from models.foundation.errors import BackendUnavailable, ModelFileError
from models.registry import ModelEntry, Registry

REPO_ROOT = Path(__file__).resolve().parents[2]
OPTIONS = BackendOptions(n_ctx=512, n_threads=1)
GIB = 1024**3


def _open(path: Path) -> None:
    judge = loader.open_judge(str(path), OPTIONS)
    judge.close()  # only reached when the file loaded


def _cut(source: Path, target: Path, size: int) -> Path:
    target.write_bytes(source.read_bytes()[:size])
    return target


def test_a_missing_file_says_to_check_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    with pytest.raises(ModelFileError) as error:
        _open(missing)
    assert error.value.kind == "missing"
    assert str(error.value) == (
        f"{missing}: file not found; check the path (`python -m app models` lists the "
        "registry's models; `make models` builds them)"
    )


def test_random_bytes_are_refused_before_llama_cpp(tmp_path: Path) -> None:
    noise = tmp_path / "noise.gguf"
    noise.write_bytes(b"\x00junk" + os.urandom(4000))
    with pytest.raises(ModelFileError) as error:
        _open(noise)
    assert error.value.kind == "corrupt"
    assert str(error.value) == (
        f"{noise}: not a complete GGUF model: it does not start with the GGUF magic bytes "
        "(found b'\\x00jun'); download it again, or, for a registry model, delete the file "
        "and run `make models` to build it again"
    )


def test_a_file_shorter_than_its_header_says_is_truncated(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    stub = _cut(tiny_gguf_model, tmp_path / "stub.gguf", 200)
    with pytest.raises(ModelFileError, match="more than its 200 bytes can hold") as error:
        _open(stub)
    assert error.value.kind == "corrupt" and "truncated or damaged" in str(error.value)
    tiny = _cut(tiny_gguf_model, tmp_path / "tiny.gguf", 10)
    with pytest.raises(ModelFileError, match="only 10 bytes, shorter than a GGUF header"):
        _open(tiny)


def test_llama_cpps_own_refusal_of_a_truncated_file_is_made_clear(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    # The first 4 KB: a sound header, the weights missing. Only llama.cpp can tell.
    cut = _cut(tiny_gguf_model, tmp_path / "cut.gguf", 4096)
    with pytest.raises(ModelFileError) as error:
        _open(cut)
    assert error.value.kind == "corrupt"
    assert str(error.value) == (
        f"{cut}: not a complete GGUF model: llama.cpp cannot read it (Failed to load model "
        f"from file: {cut}): it is probably truncated or damaged, or made for a newer "
        "llama.cpp; download it again, or, for a registry model, delete the file and run "
        "`make models` to build it again"
    )
    assert isinstance(error.value.__cause__, ValueError)


@pytest.mark.parametrize(
    ("version", "tensors", "problem"),
    [
        (1, 3, "GGUF version 1, which llama.cpp cannot read (it reads versions 2 and 3)"),
        (3, 0, "it holds no tensors"),
    ],
)
def test_a_header_llama_cpp_cannot_use_is_refused(
    tmp_path: Path, version: int, tensors: int, problem: str
) -> None:
    path = tmp_path / "odd.gguf"
    path.write_bytes(model_file.HEADER.pack(b"GGUF", version, tensors, 1) + bytes(4096))
    with pytest.raises(ModelFileError, match="not a complete GGUF model") as error:
        model_file.check_gguf_header(path)
    assert problem in str(error.value)


def _sparse_copy(source: Path, target: Path, size: int) -> Path:
    """The real model, then zeros up to `size` bytes (sparse: no disk space taken)."""
    shutil.copyfile(source, target)
    with target.open("r+b") as handle:
        handle.truncate(size)
    return target


def _larger_than_memory() -> int:
    available = model_file.available_memory_bytes()
    if available is None:
        pytest.skip("no /proc/meminfo here: the memory check is Linux only")
    return 2 * available + GIB


def test_a_file_larger_than_the_memory_is_refused(
    tiny_gguf_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(model_file.SKIP_MEMORY_CHECK_ENV, raising=False)
    huge = _sparse_copy(tiny_gguf_model, tmp_path / "huge.gguf", _larger_than_memory())
    try:
        with pytest.raises(ModelFileError) as error:
            _open(huge)
    finally:
        huge.unlink()  # no file of tens of GB left behind, even a sparse one
    assert error.value.kind == "too_large"
    message = str(error.value)
    assert message.startswith(f"{huge}: the model file is ")
    assert "GiB of memory is available; pick a smaller model or quantization" in message
    assert message.endswith("or set POCKETJUDGE_SKIP_MEMORY_CHECK=1 to load it anyway")


def test_the_memory_check_can_be_skipped(
    tiny_gguf_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine with 100 kB available, as /proc/meminfo would say it. (Not a sparse file
    # larger than the real memory: llama.cpp would read all of it into the page cache.)
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemAvailable:        100 kB\n")
    monkeypatch.setattr(model_file, "MEMINFO", meminfo)
    monkeypatch.delenv(model_file.SKIP_MEMORY_CHECK_ENV, raising=False)
    with pytest.raises(ModelFileError, match=r"only 0\.0 GiB of memory is available"):
        _open(tiny_gguf_model)
    monkeypatch.setenv(model_file.SKIP_MEMORY_CHECK_ENV, "1")
    judge = loader.open_judge(str(tiny_gguf_model), OPTIONS)
    try:
        assert judge.backend.count_tokens(()) is not None
    finally:
        judge.close()


def test_available_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16000000 kB\nMemAvailable:    2000000 kB\n")
    assert model_file.available_memory_bytes(meminfo) == 2_000_000 * 1024
    meminfo.write_text("MemTotal:       16000000 kB\n")  # kernels before 3.14
    assert model_file.available_memory_bytes(meminfo) is None
    assert model_file.available_memory_bytes(tmp_path / "absent") is None


def test_a_damaged_registry_model_says_how_to_build_it_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    damaged = tmp_path / "judge.gguf"
    damaged.write_bytes(os.urandom(2048))
    entry = ModelEntry(name="judge", backend="llama-cpp", file="judge.gguf", build="pypi-gguf:x")
    monkeypatch.setattr(loader, "load_registry", lambda: Registry(default="judge", models=(entry,)))
    monkeypatch.setattr(ModelEntry, "path", lambda self, store=None: damaged)
    with pytest.raises(ModelFileError) as error:
        loader.open_judge("judge", OPTIONS)
    assert str(error.value).endswith(
        "; delete it and run `make models` to build model 'judge' again"
    )
    assert isinstance(error.value, BackendUnavailable)  # callers that catch that still do


def test_the_cli_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    row = {"id": "1", "question": "What is 2+2?", "answers": ["4", "5"]}
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    damaged = tmp_path / "corrupt.gguf"
    damaged.write_bytes(b"not a model at all")
    result = subprocess.run(
        [sys.executable, "-m", "app", "judge", str(source), "--out", str(tmp_path / "o.jsonl"),
         "--model", str(damaged)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error: {damaged}: not a complete GGUF model: it does not start with the GGUF magic "
        "bytes (found b'not '); download it again, or, for a registry model, delete the file "
        "and run `make models` to build it again"
    ]
    assert not (tmp_path / "o.jsonl").exists()


def test_check_whole_finds_the_end_of_the_tensor_data(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    from gguf import GGUFReader

    from models.gguf_table import tensor_data_end

    reader = GGUFReader(tiny_gguf_model)
    expected = max(int(t.data_offset) + int(t.n_bytes) for t in reader.tensors)
    assert tensor_data_end(tiny_gguf_model) == expected == tiny_gguf_model.stat().st_size
    model_file.check_whole(tiny_gguf_model)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf_model.read_bytes()[:-1000])
    with pytest.raises(ModelFileError, match="truncated") as error:
        model_file.check_whole(cut)
    assert error.value.kind == "corrupt"
    inside = tmp_path / "inside.gguf"
    inside.write_bytes(tiny_gguf_model.read_bytes()[:4000])
    with pytest.raises(ModelFileError, match=r"tensor table|truncated"):
        model_file.check_whole(inside)
