"""llama.cpp is built to run on any x86-64 CPU: the flags `make setup` compiles with ask for
no native or AMX code, the Makefile compiles with nothing else, and the installed library
reports no AMX."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from models import engine_library
from models.backends.engine_info import FORBIDDEN_FEATURES, parse_features
from models.backends.worker_backend import EngineProcess
from tests.support.needs import need_module

REPO = Path(__file__).resolve().parents[2]
FLAG_FILES = sorted((REPO / "models" / "llama_cpp_flags").glob("*.txt"))
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")


def flags(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def is_on(flag: str) -> bool:
    return flag.split("=", 1)[-1].upper() in ("ON", "1", "TRUE", "YES")


def test_the_flag_files_are_the_cpu_build_its_variant_and_the_gpu_addition() -> None:
    assert [path.name for path in FLAG_FILES] == ["avx512.txt", "cpu.txt", "gpu.txt"]
    assert "-DGGML_CUDA=ON" in flags(FLAG_FILES[2])


@pytest.mark.parametrize("path", FLAG_FILES, ids=lambda p: p.name)
def test_no_flag_asks_for_native_or_amx_code(path: Path) -> None:
    for flag in flags(path):
        assert flag.startswith("-D") and "=" in flag, f"{path.name}: '{flag}' is not -DNAME=VALUE"
        name = flag[2:].split("=", 1)[0]
        assert "native" not in flag.lower() or not is_on(flag), f"{path.name}: {flag}"
        assert "march" not in flag.lower() and "mtune" not in flag.lower(), f"{path.name}: {flag}"
        assert not ("AMX" in name and is_on(flag)), f"{path.name}: {flag} compiles AMX tiles"
        # every variant set includes a Sapphire Rapids build with AMX
        assert not (name == "GGML_CPU_ALL_VARIANTS" and is_on(flag)), f"{path.name}: {flag}"


def test_the_cpu_build_turns_native_off_and_names_its_baseline() -> None:
    cpu = flags(REPO / "models" / "llama_cpp_flags" / "cpu.txt")
    assert "-DGGML_NATIVE=OFF" in cpu  # llama.cpp's default is native
    for feature in ("AVX2", "FMA", "F16C"):
        assert f"-DGGML_{feature}=ON" in cpu
    for feature in ("AMX_TILE", "AMX_INT8", "AMX_BF16", "AVX512"):
        assert f"-DGGML_{feature}=OFF" in cpu


def test_the_makefile_compiles_llama_cpp_only_with_those_flags() -> None:
    assert "models/llama_cpp_flags/cpu.txt" in MAKEFILE
    # every CMAKE_ARGS the Makefile sets is the flag files' content
    assert re.findall(r'CMAKE_ARGS="([^"]*)"', MAKEFILE) == ["$(LLAMA_CMAKE_ARGS)"]
    assert "native" not in MAKEFILE.split("LLAMA_CMAKE_ARGS :=")[1].splitlines()[0]
    # from source every time, never a wheel pip cached from a build for another machine
    install = MAKEFILE.split('CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)"')[1].split("\n\t@")[0]
    assert "--no-cache-dir" in install and "--no-binary llama-cpp-python" in install
    # the engine's stamp is named by the flags: changing them rebuilds once
    assert "ENGINE_HASH" in MAKEFILE and "$(LLAMA_CMAKE_ARGS)" in MAKEFILE


def built_libraries() -> list[tuple[str, Path]]:
    """The portable build and each variant `make setup` built (models/engine_library.py)
    that this CPU can run (one it cannot is never loaded here: `choose`)."""
    flags = engine_library.cpu_flags()
    found = [("portable", engine_library.portable_lib())]
    found += [
        (v.name, v.lib)
        for v in engine_library.variants()
        if v.built and all(feature in flags for feature in v.requires)
    ]
    return [(name, lib) for name, lib in found if lib is not None]


def test_every_installed_library_reports_no_amx(monkeypatch: pytest.MonkeyPatch) -> None:
    need_module("llama_cpp")
    libraries = built_libraries()
    assert libraries and libraries[0][0] == "portable"
    for name, lib in libraries:
        monkeypatch.setenv(engine_library.LIB_ENV, str(lib))  # the worker inherits it
        engine = EngineProcess()
        try:
            build = engine.call("build_info")
        finally:
            engine.close()
        assert build.forbidden == [], f"{name}: {build.system_info}"
        assert "AVX2" in build.cpu_features, f"{name}: {build.system_info}"
        assert all(build.features.get(f, "0") == "0" for f in FORBIDDEN_FEATURES), name
        assert ("AVX512" in build.cpu_features) == (name == "avx512"), build.system_info


def test_system_info_is_read_feature_by_feature() -> None:
    text = "CPU : SSE3 = 1 | AVX2 = 1 | AMX_INT8 = 1 | REPACK = 1 | "
    features = parse_features(text)
    assert features == {"SSE3": "1", "AVX2": "1", "AMX_INT8": "1", "REPACK": "1"}
