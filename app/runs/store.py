"""Run history: every batch kept in a local SQLite database.

One file (`runs.sqlite3` in the user's data folder, see `default_path`) holds a
row per run (its settings, judge model, template and their versions, the input
file's name and hash, start and end, counts) and a row per judged input row
(the judgment and, where known, the input item). WAL mode lets the app read
while a CLI run writes.

A run is `running` while rows go in, one committed transaction per row, and
becomes `complete` only in the transaction that writes its last rows and counts.
A process killed mid-run leaves it `running` with a process id that is gone:
`RunStore.runs` reports that as `incomplete`, never as complete. The same
command run again (same run key: input bytes and settings, `app.io.resumable`)
goes on in the same run.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from app.records import JudgeItem, Judgment, Status
from app.reports.dashboard import status_counts
from models.foundation.errors import PocketJudgeError

DB_NAME = "runs.sqlite3"
HOME_ENV = "POCKETJUDGE_HOME"  # the data folder; the database is DB_NAME inside it
SCHEMA_VERSION = 1

RunStatus = Literal["running", "complete", "incomplete"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    run_key TEXT NOT NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    pid INTEGER,
    host TEXT,
    started TEXT NOT NULL,
    finished TEXT,
    input_name TEXT,
    input_hash TEXT,
    model TEXT,
    template TEXT,
    protocol TEXT,
    scenario TEXT,
    total INTEGER,
    counts TEXT NOT NULL DEFAULT '{}',
    settings TEXT NOT NULL DEFAULT '{}',
    versions TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS runs_by_key ON runs (run_key, status);
CREATE TABLE IF NOT EXISTS rows (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    judgment_id TEXT NOT NULL,
    status TEXT NOT NULL,
    judgment TEXT NOT NULL,
    item TEXT,
    PRIMARY KEY (run_id, position)
);
"""


class RunStoreError(PocketJudgeError):
    """The run database cannot be opened or holds no such run."""


def default_path() -> Path:
    """`$POCKETJUDGE_HOME/runs.sqlite3`, else under `$XDG_DATA_HOME/pocketjudge` (by default
    ~/.local/share/pocketjudge)."""
    home = os.environ.get(HOME_ENV)
    if home:
        return Path(home) / DB_NAME
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "pocketjudge" / DB_NAME


@dataclass(frozen=True)
class RunInfo:
    """A run as listed: what it judged, with what, when, and how it ended."""

    id: str
    run_key: str
    source: str  # "cli" or "app"
    status: RunStatus
    started: str
    finished: str | None
    input_name: str | None
    input_hash: str | None
    model: str | None
    template: str | None
    protocol: str | None
    scenario: str | None
    total: int | None
    rows: int  # judged rows stored
    counts: dict[str, int] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)

    @property
    def day(self) -> str:
        return self.started[:10]


@dataclass(frozen=True)
class StoredRow:
    position: int
    judgment: Judgment
    item: JudgeItem | None


@dataclass(frozen=True)
class RunStart:
    """What a new run records up front."""

    run_key: str
    source: str
    input_name: str | None = None
    input_hash: str | None = None
    model: str | None = None
    template: str | None = None
    protocol: str | None = None
    scenario: str | None = None
    total: int | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    versions: Mapping[str, Any] = field(default_factory=dict)


