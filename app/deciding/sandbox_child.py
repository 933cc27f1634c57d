"""The child process of app/deciding/code_sandbox.py: runs a reference function and each
answer's function on the same inputs and says on how many each gives the reference's result.

It is sent as source (`python -s -c`), reads one JSON request on stdin and writes one JSON
reply on stdout (what the answers print goes to /dev/null); it imports nothing from
PocketJudge. Before any answer's code runs it caps its own memory, CPU time, file size and
process count, and installs an audit hook that refuses writing files, starting processes,
sockets, ctypes and the like (an audit hook cannot be removed once added). That is defence
in depth, not a jail: the caller runs it only when the user turns code running on.

With "interpreter" set (the folder that holds PocketJudge's `app`), the programs are not
run as Python: app/deciding/code_interpreter.py evaluates them (imported before the caps and
the hook), and a program outside the Python it follows has the status "unsupported".

Request: {"programs": [reference, answer, ...] (source), "names": [function name or null
per program], "inputs": [[arg, ...], ...], "call_seconds": float, "cpu_seconds": int,
"memory_mb": int, "keep": int, "interpreter": folder or null}. Reply: {"inputs": n kept,
"programs": [{"status": "ok" | "no function" | "did not load" | "unsupported", "agreed": k,
"detail": str}, ...]} where the first program is the reference; an input is kept where the
reference returns (the first `keep` of them).
"""

import copy
import json
import math
import os
import resource
import signal
import sys

REFUSED = (
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
    "os.killpg", "os.remove", "os.unlink", "os.rmdir", "os.rename", "os.replace", "os.mkdir",
    "os.makedirs", "os.chmod", "os.chown", "os.truncate", "os.link", "os.symlink", "os.utime",
    "os.chdir", "os.putenv", "os.unsetenv", "os.setxattr", "os.removexattr", "subprocess.",
    "socket.", "ctypes.", "shutil.", "urllib.", "http.", "ftplib.", "smtplib.", "webbrowser.",
    "pty.", "mmap.", "winreg.", "resource.", "sys.settrace", "sys.setprofile",
)  # fmt: skip
WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000  # O_WRONLY O_RDWR O_CREAT O_TRUNC O_APPEND


def refuse(event, args):
    if event.startswith(REFUSED) or (event == "import" and args[0] in ("ctypes", "_ctypes")):
        raise PermissionError(f"not allowed while judging code: {event}")
    if event == "open" and len(args) >= 3:
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and set(mode) & set("wax+")) or (flags or 0) & WRITE_FLAGS:
            raise PermissionError("not allowed while judging code: writing a file")


class CallTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise CallTimeout()


def same(a, b):
    """Whether an answer's result `a` is the reference's `b` (floats within rounding)."""
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
        except TypeError:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:
        return False


def call(function, args, seconds):
    """(True, result) or (False, the exception's name); the arguments are copied, so a
    function that changes its input changes no one else's."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return True, function(*copy.deepcopy(args))
    except CallTimeout:
        return False, "timed out"
    except BaseException as exc:  # an answer's bug, whatever it raises
        return False, type(exc).__name__
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def load(source, name, evaluate=None):
    """The function `name` defined by `source` (run as Python, or by `evaluate`, the
    evaluator's load_function), or (None, why)."""
    if evaluate is not None and name:
        try:
            return evaluate(source, name), ""
        except LookupError:
            return None, "no function"
        except BaseException as exc:
            why = "unsupported" if type(exc).__name__ == "Unsupported" else "did not load"
            return None, f"{why}: {type(exc).__name__}: {str(exc)[:120]}"
    space = {"__name__": "answer", "__builtins__": __builtins__}
    try:
        exec(compile(source, "<answer>", "exec"), space)
    except BaseException as exc:
        return None, f"did not load: {type(exc).__name__}"
    found = space.get(name) if name else None
    if not callable(found):
        return None, "no function"
    return found, ""


def evaluator(folder):
    """The evaluator's load_function, from PocketJudge's folder (None: run as Python)."""
    if not folder:
        return None
    sys.path.insert(0, folder)
    from app.deciding.code_interpreter import load_function

    sys.setrecursionlimit(12000)  # the evaluator spends several frames on each call
    return load_function


def compared(function, why, kept, seconds):
    """A program's entry of the reply: on how many `kept` inputs it gives the reference's
    result, or why it has no count."""
    if function is None:
        return {"status": why.split(":")[0], "agreed": 0, "detail": why}
    agreed = 0
    for args, expected in kept:
        ran, result = call(function, args, seconds)
        if not ran and result == "Unsupported":
            return {"status": "unsupported", "agreed": 0, "detail": "unsupported: in a call"}
        if result == "timed out" and not ran:
            break  # one that loops once would spend the child's CPU time on every input
        agreed += ran and same(result, expected)
    return {"status": "ok", "agreed": agreed, "detail": ""}


def main():
    request = json.loads(sys.stdin.read())
    evaluate = evaluator(request.get("interpreter"))
    # the reply goes to a copy of stdout; what an answer prints goes nowhere
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (the child's own stdout until it exits)
    memory = request["memory_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_seconds"], request["cpu_seconds"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    signal.signal(signal.SIGALRM, on_alarm)
    if evaluate is None:
        sys.setrecursionlimit(2000)
    sys.addaudithook(refuse)
    seconds = request["call_seconds"]
    loaded = [
        load(source, name, evaluate) for source, name in zip(request["programs"], request["names"])
    ]
    reference = loaded[0][0]
    kept = []
    if reference is not None:
        for args in request["inputs"]:
            ran, result = call(reference, args, seconds)
            if not ran and result == "Unsupported":
                loaded[0] = (None, "unsupported: in a call")
                kept = []
                break
            if ran:
                kept.append((args, result))
            if len(kept) >= request["keep"]:
                break
    programs = [compared(function, why, kept, seconds) for function, why in loaded]
    reply.write(json.dumps({"inputs": len(kept), "programs": programs}))
    reply.flush()


main()
