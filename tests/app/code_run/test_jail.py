"""The jail itself (app/code_run/jail.py): its command line binds nothing of the machine
but /usr and the Python installation, and inside it a program is `nobody`, alone in its
PID space, with a clean environment and no capabilities, and can still start a thread."""

from __future__ import annotations

import sys
from pathlib import Path

from app.code_run import jail
from app.code_run.answers import CodeFunction
from app.code_run.runner import run_program
from tests.support.needs import REPO_ROOT, need_jail


def inside(body: str) -> object:
    """What `attempt(0)` returns in the jail, where `body` is the function's body."""
    source = "def attempt(x):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    run = run_program(CodeFunction(source, "attempt", 1), [[0]], keep=1, stop_at_timeout=True)
    assert run.outcomes and run.outcomes[0][0], run
    return run.outcomes[0][1]


def test_the_command_line_binds_only_the_system_and_the_python_installation():
    if jail.shutil.which(jail.BWRAP) is None:
        need_jail()
    line = jail.command([sys.executable, "-c", "pass"], 7)
    flags = set(line)
    assert {"--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"} <= flags
    assert {"--clearenv", "--cap-drop"} <= flags and "--share-net" not in flags
    assert line[line.index("--seccomp") + 1] == "7"
    bound = [line[n + 1] for n, arg in enumerate(line) if arg in ("--bind", "--ro-bind")]
    assert "--bind" not in flags  # nothing writable of the machine
    roots = {str(root) for root in jail.python_roots()}
    for source in bound:
        assert source in roots or source in ("/usr", *jail.SYSTEM_LINKS), source
    home = str(Path.home())
    assert all(not root.startswith(home) or ".pyenv" in root or "venv" in root for root in roots)
    assert str(REPO_ROOT) not in bound  # the project only where its virtual environment is
    assert line[line.index("--tmpfs") + 1] == "/tmp"


def test_inside_a_program_is_nobody_alone_with_a_clean_environment():
    need_jail()
    assert inside("import os\nreturn os.getuid(), os.getgid()") == (65534, 65534)
    assert inside("import os\nreturn os.getpid()") < 10  # its own PID space
    processes = "import os\nreturn [p for p in os.listdir('/proc') if p.isdigit()]"
    assert len(inside(processes)) <= 2  # bubblewrap's own init and itself
    shown = inside("import os\nreturn dict(os.environ)")
    assert set(shown) <= {"HOME", "PATH", "PYTHONHASHSEED", "OPENBLAS_NUM_THREADS",
                          "OMP_NUM_THREADS", "LC_CTYPE", "PWD"}, shown  # fmt: skip
    assert shown["HOME"] == "/tmp" and "PYTHONPATH" not in shown  # none of this process's
    capabilities = inside("return open('/proc/self/status').read().split('CapEff:')[1].split()[0]")
    assert int(capabilities, 16) == 0
    assert inside("import socket\nreturn socket.gethostname()") == "jail"


def test_a_thread_and_the_tmpfs_work_inside():
    need_jail()
    threaded = (
        "import threading\nfound = []\nthread = threading.Thread(target=lambda: found.append(1))"
        "\nthread.start()\nthread.join()\nreturn found"
    )
    assert inside(threaded) == [1]
    written = "open('/tmp/note', 'w').write('kept')\nreturn open('/tmp/note').read()"
    assert inside(written) == "kept"


_UNDER_TMP = """
import sys
sys.path.insert(0, sys.argv[1])
from app.code_run.answers import CodeFunction
from app.code_run.jail import jail_status
from app.code_run.runner import run_program

status = jail_status()
assert status.works, status
home = "import os\\ndef attempt(x):\\n    return sorted(os.listdir(os.path.expanduser('~')))"
run = run_program(CodeFunction(home, "attempt", 1), [[0]], keep=1, stop_at_timeout=True)
print(repr((sys.prefix, run.outcomes)))
"""


def test_a_python_installation_under_tmp_is_seen_outside_the_jails_own_tmp():
    """A checkout kept under /tmp (its virtual environment there): the jail's own tmpfs on
    /tmp would hide the installation, so it is bound at MOVED_PYTHON instead; the jail runs,
    and its home (its /tmp) stays empty."""
    import ast
    import subprocess
    import sysconfig
    import tempfile

    need_jail()
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        venv = Path(folder) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        packages = sysconfig.get_paths()["purelib"]  # this environment's, by a .pth file
        (next(venv.glob("lib/python*/site-packages")) / "here.pth").write_text(packages + "\n")
        said = subprocess.run(
            [str(venv / "bin" / "python"), "-c", _UNDER_TMP, str(REPO_ROOT)],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    prefix, outcomes = ast.literal_eval(said.stdout.strip())
    assert Path(prefix).is_relative_to("/tmp") and outcomes == ((True, []),)
    binds = dict(jail.python_binds())
    assert all(not seen.is_relative_to(jail.JAIL_TMP) for seen in binds.values())
