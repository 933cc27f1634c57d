"""Which llama.cpp build a process loads (models/engine_library.py): a variant only where
the CPU reports what it needs and the self-check has not turned it off; an explicit
LLAMA_CPP_LIB_PATH always wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from models import engine_library
from models.engine_library import LIB_ENV, build_key, choose, merge_flags, read_flags

AVX512 = set(engine_library.required_features(engine_library.FLAGS_DIR / "avx512.txt"))


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> engine_library.Variant:
    """The avx512 variant's folder as `make setup` leaves it (a stand-in library file)."""
    monkeypatch.setenv(engine_library.VARIANTS_ENV, str(tmp_path))
    variant = engine_library.variant("avx512")
    assert variant is not None
    variant.lib.mkdir(parents=True)
    (variant.lib / "libllama.so").write_bytes(b"")
    (variant.folder / engine_library.STAMP).write_text(build_key(variant.cmake_args) + "\n")
    return variant


def test_the_avx512_variant_needs_avx512_and_adds_it_to_the_portable_flags() -> None:
    assert {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= AVX512
    variant = engine_library.variant("avx512")
    assert variant is not None
    flags = variant.cmake_args.split()
    assert "-DGGML_AVX512=ON" in flags and "-DGGML_AVX512=OFF" not in flags
    assert "-DGGML_NATIVE=OFF" in flags and "-DGGML_AMX_INT8=OFF" in flags
    assert len(flags) == len(read_flags(engine_library.BASE_FLAGS))  # replaced, not added


def test_merge_flags_keeps_the_last_value_of_each_name_in_first_order() -> None:
    merged = merge_flags(["-DA=ON", "-DB=OFF"], ["-DB=ON", "-DC=ON"])
    assert merged == ["-DA=ON", "-DB=ON", "-DC=ON"]


def test_a_cpu_that_reports_avx512_gets_the_variant(built: engine_library.Variant) -> None:
    environ: dict[str, str] = {}
    choice = choose(AVX512 | {"avx2"}, environ)
    assert choice.name == "avx512" and environ[LIB_ENV] == str(built.lib)


def test_a_cpu_without_one_of_its_sets_keeps_the_portable_build(
    built: engine_library.Variant,
) -> None:
    environ: dict[str, str] = {}
    choice = choose(AVX512 - {"avx512_vnni"}, environ)
    assert choice.name == "portable" and "avx512_vnni" in choice.reason and environ == {}


def test_a_variant_the_self_check_turned_off_is_not_chosen(
    built: engine_library.Variant,
) -> None:
    built.turn_off("the self-check crashed on it: it was stopped by SIGILL")
    choice = choose(AVX512, {})
    assert choice.name == "portable" and "SIGILL" in choice.reason


def test_a_variant_built_with_other_flags_is_not_chosen(built: engine_library.Variant) -> None:
    (built.folder / engine_library.STAMP).write_text("an older build\n")
    assert choose(AVX512, {}).name == "portable"


def test_an_explicit_library_path_wins(built: engine_library.Variant) -> None:
    environ = {LIB_ENV: "/somewhere/else"}
    choice = choose(AVX512, environ)
    assert choice.name == LIB_ENV and environ[LIB_ENV] == "/somewhere/else"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f\n\nprocessor\t: 1\n")
    assert engine_library.cpu_flags(info) == {"fpu", "avx2", "avx512f"}
    assert engine_library.cpu_flags(tmp_path / "missing") == set()


def test_a_variant_this_cpu_cannot_run_is_not_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make setup` compiles a variant only for a CPU that reports what it needs (six minutes
    saved where it would never be loaded); with those flags it is compiled."""
    monkeypatch.setenv(engine_library.VARIANTS_ENV, str(tmp_path))
    compiled: list[Path] = []

    def compile_into(folder: Path, cmake_args: str, cflags: str = "") -> Path:
        compiled.append(folder)
        lib = engine_library.library_folder(folder)
        lib.mkdir(parents=True)
        (lib / "libllama.so").write_bytes(b"")
        return lib

    monkeypatch.setattr(engine_library, "build_library", compile_into)
    variant = engine_library.variant("avx512")
    assert variant is not None
    skipped = engine_library.build_variants(flags={"avx2", "fma", "f16c"})
    assert compiled == [] and skipped == [f"avx512: this CPU lacks {', '.join(variant.requires)}"]
    assert engine_library.build_variants(flags=AVX512 | {"avx2"}) == []
    assert compiled == [variant.folder] and variant.built
