"""One run recorded in the history as it goes, without ever failing the run.

The CLI and the app's batch job judge first and record second: a history that
cannot be opened or written (a read-only folder, a full disk, a locked file)
gives one warning, then the run goes on without it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from app.records import JudgeItem, Judgment
from app.runs.store import RunStart, RunStore, RunStoreError

_FAILURES = (sqlite3.Error, OSError, RunStoreError)


class RunRecorder:
    """Records one run; every method is a no-op once the history failed (or without one)."""

    def __init__(self, store: RunStore | None, warn: Callable[[str], None]) -> None:
        self.store = store
        self.warn = warn
        self.run_id: str | None = None
        self.resumed = False

    @classmethod
    def open(
        cls, path: Path | str | None, warn: Callable[[str], None], enabled: bool = True
    ) -> RunRecorder:
        """A recorder on the history at `path` (None: the default one); disabled when
        `enabled` is False or the history cannot be opened (after a warning)."""
        if not enabled:
            return cls(None, warn)
        try:
            return cls(RunStore(path), warn)
        except RunStoreError as exc:
            warn(f"warning: {exc}; this run is not recorded in the history")
            return cls(None, warn)

    @property
    def active(self) -> bool:
        return self.store is not None and self.run_id is not None

    def start(self, start: RunStart) -> None:
        if self.store is not None:
            self._guard(lambda store: self._started(store.start(start)))

    def _started(self, started: tuple[str, bool]) -> None:
        self.run_id, self.resumed = started

    def add(self, judgment: Judgment, item: JudgeItem | None = None) -> None:
        if self.active:
            self._guard(lambda store: store.add(self.run_id, judgment, item))  # type: ignore[arg-type]

    def finish(
        self, judgments: Sequence[Judgment], items: Mapping[int, JudgeItem] | None = None
    ) -> None:
        if self.active:
            self._guard(lambda store: store.finish(self.run_id, judgments, items))  # type: ignore[arg-type]

    def stop(self) -> None:
        if self.active:
            self._guard(lambda store: store.stop(self.run_id))  # type: ignore[arg-type]

    def _guard(self, action: Callable[[RunStore], object]) -> None:
        assert self.store is not None
        try:
            action(self.store)
        except _FAILURES as exc:
            self.warn(
                f"warning: the run history {self.store.path} failed ({exc}); the rest of "
                "this run is not recorded there (the output file is unaffected)"
            )
            self.store = None


def run_versions(template: str | None, model_file: Path | None = None) -> dict[str, object]:
    """What a run's results depend on besides its settings: PocketJudge's version, the
    template file's and the model file's content (hash prefixes; a model file by size and
    modification time, as hashing gigabytes per run would cost seconds)."""
    from app import __version__
    from app.formats.prompts import TEMPLATES_DIR
    from app.io.resumable import file_digest

    versions: dict[str, object] = {"pocketjudge": __version__}
    template_file = TEMPLATES_DIR / f"{template}.yaml" if template else None
    if template_file is not None and template_file.is_file():
        versions["template"] = file_digest(template_file)[:12]
    if model_file is not None and model_file.is_file():
        stat = model_file.stat()
        versions["model_file"] = {"name": model_file.name, "bytes": stat.st_size,
                                  "modified_ns": stat.st_mtime_ns}  # fmt: skip
    return versions
