"""Where a GGUF file's tensor data ends, read from its metadata and tensor table alone.

The gguf package's reader builds an array of every metadata value (a vocabulary of 150k
tokens among them) and takes seconds; this walk skips the values and takes a fraction
of one. Layout (GGUF v2/v3, little-endian): header, metadata entries (key, type, value),
tensor infos (name, dimensions, type, offset), padding to the alignment, the data.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY, _UINT32 = 8, 9, 4
DEFAULT_ALIGNMENT = 32


def tensor_data_end(path: Path) -> int:
    """The byte offset just past the last tensor's data (the file should be that long)."""
    with path.open("rb", buffering=1 << 20) as handle:
        _, _, tensors, entries = struct.unpack("<4sIQQ", _read(handle, 24))
        alignment = DEFAULT_ALIGNMENT
        for _ in range(entries):
            key = _string(handle)
            kind = _u32(handle)
            if key == "general.alignment" and kind == _UINT32:
                alignment = _u32(handle)
            else:
                _skip_value(handle, kind)
        end = 0
        for _ in range(tensors):
            _string(handle)
            count = _u32(handle)
            dims = struct.unpack(f"<{count}Q", _read(handle, 8 * count))
            kind = _u32(handle)
            offset = struct.unpack("<Q", _read(handle, 8))[0]
            end = max(end, offset + _tensor_bytes(dims, kind))
        table_end = handle.tell()
    data_start = -(-table_end // alignment) * alignment
    return data_start + end


def _tensor_bytes(dims: tuple[int, ...], kind: int) -> int:
    block, size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
    count = 1
    for dim in dims:
        count *= dim
    return count // block * size


def _read(handle: BinaryIO, count: int) -> bytes:
    data = handle.read(count)
    if len(data) != count:
        raise ValueError("the file ends inside its metadata or tensor table")
    return data


def _u32(handle: BinaryIO) -> int:
    return struct.unpack("<I", _read(handle, 4))[0]


def _string(handle: BinaryIO) -> str:
    length = struct.unpack("<Q", _read(handle, 8))[0]
    return _read(handle, length).decode("utf-8", "replace")


def _skip_value(handle: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        handle.seek(_SCALARS[kind], 1)
    elif kind == _STRING:
        handle.seek(struct.unpack("<Q", _read(handle, 8))[0], 1)
    elif kind == _ARRAY:
        element, count = struct.unpack("<IQ", _read(handle, 12))
        if element in _SCALARS:
            handle.seek(_SCALARS[element] * count, 1)
        else:
            for _ in range(count):
                _skip_value(handle, element)
    else:
        raise ValueError(f"unknown metadata value type {kind}")
