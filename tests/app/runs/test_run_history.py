"""The run history (app/runs/): the database round trip, what a crash leaves, the CLI
recording its runs (a killed one incomplete, then resumed into the same run), the
comparison figures against hand-computed ones, and `python -m app runs`."""

from __future__ import annotations

import json
import signal
import sqlite3
from pathlib import Path

import pytest

from app.cli import main
from app.io.judgments import read_judgments
from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from app.runs import store as store_module
from app.runs.compare import compare_runs
from app.runs.recorder import RunRecorder
from app.runs.store import RunStart, RunStore, RunStoreError, default_path
from tests.app.cli.test_cli_resume import ROWS, command, kill_after, rows_file, run


def pair(line: int, winner: str, feedback: str | None = None, **scores: float) -> Judgment:
    answers = ()
    if scores:
        answers = tuple(
            AnswerScores(criteria={"accuracy": scores[key]}, overall=scores[key])
            for key in ("a", "b")
        )
    return Judgment(
        id=f"r{line}", protocol=Protocol.PAIRWISE, status=Status.OK, winner=winner,
        answers=answers, feedback=feedback, line=line, scenario="code_generation",
    )  # fmt: skip


def item(line: int, models: tuple[str, str] = ("m1", "m2")) -> JudgeItem:
    return JudgeItem(id=f"r{line}", question=f"Q{line}?", answers=("x", "y"), answer_models=models)


