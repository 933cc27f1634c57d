"""What the installed llama.cpp was built with, read from the library itself."""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass, field
from importlib import metadata

# CPU features a portable build must not use: AMX tiles fault on some machines whose CPU
# reports them (virtual machines), so they are never compiled in (models/llama_cpp_flags/).
FORBIDDEN_FEATURES = ("AMX_INT8", "AMX_BF16", "AMX_TILE")


@dataclass(frozen=True)
class EngineBuild:
    version: str
    system_info: str  # llama_print_system_info(): "CPU : SSE3 = 1 | AVX2 = 1 | ..."
    gpu_offload: bool
    # what llama-cpp-python uses when no --threads is given: half the cores to generate,
    # all of them to read a prompt
    default_threads: int
    default_batch_threads: int
    features: dict[str, str] = field(default_factory=dict)

    @property
    def forbidden(self) -> list[str]:
        """The forbidden CPU features this build uses (empty for a portable build)."""
        return [name for name in FORBIDDEN_FEATURES if self.features.get(name, "0") != "0"]

    @property
    def cpu_features(self) -> list[str]:
        """The CPU instruction sets compiled in (AVX2, AVX512, ...), in the library's order."""
        skip = {"OPENMP", "REPACK", "LLAMAFILE", "KLEIDIAI", "ACCELERATE"}
        return [k for k, v in self.features.items() if v == "1" and k not in skip]


def parse_features(system_info: str) -> dict[str, str]:
    """`AVX2 = 1 | AMX_INT8 = 1 | ...` -> {"AVX2": "1", ...} (the last value of a repeated key)."""
    features: dict[str, str] = {}
    for part in system_info.replace("\n", "|").split("|"):
        if "=" not in part:
            continue
        key, _, value = part.partition("=")
        key = key.split(":")[-1].strip()  # "CPU : SSE3" -> "SSE3"
        if key:
            features[key] = value.strip()
    return features


def engine_build_info() -> EngineBuild:
    """Loads llama.cpp's library (no model): run it in the engine worker, not in a server."""
    import llama_cpp

    text = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return EngineBuild(
        version=metadata.version("llama-cpp-python"),
        system_info=text,
        gpu_offload=bool(llama_cpp.llama_supports_gpu_offload()),
        default_threads=max(multiprocessing.cpu_count() // 2, 1),
        default_batch_threads=multiprocessing.cpu_count(),
        features=parse_features(text),
    )
