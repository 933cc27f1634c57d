"""Which build of llama.cpp this process loads: the portable one, or a faster variant the
CPU can run.

`make setup` installs llama-cpp-python compiled for any x86-64 CPU with AVX2
(models/llama_cpp_flags/cpu.txt) and builds variants beside it (`python -m
models.engine_build`): the same version compiled with more instruction sets, into
`<venv>/llama-variants/<name>/`. A variant is chosen (LLAMA_CPP_LIB_PATH, which
llama-cpp-python reads when it is first imported, and which engine workers inherit) when:

- LLAMA_CPP_LIB_PATH is not set already (an explicit choice wins);
- the CPU reports every instruction set its flag file requires (`# requires:`);
- the engine's self-check has not turned it off: `python -m app doctor` runs a pair on
  it, and a variant that crashes there gets a `turned-off` file saying why.

`models/__init__.py` calls `choose_for_process()`, so any use of llama.cpp through `models`
loads the chosen build.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

FLAGS_DIR = Path(__file__).resolve().parent / "llama_cpp_flags"
BASE_FLAGS = FLAGS_DIR / "cpu.txt"
VARIANT_NAMES = ("avx512",)
VARIANTS_ENV = "POCKETJUDGE_LLAMA_VARIANTS"  # where variants live (default: <venv>/llama-variants)
LIB_ENV = "LLAMA_CPP_LIB_PATH"
TURNED_OFF = "turned-off"  # a file in a variant's folder: the self-check crashed on it
STAMP = "flags"  # a file in a variant's folder: the flags it was built with


def read_flags(path: Path) -> list[str]:
    """The CMake flags of a flag file, one a line, without comments and blank lines."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def merge_flags(*layers: list[str]) -> list[str]:
    """`-DNAME=VALUE` flags, a later layer's value of a name replacing an earlier one's, in
    the order the names first come."""
    merged: dict[str, str] = {}
    for layer in layers:
        for flag in layer:
            merged[flag.split("=", 1)[0]] = flag
    return list(merged.values())


