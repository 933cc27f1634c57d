"""The child that calls one program's function on a list of inputs, inside the jail
(app/code_run/jail.py); app/code_run/runner.py sends it as source (`python -I -c`), so it
imports nothing of PocketJudge.

Each program runs in a child of its own: an answer's code can only spoil its own outcomes,
never the reference's or another answer's, and the comparison happens in the parent. Before
the program is loaded the child caps its own memory, CPU time, file size and processes
(the jail's seccomp filter already refuses new processes and sockets).

Request (stdin, JSON): {"source", "name", "inputs": [[arg, ...], ...], "keep": int
(stop after this many returned), "stop_at_timeout": bool, "call_seconds", "cpu_seconds",
"memory_mb", "file_mb", "result_bytes"}. Reply (the first stdout, a JSON object a line, as
it goes): {"started": true}, then {"loaded": bool, "detail": str}, then one outcome per
input tried ({"value": encoded} or {"raised": exception name} or {"timed_out": true}), then
{"done": true}. What the program prints goes to /dev/null.
"""

import copy
import json
import numbers
import os
import resource
import signal
import sys

DEPTH = 40  # nesting of a result, at most


class CallTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise CallTimeout()


def encoded(value, depth=0):
    """`value` as JSON the parent decodes without running anything (runner.decoded): JSON's
    own types as they are, other containers and numbers tagged, anything else by its type's
    name and repr."""
    if depth > DEPTH:
        raise ValueError("nested too deeply")
    down = depth + 1
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, numbers.Complex):
        return {"complex": [value.real, value.imag]}
    if isinstance(value, list):
        return [encoded(item, down) for item in value]
    if isinstance(value, tuple):
        return {"tuple": [encoded(item, down) for item in value]}
    if isinstance(value, dict):
        return {"dict": [[encoded(k, down), encoded(v, down)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {type(value).__name__: [encoded(item, down) for item in value]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if hasattr(value, "tolist") and depth < DEPTH:  # numpy arrays and scalars
        return encoded(value.tolist(), down)
    return {"object": [type(value).__name__, repr(value)[:2000]]}


def call(function, args, seconds, result_bytes):
    """The outcome of `function(*args)` as a reply line's object; the arguments are
    copied, so a function that changes its input changes nothing of the next call."""
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        result = function(*copy.deepcopy(args))
        text = json.dumps({"value": encoded(result)})
    except CallTimeout:
        return {"timed_out": True}
    except BaseException as exc:  # an answer's bug, whatever it raises
        return {"raised": type(exc).__name__}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if len(text) > result_bytes:
        return {"raised": "result too large to compare"}
    return json.loads(text)


def load(source, name):
    """The function `name` that `source` defines, or (None, why)."""
    space = {"__name__": "answer", "__builtins__": __builtins__}
    try:
        exec(compile(source, "<answer>", "exec"), space)
    except BaseException as exc:
        return None, f"did not load: {type(exc).__name__}"
    found = space.get(name)
    if not callable(found):
        return None, "no function"
    return found, ""


def main():
    request = json.loads(sys.stdin.read())
    reply = os.fdopen(os.dup(1), "w", buffering=1)  # a line at a time
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    os.dup2(quiet, 2)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (until the child exits)
    memory = request["memory_mb"] * 1024 * 1024
    files = request["file_mb"] * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (files, files))
    resource.setrlimit(resource.RLIMIT_CPU, (request["cpu_seconds"], request["cpu_seconds"] + 1))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    signal.signal(signal.SIGALRM, on_alarm)
    sys.setrecursionlimit(2000)

    def say(message):
        reply.write(json.dumps(message) + "\n")

    say({"started": True})
    function, why = load(request["source"], request["name"])
    say({"loaded": function is not None, "detail": why})
    returned = 0
    for args in request["inputs"] if function is not None else []:
        outcome = call(function, args, request["call_seconds"], request["result_bytes"])
        say(outcome)
        returned += "value" in outcome
        if returned >= request["keep"] or ("timed_out" in outcome and request["stop_at_timeout"]):
            break  # one that loops once would spend the child's CPU time on every input
    say({"done": True})
    reply.close()


main()
