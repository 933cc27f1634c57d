"""A batch's results written so that a killed run loses at most the row in flight.

    output = ResumableOutput(out, run_key(input_path, settings))
    done = output.load()          # rows an earlier run of the same command finished
    for judgment in ...:          # judge the rows after them
        output.append(judgment)   # one line, flushed and fsynced
    output.finish()               # the partial file becomes `out`, atomically

The partial file is `<out>.<key>.partial`, where the key hashes the input
file's bytes and the settings that change results (model, protocol, criteria,
sampling...). The same command run again finds it and goes on after its last
whole row; a different input or setting gets another key, so rows judged one
way are never mixed with rows judged another. A kill in the middle of a write
leaves a line without its newline: `load` cuts it off, so that row is judged
again and never appears twice. `out` itself only ever holds a finished run:
`finish` renames the complete partial file onto it (`os.replace`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from app.io.writer import jsonl_line
from app.records import Judgment

KEY_CHARS = 16
_CHUNK = 1 << 20


def run_key(input_path: Path, settings: Mapping[str, Any]) -> str:
    """A hash of the input file's bytes and of `settings` (JSON-serialisable)."""
    return settings_key(_hashed(input_path), settings)


def settings_key(content: hashlib._Hash, settings: Mapping[str, Any]) -> str:
    """The run key of an input whose bytes `content` has hashed (left unchanged) and of
    `settings`: the CLI's file and the app's upload get the same key for the same bytes."""
    digest = content.copy()
    digest.update(b"\0settings\0")
    digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:KEY_CHARS]


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes (a rubric file, say, whose content is a setting)."""
    return _hashed(path).hexdigest()


def _hashed(path: Path) -> hashlib._Hash:
    """A sha256 fed with the file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest


class ResumableOutput:
    """Judgments appended to `<out>.<key>.partial`; see the module docstring."""

    def __init__(self, out: Path, key: str) -> None:
        self.out = out
        self.key = key
        self.partial = out.with_name(f"{out.name}.{key}.partial")
        self._stream: Any = None

    def others(self) -> list[Path]:
        """Partial files of earlier runs into `out` with another input or other settings."""
        pattern = f"{self.out.name}.*.partial"
        return sorted(p for p in self.out.parent.glob(pattern) if p != self.partial)

    def discard(self) -> None:
        """Forget an earlier run's rows (`--restart`)."""
        self.partial.unlink(missing_ok=True)

    def load(self) -> list[Judgment]:
        """The whole rows an earlier run wrote, in order; the file is cut after the last one.

        A line that is not a whole judgment (the run was killed while writing it,
        or the disk filled up) and everything after it is removed from the file.
        """
        if not self.partial.exists():
            return []
        done: list[Judgment] = []
        good_bytes = 0
        with open(self.partial, "rb") as stream:
            for line in stream:
                judgment = _whole_judgment(line)
                if judgment is None:
                    break
                done.append(judgment)
                good_bytes += len(line)
        if good_bytes != self.partial.stat().st_size:
            with open(self.partial, "r+b") as stream:
                stream.truncate(good_bytes)
        return done

    def append(self, judgment: Judgment) -> None:
        """Write one row and make it durable before the next row starts.

        If the write fails (a full disk), the half-written line is cut off again
        so the file still holds only whole rows, and the error goes on up.
        """
        if self._stream is None:
            self.partial.parent.mkdir(parents=True, exist_ok=True)
            self._stream = open(self.partial, "ab")  # noqa: SIM115 (closed in close())
        start = self._stream.tell()
        try:
            self._stream.write(jsonl_line(judgment).encode("utf-8"))
            self._stream.flush()
            os.fsync(self._stream.fileno())
        except OSError:
            self._cut_back(start)
            raise

    def _cut_back(self, size: int) -> None:
        stream, self._stream = self._stream, None
        with contextlib.suppress(OSError):  # the bytes that failed to write go with it
            stream.close()
        with open(self.partial, "r+b") as fixed:
            fixed.truncate(size)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def finish(self) -> Path:
        """Move the finished rows onto `out` in one step (an empty run writes an empty file)."""
        self.close()
        if not self.partial.exists():
            self.partial.parent.mkdir(parents=True, exist_ok=True)
            self.partial.touch()
        os.replace(self.partial, self.out)
        return self.out


def _whole_judgment(line: bytes) -> Judgment | None:
    if not line.endswith(b"\n"):
        return None
    try:
        return Judgment.model_validate(json.loads(line))
    except ValueError:
        return None