class RunStore:
    """The run database at `path` (created on first use). Each method opens its own
    connection, so one store serves threads and processes alike."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._connect()) as db, db:
                db.executescript(_SCHEMA)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (OSError, sqlite3.Error) as exc:
            raise RunStoreError(
                f"cannot open the run history {self.path}: {exc}. Set {HOME_ENV} to a "
                "writable folder"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA synchronous = NORMAL")
        return db

    # -- writing ----------------------------------------------------------------

    def start(self, start: RunStart) -> tuple[str, bool]:
        """A run id for this run and whether it goes on from an unfinished one.

        A run with the same key that did not complete (killed, stopped, interrupted) is
        taken up again: its rows stay and the new ones join them.
        """
        now = _now()
        with closing(self._connect()) as db, db:
            found = db.execute(
                "SELECT id FROM runs WHERE run_key = ? AND status != 'complete' "
                "ORDER BY started DESC LIMIT 1",
                (start.run_key,),
            ).fetchone()
            if found is not None:
                db.execute(
                    "UPDATE runs SET status = 'running', pid = ?, host = ?, finished = NULL "
                    "WHERE id = ?",
                    (os.getpid(), socket.gethostname(), found[0]),
                )
                return found[0], True
            run_id = _new_id(db, now)
            db.execute(
                "INSERT INTO runs (id, run_key, source, status, pid, host, started, input_name, "
                "input_hash, model, template, protocol, scenario, total, settings, versions) "
                "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id, start.run_key, start.source, os.getpid(), socket.gethostname(),
                    now, start.input_name, start.input_hash, start.model, start.template,
                    start.protocol, start.scenario, start.total,
                    json.dumps(start.settings, sort_keys=True, default=str),
                    json.dumps(start.versions, sort_keys=True, default=str),
                ),
            )  # fmt: skip
        return run_id, False

    def add(self, run_id: str, judgment: Judgment, item: JudgeItem | None = None) -> None:
        """Store one judged row (its own transaction; a row judged again replaces it)."""
        with closing(self._connect()) as db, db:
            db.execute(*_row_insert(run_id, judgment, item))

    def finish(
        self,
        run_id: str,
        judgments: Sequence[Judgment],
        items: Mapping[int, JudgeItem] | None = None,
    ) -> None:
        """Store every row of the finished output and mark the run complete, all in one
        transaction: a crash in between leaves it as it was (incomplete)."""
        items = items or {}
        with closing(self._connect()) as db, db:
            for judgment in judgments:
                db.execute(*_row_insert(run_id, judgment, items.get(_position(judgment))))
            db.execute(
                "UPDATE runs SET status = 'complete', finished = ?, counts = ?, pid = NULL "
                "WHERE id = ?",
                (_now(), json.dumps(status_counts(judgments)), run_id),
            )

    def stop(self, run_id: str) -> None:
        """Mark a run that ended early (stopped, interrupted, failed) as incomplete."""
        with closing(self._connect()) as db, db:
            counts = status_counts(_judgments(db, run_id))
            db.execute(
                "UPDATE runs SET status = 'incomplete', finished = ?, counts = ?, pid = NULL "
                "WHERE id = ?",
                (_now(), json.dumps(counts), run_id),
            )

    def delete(self, run_id: str) -> None:
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM runs WHERE id = ?", (self.get(run_id).id,))

    # -- reading ----------------------------------------------------------------

    def runs(self) -> list[RunInfo]:
        """Every run, newest first; a `running` run whose process is gone is incomplete."""
        with closing(self._connect()) as db:
            found = db.execute(
                f"SELECT {_RUN_COLUMNS}, (SELECT COUNT(*) FROM rows WHERE run_id = runs.id) "
                "FROM runs ORDER BY started DESC, id DESC"
            ).fetchall()
            live: dict[str, dict[str, int]] = {}
            for run_id, status, count in db.execute(
                "SELECT run_id, status, COUNT(*) FROM rows GROUP BY run_id, status"
            ):
                live.setdefault(run_id, {s.value: 0 for s in Status})[status] = count
        # the stored rows say how many are ok now, also for a run still going or cut off
        return [_run_info(row, live.get(row[0])) for row in found]

    def get(self, run_id: str) -> RunInfo:
        """The run with this id, or the only one whose id starts with it."""
        matches = [r for r in self.runs() if r.id == run_id] or [
            r for r in self.runs() if r.id.startswith(run_id)
        ]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise RunStoreError(f"no run '{run_id}' in {self.path} (python -m app runs list)")
        raise RunStoreError(
            f"'{run_id}' matches {len(matches)} runs ({', '.join(r.id for r in matches[:5])}); "
            "give more of the id"
        )

    def rows(self, run_id: str) -> list[StoredRow]:
        """A run's stored rows in input order."""
        run_id = self.get(run_id).id
        with closing(self._connect()) as db:
            found = db.execute(
                "SELECT position, judgment, item FROM rows WHERE run_id = ? ORDER BY position",
                (run_id,),
            ).fetchall()
        return [
            StoredRow(
                position,
                Judgment.model_validate_json(judgment),
                JudgeItem.model_validate_json(item) if item else None,
            )
            for position, judgment, item in found
        ]


_RUN_COLUMNS = (
    "id, run_key, source, status, pid, host, started, finished, input_name, input_hash, "
    "model, template, protocol, scenario, total, counts, settings, versions"
)


def _run_info(row: Sequence[Any], counts: dict[str, int] | None) -> RunInfo:
    names = [c.strip() for c in _RUN_COLUMNS.split(",")]
    values = dict(zip(names, row, strict=False))
    status = values["status"]
    if status == "running" and not _alive(values["pid"], values["host"]):
        status = "incomplete"
    return RunInfo(
        id=values["id"],
        run_key=values["run_key"],
        source=values["source"],
        status=status,
        started=values["started"],
        finished=values["finished"],
        input_name=values["input_name"],
        input_hash=values["input_hash"],
        model=values["model"],
        template=values["template"],
        protocol=values["protocol"],
        scenario=values["scenario"],
        total=values["total"],
        rows=row[len(names)],
        counts=counts or json.loads(values["counts"]),
        settings=json.loads(values["settings"]),
        versions=json.loads(values["versions"]),
    )


def _alive(pid: int | None, host: str | None) -> bool:
    """Is the process that started a run still there? (On another host: assume so.)"""
    if pid is None:
        return False
    if host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed child its parent has not reaped yet still answers kill(pid, 0)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stream:
            return stream.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _position(judgment: Judgment) -> int:
    return judgment.line if judgment.line is not None else 0


def _row_insert(
    run_id: str, judgment: Judgment, item: JudgeItem | None
) -> tuple[str, tuple[Any, ...]]:
    return (
        "INSERT INTO rows (run_id, position, judgment_id, status, judgment, item) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, position) DO UPDATE SET "
        "judgment_id = excluded.judgment_id, status = excluded.status, "
        "judgment = excluded.judgment, item = COALESCE(excluded.item, rows.item)",
        (
            run_id,
            _position(judgment),
            judgment.id,
            judgment.status.value,
            judgment.model_dump_json(),
            item.model_dump_json() if item is not None else None,
        ),
    )


def _judgments(db: sqlite3.Connection, run_id: str) -> list[Judgment]:
    found = db.execute("SELECT judgment FROM rows WHERE run_id = ?", (run_id,)).fetchall()
    return [Judgment.model_validate_json(text) for (text,) in found]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _new_id(db: sqlite3.Connection, now: str) -> str:
    """Readable and sortable: the start time, then a counter on a clash."""
    stem = now[:19].replace("-", "").replace(":", "").replace("T", "-")
    run_id, n = stem, 1
    while db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
        n += 1
        run_id = f"{stem}-{n}"
    return run_id