def test_the_default_history_lives_in_the_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("POCKETJUDGE_HOME", str(tmp_path))
    assert default_path() == tmp_path / "runs.sqlite3"
    monkeypatch.delenv("POCKETJUDGE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "pocketjudge" / "runs.sqlite3"


def test_a_run_round_trips_through_the_database(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3")
    start = RunStart(run_key="k", source="cli", input_name="in.jsonl", input_hash="ab" * 32,
                     model="judge", template="pocketjudge", protocol="pairwise",
                     scenario="auto", total=3, settings={"swap": True},
                     versions={"pocketjudge": "0.1.0"})  # fmt: skip
    run_id, resumed = store.start(start)
    assert not resumed
    store.add(run_id, pair(1, "A"), item(1))
    [listed] = store.runs()
    assert (listed.status, listed.rows, listed.counts["ok"]) == ("running", 1, 1)
    judgments = [pair(1, "A"), pair(2, "B"), pair(3, "tie").model_copy(
        update={"status": Status.ERROR, "winner": None, "error": "bad"})]  # fmt: skip
    store.finish(run_id, judgments, {2: item(2)})
    run = store.get(run_id[:8])
    assert run.status == "complete" and run.finished is not None
    assert run.counts == {"ok": 2, "unparsed": 0, "error": 1}
    assert (run.settings, run.versions, run.total) == ({"swap": True}, {"pocketjudge": "0.1.0"}, 3)
    rows = store.rows(run_id)
    assert [r.judgment for r in rows] == judgments
    assert [r.item.id if r.item else None for r in rows] == ["r1", "r2", None]  # kept, added
    with sqlite3.connect(store.path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.delete(run_id)
    assert store.runs() == [] and store.rows.__self__ is store
    with pytest.raises(RunStoreError, match="no run"):
        store.get(run_id)


def test_an_ambiguous_id_prefix_names_the_candidates(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite3")
    first, _ = store.start(RunStart(run_key="a", source="cli"))
    second, _ = store.start(RunStart(run_key="b", source="cli"))
    assert second == f"{first}-2"  # same second: a counter
    with pytest.raises(RunStoreError, match="matches 2 runs"):
        store.get(first[:8])


def test_a_crash_while_finishing_leaves_the_run_unfinished_and_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore(tmp_path / "runs.sqlite3")
    run_id, _ = store.start(RunStart(run_key="k", source="cli", total=3))
    store.add(run_id, pair(1, "A"))
    real = store_module._row_insert

    def failing(run: str, judgment: Judgment, found: JudgeItem | None):
        if judgment.line == 3:
            raise sqlite3.OperationalError("disk I/O error")
        return real(run, judgment, found)

    monkeypatch.setattr(store_module, "_row_insert", failing)
    with pytest.raises(sqlite3.OperationalError):
        store.finish(run_id, [pair(1, "B"), pair(2, "B"), pair(3, "B")])
    [run] = store.runs()
    assert run.status == "running" and run.finished is None  # not complete (its process lives)
    assert run.rows == 1 and store.rows(run_id)[0].judgment.winner == "A"  # rolled back


def test_a_run_whose_process_is_gone_is_incomplete_and_the_same_key_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite3"
    store = RunStore(path)
    run_id, _ = store.start(RunStart(run_key="k", source="cli", total=2))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET pid = 999999999 WHERE id = ?", (run_id,))
    assert store.get(run_id).status == "incomplete"
    again, resumed = store.start(RunStart(run_key="k", source="cli", total=2))
    assert (again, resumed) == (run_id, True)
    assert store.get(run_id).status == "running"
    other, resumed = store.start(RunStart(run_key="other", source="cli"))
    assert other != run_id and not resumed


def test_a_history_that_cannot_be_written_warns_once_and_never_fails_the_run(
    tmp_path: Path,
) -> None:
    warnings: list[str] = []
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    recorder = RunRecorder.open(blocked / "runs.sqlite3", warnings.append)
    recorder.start(RunStart(run_key="k", source="cli"))
    recorder.add(pair(1, "A"))
    recorder.finish([pair(1, "A")])
    assert len(warnings) == 1 and "not recorded" in warnings[0]
    store = RunStore(tmp_path / "runs.sqlite3")
    recorder = RunRecorder(store, warnings.append)
    recorder.start(RunStart(run_key="k", source="cli"))
    (tmp_path / "runs.sqlite3").unlink()
    (tmp_path / "runs.sqlite3").mkdir()  # the file is gone, a folder in its place
    recorder.add(pair(1, "A"))
    recorder.add(pair(2, "A"))
    assert len(warnings) == 2 and "output file is unaffected" in warnings[1]


# -- comparison ------------------------------------------------------------------------


def stored(tmp_path: Path) -> tuple[RunStore, str, str]:
    """Two runs of four pairs: they agree on r1 and r2, r3 flips, r4 is an error in B."""
    store = RunStore(tmp_path / "runs.sqlite3")
    a, _ = store.start(RunStart(run_key="a", source="cli", input_hash="h", model="judge-a"))
    b, _ = store.start(RunStart(run_key="b", source="cli", input_hash="h", model="judge-b"))
    store.finish(a, [pair(1, "A", a=8, b=4), pair(2, "B", a=3, b=7),
                     pair(3, "A", "A explains", a=9, b=5), pair(4, "tie", a=6, b=6)],
                 {n: item(n) for n in range(1, 5)})  # fmt: skip
    error = pair(4, "A").model_copy(update={"status": Status.ERROR, "winner": None})
    store.finish(b, [pair(1, "A", a=9, b=4), pair(2, "B", a=3, b=6),
                     pair(3, "B", "B explains", a=5, b=8), error],
                 {n: item(n) for n in range(1, 5)})  # fmt: skip
    return store, a, b


def test_the_comparison_figures_match_the_hand_computed_ones(tmp_path: Path) -> None:
    store, a, b = stored(tmp_path)
    result = compare_runs(store.get(a), store.rows(a), store.get(b), store.rows(b))
    assert result.same_inputs
    assert (result.common, result.only_a, result.only_b) == (3, 1, 1)
    assert result.agreement == pytest.approx(100 * 2 / 3, abs=0.05)
    [flip] = result.flips
    assert (flip.id, flip.question, flip.decision_a, flip.decision_b) == ("r3", "Q3?", "A", "B")
    assert (flip.feedback_a, flip.feedback_b) == ("A explains", "B explains")
    # accuracy deltas, answer by answer over r1-r3: (9-8, 4-4), (3-3, 6-7), (5-9, 8-5)
    assert result.criterion_deltas == {
        "accuracy": pytest.approx((1 + 0 + 0 - 1 - 4 + 3) / 6, abs=1e-3)
    }
    assert result.overall_delta == pytest.approx(-1 / 6, abs=1e-3)
    assert list(result.group_deltas) == ["Code"]
    assert [s.name for s in result.leaderboard_a] and {s.name for s in result.leaderboard_b} == {
        "m1", "m2"}  # fmt: skip


def test_single_grades_agree_within_a_point_and_flip_beyond(tmp_path: Path) -> None:
    def single(line: int, grade: float) -> Judgment:
        scores = AnswerScores(criteria={"accuracy": grade}, overall=grade)
        return Judgment(id=f"s{line}", protocol=Protocol.SINGLE, status=Status.OK,
                        answers=(scores,), line=line)  # fmt: skip

    store = RunStore(tmp_path / "runs.sqlite3")
    a, _ = store.start(RunStart(run_key="a", source="cli"))
    b, _ = store.start(RunStart(run_key="b", source="cli"))
    store.finish(a, [single(1, 7), single(2, 7), single(3, 7)])
    store.finish(b, [single(1, 8), single(2, 5), single(3, 7)])
    result = compare_runs(store.get(a), store.rows(a), store.get(b), store.rows(b))
    assert result.agreement == pytest.approx(66.7) and not result.same_inputs
    assert [(f.id, f.decision_a, f.decision_b) for f in result.flips] == [("s2", "7", "5")]
    assert result.leaderboard_a == []  # no item names its models


# -- the CLI ----------------------------------------------------------------------------


def test_the_cli_records_its_run_and_runs_commands_read_it(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl", count=4), tmp_path / "out.jsonl"
    assert main(command(tiny_gguf_model, source, out)[3:]) == 0
    assert "recorded as run" in capsys.readouterr().err
    [run] = RunStore().runs()
    assert (run.status, run.rows, run.total, run.source) == ("complete", 4, 4, "cli")
    assert run.input_name == "in.jsonl" and run.model == tiny_gguf_model.name
    assert run.versions["pocketjudge"] and run.versions["template"]
    first = RunStore().rows(run.id)[0]
    assert first.item is not None and first.item.question == "What is 1 + 1?"
    assert main(["runs", "list"]) == 0
    listed = capsys.readouterr().out
    assert run.id in listed and "complete" in listed and "4/4" in listed
    assert main(["runs", "show", run.id[:13]]) == 0
    assert "in.jsonl" in capsys.readouterr().out
    exported = tmp_path / "again.jsonl"
    assert main(["runs", "export", run.id, "--format", "jsonl", "--out", str(exported)]) == 0
    assert read_judgments(exported) == read_judgments(out)
    assert (
        main(["runs", "export", run.id, "--format", "csv", "--out", str(tmp_path / "c.csv")]) == 0
    )
    assert (tmp_path / "c.csv").read_text().count("\n") == 5
    assert main(["runs", "list", "--model", "nobody"]) == 0
    assert "no runs" in capsys.readouterr().err
    assert main(["runs", "show", "nope"]) == 2


def test_no_history_records_nothing(tiny_gguf_model: Path, tmp_path: Path) -> None:
    source, out = rows_file(tmp_path / "in.jsonl", count=2), tmp_path / "out.jsonl"
    assert main([*command(tiny_gguf_model, source, out)[3:], "--no-history"]) == 0
    assert RunStore().runs() == []


def test_a_killed_cli_run_is_incomplete_and_the_same_command_completes_it(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out)
    killed = kill_after(args, out, rows=4)
    assert killed.returncode == -signal.SIGKILL
    [run] = RunStore().runs()
    assert run.status == "incomplete" and run.finished is None
    kept = [line for line in killed.lines if line.endswith(b"\n")]
    # a row goes to the history right after the file: the kill may fall in between
    assert len(kept) - 1 <= run.rows <= len(kept) < ROWS and run.rows >= 3
    again = run_cli(args)
    [resumed] = RunStore().runs()
    assert resumed.id == run.id and resumed.status == "complete"
    assert resumed.rows == ROWS and resumed.counts["ok"] + resumed.counts["unparsed"] == ROWS
    stored_ids = [r.judgment.id for r in RunStore().rows(run.id)]
    assert stored_ids == [f"r{n}" for n in range(1, ROWS + 1)]
    assert again.returncode == 0


def run_cli(args: list[str]):
    result = run(args)
    assert result.returncode == 0, result.stderr
    return result


def test_runs_compare_prints_the_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, a, b = stored(tmp_path)
    assert main(["runs", "--history", str(store.path), "compare", a, b]) == 0
    printed = capsys.readouterr().out
    assert "rows judged ok by both: 3 (only A: 1, only B: 1); agreement 66.7 %" in printed
    assert "r3: A -> B" in printed and "accuracy -0.17" in printed
    json.dumps(printed)  # plain text
