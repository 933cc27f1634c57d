"""The jail an answer's code runs in: bubblewrap (`bwrap`, the sandbox Flatpak runs on) with
a seccomp filter. This is the only module that knows bubblewrap's flags.

Inside the jail a program sees the system's /usr (libraries), the Python installation that
runs PocketJudge (its prefix and base prefix, read-only) and nothing else of the machine:
no home folder, no project files, no /etc. Every namespace is unshared (no network; its
own PID space, so nothing it starts outlives it; no user or group of the machine: it runs
as `nobody`), it gets a private tmpfs as its only writable place, a clean environment, no
capabilities, no new user namespaces, and it is killed with its parent. The seccomp filter
refuses the system calls that start processes (fork, vfork, clone other than a thread),
open sockets, trace or read other processes, and change mounts, namespaces or the kernel;
the child (app/code_run/child.py) then caps its own memory, CPU time, file size and
processes before it loads any answer's code.

`jail_status()` tries a one-line program in the jail once per process: some systems forbid
the unprivileged user namespaces bubblewrap needs, and there no answer's code runs at all.
"""

from __future__ import annotations

import errno
import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BWRAP = "bwrap"
TMPFS_BYTES = 64 * 1024 * 1024  # the jail's only writable place
NOBODY = "65534"
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")  # merged-/usr or not
JAIL_TMP = Path("/tmp")  # the jail's own tmpfs: it hides whatever of the machine's is there
# where a Python installation kept under /tmp is seen in the jail (a checkout under /tmp):
# bound at its own path, under the jail's tmpfs, it would be hidden, or show its folders in
# the jail's empty home
MOVED_PYTHON = Path("/opt/pocketjudge-python")
# (system call, errno) refused by the seccomp filter; clone is refused below unless it
# makes a thread, and clone3 says ENOSYS, so that glibc makes threads with clone instead
REFUSED = (
    "fork", "vfork", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "socket", "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "keyctl",
    "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "init_module",
    "finit_module", "delete_module", "reboot", "swapon", "swapoff", "personality",
    "open_by_handle_at", "name_to_handle_at", "acct", "quotactl", "syslog",
)  # fmt: skip
REFUSED_CALLS = (*((name, errno.EPERM) for name in REFUSED), ("clone3", errno.ENOSYS))
CLONE_THREAD = 0x00010000
START_SECONDS = 10.0  # the jail's own check
ERR_BYTES = 2000  # what is kept of a jailed program's stderr
INSTALL_HINT = (
    "install bubblewrap (`make setup` does, or `sudo apt-get install bubblewrap`; "
    "`dnf install bubblewrap` on Fedora)"
)
SECCOMP_HINT = "install libseccomp (`sudo apt-get install libseccomp2`)"
USERNS_HINT = (
    "this system forbids the unprivileged user namespaces bubblewrap needs: allow them "
    "(`sudo sysctl kernel.unprivileged_userns_clone=1` on older Debian; on Ubuntu 24.04 and "
    "later `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`, or an AppArmor "
    "profile for bwrap), or run PocketJudge in a container or VM that allows them"
)


class JailUnavailable(Exception):
    """No jail can be built here; the message says why and what to do."""


@dataclass(frozen=True)
class JailStatus:
    """Whether answers' code can run here: `works`, else `why` it cannot and `fix`."""

    works: bool
    why: str = ""
    fix: str = ""

    def sentence(self) -> str:
        """One line for a page, a CLI note or the doctor."""
        if self.works:
            return "answers' code runs in a bubblewrap jail with a seccomp filter"
        return f"no jail works here ({self.why}): {self.fix}"


def python_roots() -> list[Path]:
    """The Python installation a jailed child needs, read-only: the interpreter's prefix
    (a virtual environment's packages) and base prefix (the standard library), outside
    /usr, which the jail binds anyway."""
    found: list[Path] = []
    for where in (sys.prefix, sys.base_prefix, Path(sys.executable).resolve().parent.parent):
        path = Path(where).resolve()
        if path.is_relative_to("/usr") or any(path.is_relative_to(p) for p in found):
            continue
        found = [p for p in found if not p.is_relative_to(path)] + [path]
    return found


@functools.cache
def python_binds() -> tuple[tuple[Path, Path], ...]:
    """Each Python root (python_roots) and where the jail sees it: at its own path, or at
    MOVED_PYTHON/<n> where it lies under the jail's own /tmp (the same for the whole
    process: `command` and `jailed_path` read it for every run)."""
    roots = python_roots()
    moved = [root for root in roots if root.is_relative_to(JAIL_TMP)]
    return tuple((r, MOVED_PYTHON / str(moved.index(r)) if r in moved else r) for r in roots)


def jailed_path(path: str) -> str:
    """`path` (a program of the Python installation, as it is named here) as the jail sees
    it."""
    for named in (Path(path), Path(path).resolve()):  # as named first: a venv's own python
        for root, seen in python_binds():
            if named.is_relative_to(root):
                return str(seen / named.relative_to(root))
    return path


def _system_paths() -> Iterator[str]:
    for name in SYSTEM_LINKS:
        path = Path(name)
        if path.is_symlink():
            yield from ("--symlink", str(path.readlink()), name)
        elif path.is_dir():
            yield from ("--ro-bind", name, name)


