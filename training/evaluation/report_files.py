"""A report's two files beside its run: the result as JSON, its rendering as Markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_report(folder: Path, result: dict[str, Any], text: str, stem: str = "report") -> None:
    """`folder`/`stem`.json (the result) and `stem`.md (`text`), then `text` on stdout."""
    (folder / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (folder / f"{stem}.md").write_text(text, encoding="utf-8")
    print(text)
