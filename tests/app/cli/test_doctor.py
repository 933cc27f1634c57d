"""`python -m app doctor`: passes with the installed engine, and reports an engine that
dies by a signal in one line per check, never hanging and never dying itself.

The dying engine is a real native crash: a libllama.so whose load runs an undefined
instruction (`ud2`, SIGILL, as AMX code does on a machine that cannot run it), put in
front of the real one with LLAMA_CPP_LIB_PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.needs import missing, need_module

REPO = Path(__file__).resolve().parents[3]
TIMEOUT_S = 120
TRAP_SOURCE = """
__attribute__((constructor)) static void run_an_illegal_instruction(void) {
    __builtin_trap();
}
"""


def doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", "doctor", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


@pytest.fixture(scope="module")
def trapping_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        missing("no C compiler: `make setup` needs gcc to build llama.cpp too")
    folder = tmp_path_factory.mktemp("trap-lib")
    source = folder / "trap.c"
    source.write_text(TRAP_SOURCE, encoding="utf-8")
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(folder / "libllama.so"), str(source)],
        check=True,
    )
    return folder


def test_the_doctor_passes_with_the_installed_engine(tiny_gguf_model: Path) -> None:
    need_module("llama_cpp")
    result = doctor("--model", str(tiny_gguf_model))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    engine = next(line for line in lines if " engine: " in line)
    assert engine.startswith("ok") and "AVX2" in engine and "AMX" not in engine
    assert any(line.startswith("ok") and " threads: " in line for line in lines)
    check = next(line for line in lines if " self-check: " in line)
    assert check.startswith("ok") and tiny_gguf_model.name in check
    assert any(" default judge: " in line for line in lines)
    jail = next(line for line in lines if " code jail: " in line)
    assert jail.startswith("ok") and "bubblewrap" in jail


def test_the_doctor_says_what_to_do_where_no_jail_works(tmp_path: Path, monkeypatch) -> None:
    from app.code_run import jail
    from app.doctor import jail_check

    monkeypatch.setattr(jail.shutil, "which", lambda name: None)
    jail.jail_status.cache_clear()
    missing_bwrap = jail_check()
    # a system that forbids user namespaces: bwrap's own words, from a bwrap that says them
    refusing = tmp_path / "bwrap"
    refusing.write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    refusing.chmod(0o755)
    monkeypatch.setattr(jail.shutil, "which", lambda name: str(refusing))
    jail.jail_status.cache_clear()
    try:
        forbidden = jail_check()
    finally:
        jail.jail_status.cache_clear()
    assert missing_bwrap.outcome == "note" and "install bubblewrap" in missing_bwrap.text
    assert "no answer's code runs" in missing_bwrap.text
    assert forbidden.outcome == "note" and "uid map" in forbidden.text
    assert "unprivileged user namespaces" in forbidden.text


def test_an_engine_killed_by_a_signal_is_reported_in_one_line(
    trapping_library: Path, tiny_gguf_model: Path
) -> None:
    result = doctor(
        "--model", str(tiny_gguf_model), env={"LLAMA_CPP_LIB_PATH": str(trapping_library)}
    )
    assert result.returncode == 1, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert [line.split(":")[0] for line in failed] == ["FAILED engine", "FAILED self-check"]
    for line in failed:
        assert "SIGILL (illegal instruction)" in line and "make clean-venv setup" in line
    assert "a check failed" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_a_faster_build_that_crashes_is_turned_off_and_the_portable_one_checked(
    trapping_library: Path,
    tiny_gguf_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The AVX-512 variant as a machine whose CPU reports AVX-512 but faults on it would
    run it: the self-check crashes, the variant is turned off, the portable build passes."""
    need_module("llama_cpp")
    from app.doctor import run_checks
    from models import engine_library

    monkeypatch.setenv(engine_library.VARIANTS_ENV, str(tmp_path / "variants"))
    variant = engine_library.variant("avx512")
    assert variant is not None
    variant.folder.mkdir(parents=True)
    monkeypatch.setenv(engine_library.LIB_ENV, str(trapping_library))
    chosen = engine_library.Choice("avx512", trapping_library, "this CPU reports AVX-512")
    monkeypatch.setitem(engine_library.CHOSEN, "process", chosen)

    checks = list(run_checks(str(tiny_gguf_model)))
    assert [c.outcome for c in checks if c.outcome == "failed"] == []
    crashed = [c for c in checks if c.crashed]
    assert [c.name for c in crashed] == ["engine", "self-check"]
    assert all(c.outcome == "note" and "avx512 build: " in c.text for c in crashed)
    assert "SIGILL" in (variant.turned_off or "")
    after = checks[checks.index(crashed[-1]) + 1 :]
    assert after[0].name == "build" and "turned off" in after[0].text
    engine = next(c for c in after if c.name == "engine")
    assert engine.outcome == "ok" and "portable build" in engine.text
    assert next(c for c in after if c.name == "self-check").outcome == "ok"