@functools.cache
def _version(bwrap: str) -> tuple[int, ...]:
    """bubblewrap's version ((0,) where it does not say): older ones lack some flags."""
    try:
        said = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=5)
        return tuple(int(part) for part in said.stdout.split()[-1].split("."))
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return (0,)


def command(program: list[str], seccomp_fd: int) -> list[str]:
    """`program` (an absolute path and its arguments) run in the jail, with the compiled
    seccomp filter readable on `seccomp_fd` (passed to bwrap). bubblewrap before 0.8 has no
    --disable-userns (the seccomp filter refuses new namespaces anyway) and before 0.7 no
    tmpfs --size (the child's file-size cap still bounds each file)."""
    bwrap = shutil.which(BWRAP)
    if bwrap is None:
        raise JailUnavailable(f"`{BWRAP}` is not installed")
    version = _version(bwrap)
    python = [arg for root, seen in python_binds() for arg in ("--ro-bind", str(root), str(seen))]
    no_userns = ["--disable-userns"] if version >= (0, 8) else []
    tmpfs_size = ["--size", str(TMPFS_BYTES)] if version >= (0, 7) else []
    return [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        *no_userns,
        "--uid", NOBODY,
        "--gid", NOBODY,
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--new-session",
        "--hostname", "jail",
        "--clearenv",
        "--setenv", "HOME", "/tmp",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "PYTHONHASHSEED", "0",
        "--setenv", "OPENBLAS_NUM_THREADS", "1",
        "--setenv", "OMP_NUM_THREADS", "1",
        "--ro-bind", "/usr", "/usr",
        *_system_paths(),
        *python,
        "--proc", "/proc",
        "--dev", "/dev",
        *tmpfs_size,
        "--tmpfs", str(JAIL_TMP),
        "--chdir", str(JAIL_TMP),
        "--seccomp", str(seccomp_fd),
        "--",
        jailed_path(program[0]),
        *program[1:],
    ]  # fmt: skip


@functools.cache
def seccomp_program() -> bytes:
    """The compiled seccomp filter (classic BPF, as bwrap's --seccomp reads it): every
    system call allowed but REFUSED_CALLS and clone without CLONE_THREAD; another
    architecture's calls kill the process (libseccomp's default)."""
    try:
        import pyseccomp
    except (ImportError, OSError, RuntimeError) as exc:  # libseccomp.so.2 missing
        raise JailUnavailable(f"libseccomp cannot be loaded ({exc})") from exc
    found = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name, code in REFUSED_CALLS:
        found.add_rule(pyseccomp.ERRNO(code), name)
    no_thread = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, CLONE_THREAD, 0)
    found.add_rule(pyseccomp.ERRNO(errno.EPERM), "clone", no_thread)
    with tempfile.TemporaryFile() as out:
        found.export_bpf(out)
        out.seek(0)
        return out.read()


@dataclass(frozen=True)
class Jailed:
    """A jailed program's end: its exit status (None: killed at the time-out) and the start
    of what it wrote to stdout and stderr."""

    returncode: int | None
    out: str
    err: str


def jailed_run(program: list[str], *, stdin: str, timeout: float, read_bytes: int) -> Jailed:
    """`program` run in the jail to its end or `timeout`, and at most `read_bytes` of its
    stdout (its output goes to regular files, so that the child's file-size cap bounds what
    it writes; a pipe would take all of a flood)."""
    with (
        tempfile.TemporaryFile() as rules,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        rules.write(seccomp_program())
        rules.seek(0)
        try:
            code: int | None = subprocess.run(
                command(program, rules.fileno()),
                input=stdin.encode(),
                stdout=out,
                stderr=err,
                timeout=timeout,
                pass_fds=(rules.fileno(),),
                env={"PATH": "/usr/bin:/bin"},
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
        out.seek(0)
        err.seek(0)
        said = out.read(read_bytes).decode(errors="replace")
        return Jailed(code, said, err.read(ERR_BYTES).decode(errors="replace"))


@functools.cache
def jail_status() -> JailStatus:
    """Whether a one-line Python program runs in the jail here (tried once a process)."""
    if shutil.which(BWRAP) is None:
        return JailStatus(False, f"`{BWRAP}` is not installed", INSTALL_HINT)
    probe = [sys.executable, "-I", "-c", "import sys; sys.stdout.write('jailed')"]
    try:
        done = jailed_run(probe, stdin="", timeout=START_SECONDS, read_bytes=200)
    except JailUnavailable as exc:
        seccomp = "libseccomp" in str(exc)
        return JailStatus(False, str(exc), SECCOMP_HINT if seccomp else INSTALL_HINT)
    except OSError as exc:
        return JailStatus(False, f"bwrap could not run: {exc}", INSTALL_HINT)
    if done.returncode is None:
        return JailStatus(False, f"bwrap ran past {START_SECONDS:g} s", INSTALL_HINT)
    said, complaint = done.out, done.err[:400]
    if said == "jailed":
        return JailStatus(True)
    last = (complaint.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    namespaces = any(word in last for word in ("namespace", "uid map", "Operation not permitted"))
    return JailStatus(False, f"bwrap: {last}", USERNS_HINT if namespaces else INSTALL_HINT)
