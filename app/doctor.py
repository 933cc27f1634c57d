"""The engine's self-check (`python -m app doctor`, and the end of `make setup`).

Each check runs where a native crash cannot end this process: what llama.cpp was built
with (and which of its builds this CPU loads: models/engine_library.py), and one pair read
by the smallest built model, both in an engine worker (models/backends/worker_backend.py).
A worker stopped by a signal is reported in one line saying what happened and what to do;
a faster build that crashes is turned off and the portable one checked instead. Also: the
threads llama.cpp will use, whether the default judge's files are present and whole, and
whether the jail answers' code runs in works here (app/code_run/jail.py): a note, not a
failure, where it does not, since then no answer's code runs at all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from app.code_run.jail import jail_status
from models import engine_library, model_file
from models.backends.base import BackendOptions
from models.backends.engine_info import EngineBuild
from models.backends.worker_backend import EngineProcess, WorkerBackend
from models.base_models import BASES, base_gguf
from models.foundation.errors import EngineStopped, PocketJudgeError
from models.judge_settings import JUDGE_FILES
from models.registry import MODELS_DIR, ModelEntry, load_registry

Outcome = Literal["ok", "note", "failed"]
PAIR = ("What is 2 + 2? Answer with the number.", ("4", "The answer is 5."))
SELF_CHECK_CONTEXT = 512


@dataclass(frozen=True)
class Check:
    name: str
    outcome: Outcome
    text: str
    crashed: str = ""  # how the engine worker died during this check, if it did


def run_checks(model: str | None = None) -> Iterator[Check]:
    """The checks in order; `model` (a .gguf path) replaces the smallest built model.

    When the build chosen for this CPU is a variant (models/engine_library.py) and the
    self-check crashes on it, the variant is turned off for good and the checks run again
    on the portable build: a faster build is kept only where it runs."""
    path = Path(model) if model else smallest_model()
    choice = engine_library.choose_for_process()
    checks = list(_engine_checks(choice, path))
    variant = engine_library.variant(choice.name)
    crashed = [check.crashed for check in checks if check.crashed]
    if not crashed or variant is None:
        yield from checks
    else:  # what the variant did, as notes: the portable build's checks below decide
        for check in checks:
            if check.outcome == "failed":
                check = replace(check, outcome="note", text=f"{variant.name} build: {check.text}")
            yield check
        variant.turn_off(f"the self-check crashed on it: {crashed[0]}")
        portable = engine_library.portable_lib()
        os.environ[engine_library.LIB_ENV] = str(portable)
        yield Check(
            "build",
            "note",
            f"the {variant.name} build crashed on this machine: it is turned off, and the "
            f"portable build runs instead (checked again below)",
        )
        fallback = engine_library.Choice("portable", portable, f"{variant.name} turned off")
        yield from _engine_checks(fallback, path)
    yield from _default_judge_checks()
    yield jail_check()


def jail_check() -> Check:
    """A one-line program run in the jail, and what to do where it cannot run."""
    status = jail_status()
    if status.works:
        return Check(
            "code jail",
            "ok",
            "a program ran in bubblewrap with a seccomp filter (no network, none of this "
            "machine's files): answers' functions run beside a reference function",
        )
    return Check(
        "code jail",
        "note",
        f"{status.sentence()}. Until then no answer's code runs: a reference function's "
        "answers are judged by their text",
    )


def _engine_checks(choice: engine_library.Choice, path: Path | None) -> Iterator[Check]:
    """What llama.cpp was built with (and which build was chosen), the threads, and one
    pair read: each in an engine worker."""
    build: EngineBuild | None = None
    engine = EngineProcess(label="build-info")
    try:
        build = engine.call("build_info")
    except EngineStopped as error:
        yield Check("engine", "failed", f"{error}", crashed=_how(error))
    except PocketJudgeError as error:
        yield Check("engine", "failed", f"llama.cpp could not be loaded: {error}")
    finally:
        engine.close()
    if build is not None:
        yield _build_check(build, choice)
        yield _threads_check(build)
    yield _self_check(path)


def _how(error: EngineStopped) -> str:
    """How the worker ended, without what to do ("it was stopped by SIGILL (...)")."""
    return error.reason.split(":", 1)[0]


def _build_check(build: EngineBuild, choice: engine_library.Choice) -> Check:
    features = ", ".join(build.cpu_features) or "none reported"
    text = f"llama-cpp-python {build.version}, {choice.name} build ({choice.reason}); "
    text += f"CPU code: {features}"
    text += "; GPU offload: " + ("yes" if build.gpu_offload else "no")
    if build.forbidden:
        return Check(
            "engine",
            "failed",
            f"{text}. It was built with {', '.join(build.forbidden)}, which faults on some "
            "machines that report it: rebuild the portable engine with `make clean-venv setup`",
        )
    return Check("engine", "ok", text)


def _threads_check(build: EngineBuild) -> Check:
    return Check(
        "threads",
        "ok",
        f"{build.default_threads} to generate and {build.default_batch_threads} to read a "
        "prompt by default (llama.cpp's choice from this machine's cores); `--threads N` "
        "or the sidebar's Threads set both. One thread per process is fastest when another "
        "job shares the cores.",
    )


def smallest_model() -> Path | None:
    """The smallest GGUF on this machine among the registry's built models and the bases
    shipped in installed packages (None when there is none)."""
    found: list[Path] = []
    for entry in load_registry().models:
        path = entry.path()
        if entry.backend == "llama-cpp" and path is not None and path.is_file():
            found.append(path)
    for base in BASES.values():
        if base.registry is None and not base.assembled:
            try:
                found.append(base_gguf(base.name))
            except PocketJudgeError:
                continue
    found = [path for path in found if path.is_file()]
    return min(found, key=lambda p: p.stat().st_size) if found else None


def _self_check(path: Path | None) -> Check:
    if path is None:
        return Check(
            "self-check",
            "failed",
            "no model to read a pair with: run `make setup` (it installs SmolLM2-135M)",
        )
    options = BackendOptions(n_ctx=SELF_CHECK_CONTEXT, n_threads=1)
    started = time.perf_counter()
    try:
        backend = WorkerBackend("llama-cpp", str(path), options)
        try:
            readings = backend.read_answers(PAIR[0], list(PAIR[1]))
        finally:
            backend.close()
    except EngineStopped as error:
        return Check("self-check", "failed", f"{path.name}: {error}", crashed=_how(error))
    except PocketJudgeError as error:
        return Check("self-check", "failed", f"{path.name} could not read a pair: {error}")
    seconds = time.perf_counter() - started
    if len(readings) != len(PAIR[1]):
        return Check("self-check", "failed", f"{path.name} read {len(readings)} answers of 2")
    return Check(
        "self-check",
        "ok",
        f"{path.name} loaded and read a pair in {seconds:.1f} s in an engine worker",
    )


def _default_judge_checks() -> Iterator[Check]:
    try:
        entry = load_registry().get()
    except PocketJudgeError as error:
        yield Check("default judge", "failed", str(error))
        return
    path = entry.path()
    if path is None:
        yield Check("default judge", "note", f"'{entry.name}' has no local file ({entry.backend})")
        return
    if not path.exists():
        yield Check(
            "default judge",
            "note",
            f"'{entry.name}' is not built yet ({path.name}): `make models` builds it",
        )
        return
    try:
        model_file.check_whole(path)
    except PocketJudgeError as error:
        yield Check("default judge", "failed", str(error))
        return
    missing = [name for name in _judge_files(entry) if not (MODELS_DIR / name).is_file()]
    if missing:
        yield Check(
            "default judge",
            "failed",
            f"'{entry.name}' lacks {', '.join(missing)}: restore them with git checkout",
        )
        return
    size = path.stat().st_size / 1024**3
    yield Check("default judge", "ok", f"'{entry.name}': {path.name} ({size:.2f} GiB) is whole")


def _judge_files(entry: ModelEntry) -> list[str]:
    """The files under models/ the entry's judging settings name (head, calibration...)."""
    names = (getattr(entry.judging, field) for field in JUDGE_FILES)
    return [name for name in names if name]


def report(checks: Iterator[Check], write: Callable[[str], None]) -> bool:
    """Write each check as one line as it finishes; True when none failed."""
    passed = True
    for check in checks:
        mark = {"ok": "ok    ", "note": "note  ", "failed": "FAILED"}[check.outcome]
        write(f"{mark} {check.name}: {check.text}")
        passed = passed and check.outcome != "failed"
    return passed
