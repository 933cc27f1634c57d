"""Answers' code that tries to get out of the jail (app/code_run/jail.py), on the real jail.

Each attempt is a function `attempt(x)` an answer could hold. In the jail it must do no
harm, and the reading of the pair says why the answer has no count, while the other
answer's stands. Each test's own control runs the same code without the jail (a plain
Python process of this machine) and shows the harm it would do, so that no test passes
because the attempt was broken.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.code_run import runner
from app.code_run.answers import CodeFunction
from app.code_run.behaviour import BehaviourReading, behaviour_reading
from app.code_run.jail import jailed_path
from app.code_run.runner import ProgramRun, run_program
from tests.support.needs import REPO_ROOT, need_jail

RIGHT = "def attempt(x):\n    return 2 * x"
QUESTION = "Write a Python function `attempt` that returns twice its argument."


@pytest.fixture(autouse=True)
def _jail() -> None:
    need_jail()


def jailed(source: str) -> ProgramRun:
    """`attempt(0)` of `source`, in the jail."""
    return run_program(CodeFunction(source, "attempt", 1), [[0]], keep=1, stop_at_timeout=True)


def unjailed(source: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    """`attempt(0)` of `source` in a plain Python process, its result printed: the control."""
    program = f"{source}\nprint(repr(attempt(0)))"
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, timeout=timeout, check=False
    )


def as_answer(source: str) -> BehaviourReading:
    """The pair (this attempt, a right function) read beside the right reference: the
    attempt gets no count and says why; the right answer's count stands."""
    found = behaviour_reading([source, RIGHT], RIGHT, QUESTION)
    assert isinstance(found, BehaviourReading), found
    assert found.shares[1] == 1.0 and found.shares[0] < 1.0, found
    assert found.notes[0], "the page would not say why the attempt has no count"
    return found


def touching(marker: Path, how: str) -> str:
    """An attempt that makes the file `marker` with a shell started `how`."""
    shell = ["/bin/sh", "-c", f"touch {marker}"]
    starts = {
        "fork_exec": f"""
            import _posixsubprocess, os
            def attempt(x):
                read, write = os.pipe()
                _posixsubprocess.fork_exec(
                    {shell!r}, [b"/bin/sh"], True, (write,), None, None, -1, -1, -1, -1, -1, -1,
                    read, write, True, False, 0, None, None, None, -1, None, False)
                os.close(write)
                os.read(read, 100)
                os.waitpid(-1, 0)
                return 2 * x
            """,
        "posix_spawn": f"""
            import os
            def attempt(x):
                os.waitpid(os.posix_spawn("/bin/sh", {shell!r}, {{}}), 0)
                return 2 * x
            """,
        "fork": f"""
            import os
            def attempt(x):
                child = os.fork()
                if child == 0:
                    os.execv("/bin/sh", {shell!r})
                os.waitpid(child, 0)
                return 2 * x
            """,
        "subprocess": f"""
            import subprocess
            def attempt(x):
                subprocess.run({shell!r}, check=True)
                return 2 * x
            """,
        "ctypes": f"""
            import ctypes
            def attempt(x):
                if ctypes.CDLL(None).system({shell[2].encode()!r}) != 0:
                    raise OSError("no shell")
                return 2 * x
            """,
        "open": f"""
            def attempt(x):
                open({str(marker)!r}, "w").write("out")
                return 2 * x
            """,
    }
    return textwrap.dedent(starts[how])


ESCAPES = ["fork_exec", "posix_spawn", "fork", "subprocess", "ctypes", "open"]


@pytest.mark.parametrize("how", ESCAPES)
def test_starting_a_process_or_writing_outside_the_tmpfs_does_nothing_here(
    how: str, tmp_path: Path
):
    marker = tmp_path / "escaped"
    attempt = touching(marker, how)
    control = unjailed(attempt)
    assert control.returncode == 0 and marker.exists(), control.stderr  # harm without the jail
    marker.unlink()
    run = jailed(attempt)
    assert run.started and run.loaded and run.outcomes[0][0] is False  # it raised
    assert not marker.exists()
    found = as_answer(attempt)
    assert not marker.exists() and "raised" in found.notes[0], found.notes


SECRET = "pocketjudge-test-secret"


@pytest.fixture
def home_secret() -> Iterator[Path]:
    """A file in the user's home folder (removed after)."""
    folder = Path.home() / f".pocketjudge-test-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    path = folder / "secret.txt"
    path.write_text(SECRET)
    yield path
    path.unlink()
    folder.rmdir()


def reading(path: Path) -> str:
    return f"def attempt(x):\n    return open({str(path)!r}).read()"


def test_reading_the_machines_files_finds_nothing(home_secret: Path):
    project = REPO_ROOT / "README.md"
    for path, expected in (
        (Path("/etc/passwd"), "root:"),
        (home_secret, SECRET),
        (project, "PocketJudge"),
    ):
        control = unjailed(reading(path))
        assert expected in control.stdout.decode()  # harm without the jail: read
        run = jailed(reading(path))
        assert run.outcomes == ((False, "FileNotFoundError"),), (path, run)
        found = f"{expected!r} in open({str(path)!r}).read()"
        leaking = f"def attempt(x):\n    return 2 * x if {found} else 0"
        as_answer(leaking)
    listing = "import os\ndef attempt(x):\n    return sorted(os.listdir(os.path.expanduser('~')))"
    assert jailed(listing).outcomes == ((True, []),)  # a home of its own, empty
    # the project's folder holds at most the folders on the way to its virtual environment
    project_listing = f"import os\ndef attempt(x):\n    return os.listdir({str(REPO_ROOT)!r})"
    ran, shown = jailed(project_listing).outcomes[0]
    assert (not ran and shown == "FileNotFoundError") or set(shown) <= {".venv"}, shown


