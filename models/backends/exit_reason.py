"""How a child process ended, said in one line a user can act on."""

from __future__ import annotations

import signal

# What each signal usually means for a process running llama.cpp, and what to do.
_SIGNAL_HINTS: dict[int, str] = {
    signal.SIGILL: (
        "llama.cpp ran a CPU instruction this machine cannot execute (a build for another "
        "CPU, or AMX/AVX-512 code a virtual machine reports but does not run): rebuild the "
        "engine with `make clean-venv setup`, then check it with `python -m app doctor`"
    ),
    signal.SIGABRT: (
        "llama.cpp stopped on a failed check (the lines before this say which): a damaged "
        "or unsupported model file, or a context too small for the input"
    ),
    signal.SIGSEGV: (
        "llama.cpp crashed: a build with CPU code this machine faults on (AMX tiles do so "
        "in some virtual machines), a damaged model file, or a bug; `python -m app doctor` "
        "checks the engine and the default judge's files"
    ),
    signal.SIGBUS: (
        "the model file changed or went away while it was mapped (a rebuild, a full disk)"
    ),
    signal.SIGFPE: "llama.cpp hit an arithmetic fault: a damaged model file or a bug",
    signal.SIGKILL: (
        "it was killed from outside, most often by the system when memory ran out: "
        "close other programs, or use a smaller model or context (--n-ctx)"
    ),
    signal.SIGTERM: "it was asked to stop from outside (a shutdown, or a user)",
}


def describe_exit(returncode: int) -> str:
    """`returncode` as Popen reports it (negative: the signal that stopped the process)."""
    if returncode >= 0:
        return f"it exited with code {returncode} before answering (its last output above says why)"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"it was stopped by signal {number}"
    label = (signal.strsignal(number) or name).lower()
    hint = _SIGNAL_HINTS.get(number, "")
    return f"it was stopped by {name} ({label})" + (f": {hint}" if hint else "")