def required_features(path: Path) -> tuple[str, ...]:
    """The CPU flags (as /proc/cpuinfo names them) a flag file's `# requires:` line lists."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# requires:"):
            return tuple(line.split(":", 1)[1].split())
    return ()


def library_folder(folder: Path) -> Path:
    """Where a build of llama-cpp-python installed into `folder` keeps its libraries (what
    LLAMA_CPP_LIB_PATH names)."""
    return folder / "llama_cpp" / "lib"


def variants_dir() -> Path:
    return Path(os.environ.get(VARIANTS_ENV) or Path(sys.prefix) / "llama-variants")


@dataclass(frozen=True)
class Variant:
    name: str
    folder: Path

    @property
    def flag_file(self) -> Path:
        return FLAGS_DIR / f"{self.name}.txt"

    @property
    def cmake_args(self) -> str:
        return " ".join(merge_flags(read_flags(BASE_FLAGS), read_flags(self.flag_file)))

    @property
    def requires(self) -> tuple[str, ...]:
        return required_features(self.flag_file)

    @property
    def lib(self) -> Path:
        return library_folder(self.folder)

    @property
    def built(self) -> bool:
        stamp = self.folder / STAMP
        return (
            (self.lib / "libllama.so").is_file()
            and stamp.is_file()
            and (stamp.read_text(encoding="utf-8").strip() == build_key(self.cmake_args))
        )

    @property
    def turned_off(self) -> str | None:
        """Why the self-check turned this variant off, if it did."""
        marker = self.folder / TURNED_OFF
        return marker.read_text(encoding="utf-8").strip() if marker.is_file() else None

    def turn_off(self, reason: str) -> None:
        (self.folder / TURNED_OFF).write_text(reason + "\n", encoding="utf-8")


def variants() -> list[Variant]:
    return [Variant(name, variants_dir() / name) for name in VARIANT_NAMES]


def variant(name: str) -> Variant | None:
    return next((v for v in variants() if v.name == name), None)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The instruction sets this CPU reports (empty where /proc/cpuinfo cannot be read)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


@dataclass(frozen=True)
class Choice:
    name: str  # "portable", a variant's name, or "LLAMA_CPP_LIB_PATH"
    lib: Path | None  # None: the installed package's own library
    reason: str


CHOSEN: dict[str, Choice] = {}  # "process": what this process chose when `models` was imported


def choose_for_process() -> Choice:
    """`choose()` once per process (models/__init__.py calls it); what it chose."""
    if "process" not in CHOSEN:
        CHOSEN["process"] = choose()
    return CHOSEN["process"]


def portable_lib() -> Path | None:
    """The library folder of the installed llama-cpp-python (the portable build)."""
    spec = find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(spec.submodule_search_locations[0]) / "lib"


def choose(flags: set[str] | None = None, environ: dict[str, str] | None = None) -> Choice:
    """The build to load, set in `environ` (default os.environ) as LLAMA_CPP_LIB_PATH."""
    environ = os.environ if environ is None else environ
    if environ.get(LIB_ENV):
        return Choice(LIB_ENV, Path(environ[LIB_ENV]), f"{LIB_ENV} is set")
    flags = cpu_flags() if flags is None else flags
    reasons = []
    for candidate in variants():
        name = candidate.name
        missing = [feature for feature in candidate.requires if feature not in flags]
        if not candidate.built:
            reasons.append(f"the {name} build is not there (make setup builds it)")
        elif missing:
            reasons.append(f"this CPU lacks {', '.join(missing)} for the {name} build")
        elif candidate.turned_off:
            reasons.append(f"the {name} build is turned off: {candidate.turned_off}")
        else:
            environ[LIB_ENV] = str(candidate.lib)
            reason = f"this CPU reports {' '.join(candidate.requires)}"
            return Choice(name, candidate.lib, reason)
    return Choice("portable", None, "; ".join(reasons) or "no variant is known")


def build_key(cmake_args: str) -> str:
    """What names a build: the llama-cpp-python version and the flags ("" when none is
    installed, which matches no build)."""
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        return ""
    return hashlib.md5(f"{version} {cmake_args}".encode()).hexdigest()


def build_library(folder: Path, cmake_args: str, cflags: str = "") -> Path:
    """Compile llama-cpp-python of the installed version with `cmake_args` into `folder`
    (pip --target: never installed, never cached); its library folder."""
    version = metadata.version("llama-cpp-python")
    env = dict(os.environ, CMAKE_ARGS=cmake_args, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count()))
    env.pop(LIB_ENV, None)
    if cflags:
        env["CFLAGS"] = env["CXXFLAGS"] = cflags
    command = [
        sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
        "--no-cache-dir", "--no-deps", "--no-binary", "llama-cpp-python", "--upgrade",
        "--target", str(folder), f"llama-cpp-python=={version}",
    ]  # fmt: skip
    subprocess.run(command, check=True, env=env)
    return library_folder(folder)


def build_variants(flags: set[str] | None = None) -> list[str]:
    """Build each variant whose build is missing or whose flags changed (a few minutes each)
    and that this CPU can run (`flags`: the instruction sets it reports; a variant it lacks
    one for would never be loaded here); the names of those left unbuilt, and why."""
    flags = cpu_flags() if flags is None else flags
    skipped = []
    for candidate in variants():
        if candidate.built:
            continue
        if missing := [feature for feature in candidate.requires if feature not in flags]:
            skipped.append(f"{candidate.name}: this CPU lacks {', '.join(missing)}")
            continue
        args = candidate.cmake_args
        print(
            f"compiling the {candidate.name} build of llama.cpp (about 6 minutes on 2 cores, "
            f"once): {args}",
            flush=True,
        )
        build_library(candidate.folder, args)
        (candidate.folder / STAMP).write_text(build_key(args) + "\n", encoding="utf-8")
        (candidate.folder / TURNED_OFF).unlink(missing_ok=True)
    return skipped
