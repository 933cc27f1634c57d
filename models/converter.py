"""Hugging Face safetensors -> GGUF conversion, with llama.cpp's own converter.

The converter script (`convert_hf_to_gguf.py`), the `gguf-py` package and the
local modules the script imports are taken from the llama-cpp-python source
distribution of the *installed* version, so the GGUF files it writes match the
llama.cpp that loads them. They are fetched once into `vendor/llama.cpp/`
(git-ignored) and never committed.

CLI:
    python -m models.converter fetch
    python -m models.converter convert HF_DIR OUT [--outtype q8_0]
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path, PurePosixPath

from models.foundation.errors import BackendError, BackendUnavailable

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_VENDOR_DIR = REPO_ROOT / "vendor"
SCRIPT_NAME = "convert_hf_to_gguf.py"
LORA_SCRIPT_NAME = "convert_lora_to_gguf.py"  # a peft adapter -> a GGUF LoRA adapter
OUTTYPES = ("f32", "f16", "bf16", "q8_0")

# Written last, so its presence means a complete extraction of that version.
_MARKER = ".llama-cpp-python-version"
_SDIST_PREFIX = "vendor/llama.cpp/"
# Whole folders of the llama.cpp tree the converter needs besides the modules it
# imports: gguf-py is put on sys.path by the script itself, and the chat
# templates are read by path for a few model families.
_ALWAYS_DIRS = ("gguf-py", "models/templates")
_STDERR_TAIL_CHARS = 4000


def installed_llama_cpp_version() -> str:
    """The installed llama-cpp-python version, read without loading the library."""
    try:
        return metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        try:
            import llama_cpp
        except ImportError as exc:
            raise BackendUnavailable(
                "llama-cpp-python is not installed: pip install llama-cpp-python==0.3.36"
            ) from exc
        return str(llama_cpp.__version__)


def converter_dir(vendor_dir: Path = DEFAULT_VENDOR_DIR) -> Path:
    return vendor_dir / "llama.cpp"


def _is_current(llama_dir: Path, version: str) -> bool:
    marker = llama_dir / _MARKER
    if not marker.is_file() or marker.read_text().strip() != version:
        return False
    scripts = all((llama_dir / name).is_file() for name in (SCRIPT_NAME, LORA_SCRIPT_NAME))
    return scripts and (llama_dir / "gguf-py" / "gguf").is_dir()


def ensure_converter(vendor_dir: Path = DEFAULT_VENDOR_DIR) -> Path:
    """Make sure the converter matching the installed llama-cpp-python is vendored.

    Returns the path of `convert_hf_to_gguf.py`. Does nothing (quickly) when the
    right version is already there; otherwise downloads the sdist from PyPI
    (`pip download --no-binary :all:`) and extracts only what the converter needs.
    """
    version = installed_llama_cpp_version()
    llama_dir = converter_dir(vendor_dir)
    if _is_current(llama_dir, version):
        return llama_dir / SCRIPT_NAME
    vendor_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sdist-", dir=vendor_dir) as tmp:
        sdist = _download_sdist(version, Path(tmp))
        staging = Path(tmp) / "llama.cpp"
        _extract_converter(sdist, staging)
        (staging / _MARKER).write_text(version + "\n")
        _swap_into_place(staging, llama_dir, version)
    return llama_dir / SCRIPT_NAME


def _download_sdist(version: str, dest: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        f"llama-cpp-python=={version}",
        "-d",
        str(dest),
    ]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    found = sorted(dest.glob("llama_cpp_python-*.tar.gz")) + sorted(
        dest.glob("llama-cpp-python-*.tar.gz")
    )
    if proc.returncode != 0 or not found:
        raise BackendUnavailable(
            f"could not download the llama-cpp-python=={version} source distribution "
            f"(needed for its HF->GGUF converter); is PyPI reachable?\n"
            f"{_tail(proc.stderr or proc.stdout)}"
        )
    return found[0]


def _extract_converter(sdist: Path, staging: Path) -> None:
    """Extract the converter script, the local modules it imports, and `_ALWAYS_DIRS`."""
    with tarfile.open(sdist, "r:gz") as tar:
        members = {_relative(m.name): m for m in tar.getmembers() if m.isfile()}
        files = {rel: m for rel, m in members.items() if rel is not None}
        if SCRIPT_NAME not in files:
            raise BackendUnavailable(f"{sdist.name} has no vendor/llama.cpp/{SCRIPT_NAME}")

        def read(rel: str) -> bytes:
            handle = tar.extractfile(files[rel])
            return handle.read() if handle else b""

        wanted = _needed_files(files, read)
        for rel in sorted(wanted):
            member = files[rel]
            member.name = rel
            tar.extract(member, staging, filter="data")


def _relative(name: str) -> str | None:
    """`llama_cpp_python-X/vendor/llama.cpp/a/b.py` -> `a/b.py`; None outside llama.cpp."""
    parts = PurePosixPath(name).parts
    rest = "/".join(parts[1:])
    return rest[len(_SDIST_PREFIX) :] if rest.startswith(_SDIST_PREFIX) else None


def _needed_files(files: dict[str, tarfile.TarInfo], read: Callable[[str], bytes]) -> set[str]:
    """The script plus, transitively, every local module or package it imports."""
    wanted = {rel for rel in files if rel.split("/")[0] == "gguf-py"}
    wanted |= {rel for rel in files if any(rel.startswith(d + "/") for d in _ALWAYS_DIRS)}
    todo = [SCRIPT_NAME, LORA_SCRIPT_NAME]
    seen: set[str] = set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        wanted.add(rel)
        for name in _top_level_imports(read(rel)):
            for local in _local_module_files(files, name):
                if local.endswith(".py"):
                    todo.append(local)
                else:
                    wanted.add(local)
    return wanted


def _top_level_imports(source: bytes) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _local_module_files(files: Iterable[str], name: str) -> list[str]:
    """Files of a top-level module or package `name` in the llama.cpp root, if any."""
    if name == "gguf":  # lives in gguf-py/, extracted whole
        return []
    return [rel for rel in files if rel == f"{name}.py" or rel.startswith(f"{name}/")]


def _swap_into_place(staging: Path, llama_dir: Path, version: str) -> None:
    """Replace `llama_dir` by `staging`; tolerate a concurrent process doing the same."""
    old = llama_dir.with_name(f"{llama_dir.name}.old-{os.getpid()}")
    if llama_dir.exists():
        if _is_current(llama_dir, version):
            return
        llama_dir.rename(old)
    try:
        staging.rename(llama_dir)
    except OSError:
        if not _is_current(llama_dir, version):
            raise
    shutil.rmtree(old, ignore_errors=True)


def convert_hf_to_gguf(
    hf_dir: Path, out_file: Path, outtype: str = "q8_0", vendor_dir: Path = DEFAULT_VENDOR_DIR
) -> Path:
    """Convert a local HF safetensors model directory to one GGUF file.

    Runs the vendored converter in a subprocess with this interpreter, with the
    vendored gguf-py first on PYTHONPATH (the PyPI `gguf` may lag behind the
    converter). The file is written next to `out_file` and renamed into place,
    so a failed run never leaves a truncated GGUF behind.
    """
    if outtype not in OUTTYPES:
        raise ValueError(f"outtype must be one of {', '.join(OUTTYPES)}, not {outtype!r}")
    hf_dir = Path(hf_dir)
    out_file = Path(out_file)
    if not (hf_dir / "config.json").is_file():
        raise BackendError(f"{hf_dir} is not a Hugging Face model directory (no config.json)")
    script = ensure_converter(vendor_dir)
    return _run_converter(script, [str(hf_dir), "--outtype", outtype], out_file, hf_dir)


def _run_converter(script: Path, args: list[str], out_file: Path, source: Path) -> Path:
    """Run a vendored converter script writing beside `out_file`, then rename it into
    place, so a failed run never leaves a truncated GGUF behind."""
    out_file.parent.mkdir(parents=True, exist_ok=True)
    partial = out_file.with_name(f".{out_file.name}.{os.getpid()}.partial")
    cmd = [sys.executable, str(script), *args, "--outfile", str(partial)]
    env = _converter_env(script)
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    if proc.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise BackendError(
            f"{script.name} failed (exit {proc.returncode}) on {source}:\n"
            f"{_tail(proc.stderr or proc.stdout)}"
        )
    os.replace(partial, out_file)
    return out_file


def convert_lora_to_gguf(
    adapter_dir: Path, base_config_dir: Path, out_file: Path, vendor_dir: Path = DEFAULT_VENDOR_DIR
) -> Path:
    """Convert a peft LoRA adapter to a GGUF LoRA adapter (f16) that llama.cpp applies to the
    base GGUF at load. `base_config_dir` holds the base's config.json (its architecture and
    sizes; no weights are read). Written beside `out_file` and renamed into place."""
    if not (Path(base_config_dir) / "config.json").is_file():
        raise BackendError(f"{base_config_dir} has no config.json for the adapter's base")
    script = ensure_converter(vendor_dir).with_name(LORA_SCRIPT_NAME)
    args = [str(adapter_dir), "--base", str(base_config_dir), "--outtype", "f16"]
    return _run_converter(script, args, Path(out_file), Path(adapter_dir))


def _converter_env(script: Path) -> dict[str, str]:
    env = dict(os.environ)
    gguf_py = str(script.parent / "gguf-py")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (gguf_py, env.get("PYTHONPATH")) if p)
    # Local conversion only: nothing may be fetched from the Hugging Face hub.
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.pop("NO_LOCAL_GGUF", None)
    return env


def _tail(text: str) -> str:
    return text[-_STDERR_TAIL_CHARS:].strip()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m models.converter", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="vendor llama.cpp's converter for this llama-cpp-python")
    fetch.add_argument("--vendor-dir", type=Path, default=DEFAULT_VENDOR_DIR)
    convert = sub.add_parser("convert", help="convert a HF safetensors directory to GGUF")
    convert.add_argument("hf_dir", type=Path)
    convert.add_argument("out", type=Path)
    convert.add_argument("--outtype", choices=OUTTYPES, default="q8_0")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        if args.command == "fetch":
            print(ensure_converter(args.vendor_dir))
        else:
            print(convert_hf_to_gguf(args.hf_dir, args.out, args.outtype))
    except (BackendError, BackendUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
