"""Other builds of llama.cpp beside the installed ones, for `make bench` to compare.

    python -m bench.engine_builds native      # builds once, prints its library folder

Each build is llama-cpp-python of the installed version compiled with other flags into
build/engines/<name>-<hash>/ (git-ignored; models.engine_library.build_library), never
installed: a process uses it when LLAMA_CPP_LIB_PATH names its library folder. `native`
is what the portable builds are measured against: -march=native, so every instruction set
this CPU reports, but with AMX masked off, because AMX tiles fault on machines like this
project's virtual machines; `native-amx` is llama.cpp's own default build, AMX included,
which is what crashed (`python -m app doctor` run with it shows how).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from models.engine_library import build_key, build_library, library_folder

REPO = Path(__file__).resolve().parents[1]
ENGINES = REPO / "build" / "engines"


@dataclass(frozen=True)
class EngineBuildSpec:
    name: str
    cmake_args: str
    cflags: str = ""

    @property
    def folder(self) -> Path:
        return ENGINES / f"{self.name}-{build_key(f'{self.cmake_args} {self.cflags}')[:10]}"

    @property
    def lib(self) -> Path:
        return library_folder(self.folder)


NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
BUILDS = {
    "native": EngineBuildSpec("native", "-DGGML_NATIVE=ON", NO_AMX),
    "native-amx": EngineBuildSpec("native-amx", "-DGGML_NATIVE=ON"),
}


def ensure_built(spec: EngineBuildSpec) -> Path:
    """The build's library folder, compiling it first when missing (a few minutes)."""
    if not (spec.lib / "libllama.so").is_file():
        print(f"compiling llama.cpp ({spec.name}: {spec.cmake_args} {spec.cflags})", flush=True)
        build_library(spec.folder, spec.cmake_args, spec.cflags)
    return spec.lib


def main(argv: list[str] | None = None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or ["native"]
    for name in names:
        print(ensure_built(BUILDS[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