def test_writing_into_the_python_installation_is_refused():
    name = f"pocketjudge-jail-{os.getpid()}"
    seen = Path(jailed_path(sys.prefix)) / name  # where the jail sees it (moved from /tmp)
    run = jailed(f"def attempt(x):\n    open({str(seen)!r}, 'w').write('x')\n    return 1")
    assert run.outcomes == ((False, "OSError"),)  # read-only
    assert not (Path(sys.prefix) / name).exists()


def test_a_socket_to_this_machine_reaches_nothing():
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5.0)
    port = listener.getsockname()[1]
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                peer, _ = listener.accept()
            except OSError:
                return
            with peer:
                received.append(peer.recv(100))

    threading.Thread(target=serve, daemon=True).start()
    attempt = (
        "import socket\ndef attempt(x):\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).sendall(b'leak')\n"
        "    return 2 * x"
    )
    try:
        assert unjailed(attempt).returncode == 0
        deadline = time.monotonic() + 5
        while not received and time.monotonic() < deadline:
            time.sleep(0.05)
        assert received == [b"leak"]  # harm without the jail: it reached the listener
        received.clear()
        assert jailed(attempt).outcomes == ((False, "PermissionError"),)
        as_answer(attempt)
        time.sleep(0.3)
        assert received == []
    finally:
        listener.close()


def test_a_fork_bomb_starts_nothing_and_ends():
    marker = f"pocketjudge-bomb-{os.getpid()}"
    bounded = textwrap.dedent(
        f"""
        import os
        def attempt(x):
            for _ in range(4):
                if os.fork() == 0:
                    quiet = os.open("/dev/null", os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(quiet, fd)
                    os.execv("/bin/sleep", ["{marker}", "60"])
            return 2 * x
        """
    )
    # the control: a bounded bomb, whose sleepers outlive the process that started them
    assert unjailed(bounded).returncode == 0
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    for pid in found:
        os.kill(int(pid), signal.SIGKILL)
    assert len(found) == 4  # harm without the jail: four processes left running
    assert jailed(bounded).outcomes == ((False, "PermissionError"),)
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout == b""
    bomb = "import os\ndef attempt(x):\n    while True:\n        os.fork()"
    started = time.monotonic()
    assert jailed(bomb).outcomes == ((False, "PermissionError"),)
    read = as_answer(bomb)
    assert time.monotonic() - started < 10 and "PermissionError" in read.notes[0]


def test_memory_exhaustion_is_stopped_at_the_cap():
    hungry = "def attempt(x):\n    block = bytearray(3 * 1024**3)\n    return 2 * x"
    assert unjailed(hungry).returncode == 0  # harm without the jail: 3 GiB taken
    assert jailed(hungry).outcomes == ((False, "MemoryError"),)
    assert as_answer(hungry).notes[0] == "raised MemoryError on every input"


def test_cpu_exhaustion_and_an_endless_loop_are_stopped(monkeypatch):
    monkeypatch.setattr(runner, "CPU_SECONDS", 2)  # the cap, lowered to spare the test time
    endless = "def attempt(x):\n    while True:\n        pass"
    # a loop that ignores the call's alarm spends the child's CPU time, then is killed
    stubborn = (
        "import signal\ndef attempt(x):\n    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    while True:\n        pass"
    )
    for attempt in (endless, stubborn):
        with pytest.raises(subprocess.TimeoutExpired):  # harm without the jail: no end
            unjailed(attempt, timeout=2)
    assert jailed(endless).outcomes == ((False, "timed out"),)
    assert "ran past 0.5 s" in as_answer(endless).notes[0]
    started = time.monotonic()
    run = jailed(stubborn)
    # on a busy machine the wall-clock limit may come before the CPU cap: stopped either way
    stopped = ("stopped by SIGXCPU (its CPU time)", f"ran past {runner.WALL_SECONDS:g} s")
    assert run.outcomes == () and any(why in run.note for why in stopped), run.note
    assert time.monotonic() - started < runner.WALL_SECONDS + 5
    assert any(why in as_answer(stubborn).notes[0] for why in stopped)


def test_a_flood_of_output_is_cut_off():
    flood = (
        "import os\ndef attempt(x):\n    for fd in (1, 2, 3, 4, 5):\n        try:\n"
        "            for _ in range(64):\n                os.write(fd, b'x' * 1024**2)\n"
        "        except OSError:\n            pass\n    return 2 * x"
    )
    control = unjailed(flood)
    assert len(control.stdout) + len(control.stderr) >= 64 * 1024**2  # 64 MiB and more
    run = jailed(flood)
    assert run.started and run.outcomes == ()  # it spoilt its own reply, no one else's
    assert "stopped after 0 inputs" in as_answer(flood).notes[0]
