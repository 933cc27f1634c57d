"""CLI batches survive a kill: the same command goes on after the last whole row.

These run the real CLI (`python -m app judge`) on the tiny llama.cpp model the
tests build, in a subprocess that is killed with SIGKILL mid-batch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cli import main
from app.io.resumable import ResumableOutput
from app.records import Judgment
from tests.support.processes import engine_workers

ROOT = Path(__file__).resolve().parents[3]
ROWS = 40


def rows_file(path: Path, count: int = ROWS) -> Path:
    rows = [
        {"id": f"r{n}", "question": f"What is {n} + {n}?", "answers": [str(2 * n), str(n)]}
        for n in range(1, count + 1)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def command(model: Path, source: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "app", "judge", str(source), "--out", str(out),
            "--model", str(model), "--threads", "1", "--quiet", "--max-tokens", "256",
            *extra]  # fmt: skip


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def whole_lines(path: Path) -> list[bytes]:
    if not path.exists():
        return []
    return [line for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]


def partials(out: Path) -> list[Path]:
    return sorted(out.parent.glob(f"{out.name}.*.partial"))


def read(path: Path) -> list[Judgment]:
    return [Judgment.model_validate(json.loads(line)) for line in path.read_text().splitlines()]


@dataclass
class Stopped:
    lines: list[bytes]  # the partial file's lines after the signal
    returncode: int
    stderr: str


def _ctrl_c_as_in_a_terminal() -> None:
    """The CLI takes Ctrl-C as a terminal gives it, even where this test run ignores SIGINT
    (a shell starts a background job with SIGINT ignored, and a child inherits that: its
    Python would then never raise KeyboardInterrupt, and the run would finish instead)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_after(
    args: list[str], out: Path, rows: int, sig: signal.Signals = signal.SIGKILL
) -> Stopped:
    """Start the CLI and send `sig` once its partial file holds `rows` whole rows."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        args, cwd=ROOT, env=env, stderr=subprocess.PIPE, preexec_fn=_ctrl_c_as_in_a_terminal
    )
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            found = partials(out)
            if found and len(whole_lines(found[0])) >= rows:
                break
            assert process.poll() is None, process.stderr.read().decode()
            time.sleep(0.01)
        process.send_signal(sig)
        process.wait(timeout=60)
        stderr = process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    (partial,) = partials(out)
    return Stopped(partial.read_bytes().splitlines(keepends=True), process.returncode, stderr)


def test_a_killed_batch_resumes_after_its_last_whole_row(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out)
    killed = kill_after(args, out, rows=4)
    assert killed.returncode == -signal.SIGKILL
    kept = killed.lines
    assert not out.exists()  # the output appears only when the run is finished
    whole = [line for line in kept if line.endswith(b"\n")]
    assert 4 <= len(whole) < ROWS

    again = run(args)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {len(whole)} of {ROWS} rows" in again.stderr
    assert f"({len(whole)} from the earlier run)" in again.stderr
    judged = read(out)
    assert [j.line for j in judged] == list(range(1, ROWS + 1))  # each row once, in order
    assert [j.id for j in judged] == [f"r{n}" for n in range(1, ROWS + 1)]
    assert out.read_bytes().splitlines(keepends=True)[: len(whole)] == whole  # not judged again
    assert partials(out) == []


@pytest.mark.parametrize("engines", [1, 2])
def test_an_engine_killed_mid_batch_is_named_exits_3_and_the_same_command_goes_on(
    tiny_gguf_model: Path, tmp_path: Path, engines: int
) -> None:
    """llama.cpp runs in engine workers (one per engine of the batch): the death of one
    (here SIGKILL, as when memory runs out) ends the run with the signal named, not the CLI
    with it, the rows before it written in order; the same command judges every other row
    once."""
    source, out = rows_file(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out, "--workers", str(engines))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(args, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not (partials(out) and len(whole_lines(partials(out)[0])) >= 3):
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        workers = engine_workers(process.pid, tiny_gguf_model.name)
        assert len(workers) == engines
        os.kill(workers[-1], signal.SIGKILL)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 3, stderr
    assert "the judge engine stopped: it was stopped by SIGKILL" in stderr
    (partial,) = partials(out)
    kept = whole_lines(partial)
    assert 3 <= len(kept) < ROWS and f"The {len(kept)} rows written are kept" in stderr
    again = run(args)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {len(kept)} of {ROWS} rows" in again.stderr
    assert [j.line for j in read(out)] == list(range(1, ROWS + 1))  # each row once, in order


def test_two_engines_give_the_rows_of_one_in_order(tiny_gguf_model: Path, tmp_path: Path) -> None:
    source = rows_file(tmp_path / "in.jsonl", count=12)
    judged = {}
    for engines in (1, 2):
        out = tmp_path / f"out{engines}.jsonl"
        done = run(command(tiny_gguf_model, source, out, "--workers", str(engines)))
        assert done.returncode == 0, done.stderr
        judged[engines] = read(out)
    assert [j.line for j in judged[2]] == list(range(1, 13))
    fields = ("id", "winner", "confidence", "verdict_probs", "raw_output")
    assert [j.model_dump(include=set(fields)) for j in judged[2]] == [
        j.model_dump(include=set(fields)) for j in judged[1]
    ]


def test_ctrl_c_exits_130_keeps_the_rows_and_the_same_command_goes_on(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl"), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out)
    stopped = kill_after(args, out, rows=3, sig=signal.SIGINT)
    assert stopped.returncode == 130
    assert "run the same command again" in stopped.stderr
    kept = stopped.lines
    assert all(line.endswith(b"\n") for line in kept) and len(kept) >= 3
    again = run(args)
    assert again.returncode == 0, again.stderr
    assert f"resuming: {len(kept)} of {ROWS} rows" in again.stderr
    assert [j.line for j in read(out)] == list(range(1, ROWS + 1))


def test_a_row_cut_off_mid_write_is_judged_again_and_never_twice(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl", count=6), tmp_path / "out.jsonl"
    assert main(command(tiny_gguf_model, source, out)[3:]) == 0
    finished = out.read_bytes().splitlines(keepends=True)
    # what a kill in the middle of writing row 4 leaves: 3 whole rows and half of the 4th
    out.unlink()
    args = command(tiny_gguf_model, source, out)[3:]
    key = _key_of(args)
    partial = ResumableOutput(out, key).partial
    partial.write_bytes(b"".join(finished[:3]) + finished[3][:40])

    assert main(args) == 0
    assert [j.line for j in read(out)] == [1, 2, 3, 4, 5, 6]
    assert out.read_bytes().splitlines(keepends=True)[:3] == finished[:3]


def _key_of(args: list[str]) -> str:
    """The partial-file key the CLI uses for these arguments."""
    from app.catalog.criteria_resolution import CriteriaChoice
    from app.cli import _parser
    from app.cli.batch import run_settings
    from app.cli.judge_command import open_first
    from app.io.resumable import run_key

    parsed = _parser().parse_args(args)
    judge = open_first(parsed, CriteriaChoice())
    try:
        return run_key(parsed.input, run_settings(parsed, judge))
    finally:
        judge.close()


def test_restart_judges_every_row_again(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl", count=3), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out)[3:]
    partial = ResumableOutput(out, _key_of(args)).partial
    partial.write_text("not a judgment\n")  # rows that cannot be read back count for nothing
    assert main([*args, "--restart"]) == 0
    assert "resuming" not in capsys.readouterr().err
    assert [j.line for j in read(out)] == [1, 2, 3]
    assert not partial.exists()


def test_other_settings_never_resume_a_partial_run(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = rows_file(tmp_path / "in.jsonl", count=2), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out)[3:]
    partial = ResumableOutput(out, _key_of(args)).partial
    partial.write_text("")
    assert main([*args, "--no-swap"]) == 0
    err = capsys.readouterr().err
    assert "resuming" not in err
    assert f"{partial} is an unfinished run with another input or other settings" in err
    assert partial.exists()  # left alone
    assert all(not j.swapped for j in read(out))


def test_a_full_disk_stops_with_exit_4_keeps_the_whole_rows_and_resumes(
    tiny_gguf_model: Path, tmp_path: Path
) -> None:
    """RLIMIT_FSIZE makes writes past a size fail as a full disk does (EFBIG)."""
    import resource

    source, out = rows_file(tmp_path / "in.jsonl", count=6), tmp_path / "out.jsonl"
    args = command(tiny_gguf_model, source, out, "--no-swap")
    assert run(args).returncode == 0
    sizes = [len(line) for line in out.read_bytes().splitlines(keepends=True)]
    out.unlink()
    limit = sizes[0] + sizes[1] + sizes[2] // 2

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    full = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        preexec_fn=small_disk,
    )  # fmt: skip
    assert full.returncode == 4, full.stderr
    assert "could not write the results" in full.stderr
    assert "The 2 rows written are kept" in full.stderr
    (partial,) = partials(out)
    assert len(partial.read_bytes().splitlines()) == 2 and partial.read_bytes().endswith(b"\n")
    assert not out.exists()

    again = run(args)
    assert again.returncode == 0, again.stderr
    assert "resuming: 2 of 6 rows" in again.stderr
    assert [j.line for j in read(out)] == [1, 2, 3, 4, 5, 6]
