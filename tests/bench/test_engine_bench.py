"""`make bench`, part 4 (bench/engine.py): the portable-against-native row and the engine
worker's cost, each as a ratio to its baseline, and the native builds it compares with."""

from __future__ import annotations

from bench import engine, engine_builds


def reads(tokens_per_s: float, cpu: list[str]) -> dict:
    return {"tokens": 1000, "seconds": 1000 / tokens_per_s, "tokens_per_s": tokens_per_s,
            "cpu": cpu, "forbidden": []}  # fmt: skip


def judged(s_per_pair: float, rss: float, worker_rss: float) -> dict:
    return {"load_s": 2.0, "round_trip_ms": 0.1, "s_per_pair": s_per_pair, "verdicts": ["A"],
            "peak_rss_mb": rss, "worker_peak_rss_mb": worker_rss}  # fmt: skip


def test_the_table_gives_each_build_and_the_worker_as_ratios_to_their_baseline() -> None:
    builds = {
        "portable": [reads(90.0, ["AVX2"]), reads(100.0, ["AVX2"])],
        "native": [reads(125.0, ["AVX2", "AVX512"]), reads(120.0, ["AVX2", "AVX512"])],
    }
    worker = {"in-process": judged(10.0, 2000, 0), "worker": judged(10.5, 900, 1300)}
    text = engine.render(builds, worker, pairs=3)
    lines = text.splitlines()
    portable = next(line for line in lines if line.startswith("| portable"))
    assert "| 100.0 | 0.80 |" in portable  # the best round of each: 100 / 125
    assert next(line for line in lines if line.startswith("| native")).endswith("| 125.0 | 1.00 |")
    row = next(line for line in lines if line.startswith("| engine worker"))
    assert "| 10.50 | 1.05 |" in row and "| 2200 (900 + 1300) | 1.10 |" in row
    assert "Same verdicts both ways: yes" in text


def test_the_native_build_is_native_with_amx_masked_and_kept_apart_by_its_flags() -> None:
    native, amx = engine_builds.BUILDS["native"], engine_builds.BUILDS["native-amx"]
    assert native.cmake_args == amx.cmake_args == "-DGGML_NATIVE=ON"
    assert all(f"-mno-amx-{part}" in native.cflags for part in ("tile", "int8", "bf16"))
    assert native.folder != amx.folder
    assert native.folder.parent == engine_builds.ENGINES
    assert native.lib == native.folder / "llama_cpp" / "lib"
