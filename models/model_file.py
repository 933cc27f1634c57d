"""Checks on a GGUF model file before llama.cpp loads it.

llama.cpp given a damaged file fails with a bare "Failed to load model from
file", and given one larger than the free memory it may push the machine into
swap for minutes or be killed. These checks read 24 bytes and /proc/meminfo, so
a bad file is refused at once with a message that names it and says what to do.
Every failure is a ModelFileError (models/foundation/errors.py).
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from models.foundation.errors import ModelFileError

GGUF_MAGIC = b"GGUF"
# magic, version (uint32), tensor count (uint64), metadata entry count (uint64)
HEADER = struct.Struct("<4sIQQ")
READABLE_VERSIONS = (2, 3)  # what llama.cpp reads; version 1 files are from 2023's converters
# Smallest possible entries: a tensor's info is a name length (8 bytes), dimension count
# (4), one dimension (8), type (4) and offset (8); a metadata entry is a key length (8),
# a value type (4) and a value of at least one byte.
MIN_TENSOR_INFO_BYTES = 32
MIN_METADATA_BYTES = 13

SKIP_MEMORY_CHECK_ENV = "POCKETJUDGE_SKIP_MEMORY_CHECK"
MEMINFO = Path("/proc/meminfo")
GIB = 1024**3

MISSING_REMEDY = (
    "check the path (`python -m app models` lists the registry's models; `make models` builds them)"
)
CORRUPT_REMEDY = (
    "download it again, or, for a registry model, delete the file and run "
    "`make models` to build it again"
)
TOO_LARGE_REMEDY = (
    "pick a smaller model or quantization (`python -m app models` lists the registry's), "
    f"close programs to free memory, or set {SKIP_MEMORY_CHECK_ENV}=1 to load it anyway"
)


def check_exists(path: Path) -> None:
    if not path.is_file():
        raise ModelFileError(path, "missing", "model file not found", MISSING_REMEDY)


def check_gguf_header(path: Path) -> None:
    """Refuse a file that cannot be a GGUF model: wrong magic, version or counts."""
    check_exists(path)
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(HEADER.size)
    if head[:4] != GGUF_MAGIC:
        raise _corrupt(path, f"it does not start with the GGUF magic bytes (found {head[:4]!r})")
    if len(head) < HEADER.size:
        raise _corrupt(path, f"only {size} bytes, shorter than a GGUF header")
    _, version, tensors, entries = HEADER.unpack(head)
    if version not in READABLE_VERSIONS:
        raise _corrupt(
            path,
            f"GGUF version {version}, which llama.cpp cannot read "
            f"(it reads versions {' and '.join(map(str, READABLE_VERSIONS))})",
        )
    if tensors == 0:
        raise _corrupt(path, "it holds no tensors (a vocabulary-only file?)")
    least = HEADER.size + tensors * MIN_TENSOR_INFO_BYTES + entries * MIN_METADATA_BYTES
    if least > size:
        raise _corrupt(
            path,
            f"its header lists {tensors} tensors and {entries} metadata entries, "
            f"more than its {size} bytes can hold (truncated or damaged)",
        )


def load_failure(path: Path, error: BaseException) -> ModelFileError:
    """llama.cpp's own refusal of a file that passed the header check, made clear."""
    return _corrupt(
        path,
        f"llama.cpp cannot read it ({error}): it is probably truncated or damaged, "
        "or made for a newer llama.cpp",
    )


def check_fits_in_memory(path: Path) -> None:
    """Refuse a file larger than the memory available now (Linux only; elsewhere no check).

    The file size stands for the weights, which llama.cpp maps into memory whole
    when nothing is offloaded to a GPU. Setting POCKETJUDGE_SKIP_MEMORY_CHECK=1
    skips the check (a machine with a large swap, say).
    """
    if os.environ.get(SKIP_MEMORY_CHECK_ENV, "").strip() not in ("", "0"):
        return
    available = available_memory_bytes()
    if available is None:
        return
    size = path.stat().st_size
    if size > available:
        raise ModelFileError(
            path,
            "too_large",
            f"the model file is {size / GIB:.1f} GiB but only {available / GIB:.1f} GiB "
            "of memory is available",
            TOO_LARGE_REMEDY,
        )


def available_memory_bytes(meminfo: Path | None = None) -> int | None:
    """MemAvailable from /proc/meminfo in bytes; None where there is none (not Linux)."""
    try:
        lines = (meminfo or MEMINFO).read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, value = line.partition(":")
        if name == "MemAvailable":
            number, _, unit = value.strip().partition(" ")
            return int(number) * (1024 if unit.strip().lower() == "kb" else 1)
    return None


def _corrupt(path: Path, problem: str) -> ModelFileError:
    return ModelFileError(path, "corrupt", f"not a complete GGUF model: {problem}", CORRUPT_REMEDY)


def check_whole(path: Path) -> None:
    """Refuse a GGUF file whose tensor data runs past its end (a cut-off download or copy).

    Walks the metadata and the tensor table (models.gguf_table), never the weights: a
    fraction of a second for the 1.5B."""
    from models.gguf_table import tensor_data_end

    check_gguf_header(path)
    try:
        end = tensor_data_end(path)
    except (ValueError, KeyError, struct.error, OSError) as error:
        raise _corrupt(path, f"its tensor table cannot be read ({error})") from None
    size = path.stat().st_size
    if end > size:
        raise _corrupt(path, f"its tensors need {end} bytes but the file has {size} (truncated)")
