"""Moving a model to a lent GPU machine and the trained adapter back, within the device
tool's limits (a call carries at most 64 MiB; at most 8 files of 16 MiB come back).

    python -m training.device.device_transfer split FILE --out DIR  # here: parts + manifest
    python -m training.device.device_transfer stage DIR --part K --out CALL  # here: call K
    python -m training.device.device_transfer receive CALL --store STORE  # there, once a call
    python -m training.device.device_transfer join --store STORE --out FILE  # there: whole, checked
    python -m training.device.device_transfer pack FOLDER --out DIR  # there: results in parts
    python -m training.device.device_transfer unpack DIR --out FOLDER  # here: results whole

`split` cuts a file (the base GGUF, 1.12 GB) into parts of `PART_MB` and writes a manifest
with each part's and the whole file's SHA-256. On the device machine each call carries one
part (the tool's `carry`) and `receive` copies it into a store outside the checkout (a
carried path does not outlive its call) after checking it; once all are there `join`
writes the file and checks the whole. `pack` does the reverse for what comes back (an
adapter folder, as one archive cut under the 16 MiB a returned file may hold), and
`unpack` rebuilds the folder here, checked whole. Session 15 moved the 1.5B this way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tarfile
from pathlib import Path, PurePosixPath

PART_MB = 52  # a part, the 8 MB working tree and a data file stay under a call's 64 MiB
RETURN_MB = 15  # a file that comes back holds at most 16 MiB
MANIFEST = "manifest.json"
CHUNK = 1 << 20


def sha256(path: Path) -> str:
    """The file's SHA-256. The standard library's, not app.io.resumable.file_digest: this
    module runs on a GPU machine whose image lacks the app's packages (pydantic)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def split(source: Path, out: Path, part_mb: float = PART_MB) -> dict:
    """`source` cut into `out/<name>.partNN` files and `out/manifest.json`."""
    out.mkdir(parents=True, exist_ok=True)
    size = int(part_mb * 1024 * 1024)
    parts = []
    with source.open("rb") as handle:
        for number, block in enumerate(iter(lambda: handle.read(size), b"")):
            part = out / f"{source.name}.part{number:02d}"
            part.write_bytes(block)
            parts.append({"name": part.name, "sha256": hashlib.sha256(block).hexdigest()})
    manifest = {"file": source.name, "sha256": sha256(source), "parts": parts}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return manifest


def stage(parts: Path, number: int, out: Path) -> Path:
    """`out` emptied and given part `number` of `parts` and the manifest: what one device
    call carries (the tool's `carry` names `out`)."""
    manifest = json.loads((parts / MANIFEST).read_text(encoding="utf-8"))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    name = manifest["parts"][number]["name"]
    shutil.copyfile(parts / name, out / name)
    shutil.copyfile(parts / MANIFEST, out / MANIFEST)
    return out / name


def receive(carried: Path, store: Path) -> list[str]:
    """Copy the checked parts (and the manifest) of `carried` into `store`; their names."""
    store.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((carried / MANIFEST).read_text(encoding="utf-8"))
    shutil.copyfile(carried / MANIFEST, store / MANIFEST)
    done = []
    for part in manifest["parts"]:
        path = carried / part["name"]
        if path.is_file() and sha256(path) == part["sha256"]:
            shutil.copyfile(path, store / part["name"])
            done.append(part["name"])
    return done


def join(store: Path, out: Path) -> Path:
    """The whole file from the parts in `store`; raises naming what is missing or wrong."""
    manifest = json.loads((store / MANIFEST).read_text(encoding="utf-8"))
    missing = [p["name"] for p in manifest["parts"] if not (store / p["name"]).is_file()]
    if missing:
        raise ValueError(f"{len(missing)} parts are not in {store} yet: {', '.join(missing)}")
    partial = out.with_name(out.name + ".partial")
    with partial.open("wb") as whole:
        for part in manifest["parts"]:
            with (store / part["name"]).open("rb") as handle:
                shutil.copyfileobj(handle, whole, CHUNK)
    if sha256(partial) != manifest["sha256"]:
        partial.unlink()
        raise ValueError(f"the joined {manifest['file']} does not match its SHA-256")
    partial.replace(out)
    return out


def pack(
    folder: Path, out: Path, part_mb: float = RETURN_MB, leave_out: tuple[str, ...] = ()
) -> dict:
    """`folder` as one tar archive cut into parts under `out`, with a manifest: few files,
    as few may come back (an adapter of 37 MB: three parts and the manifest). The paths in
    `leave_out` (relative to `folder`, files or folders) stay behind."""
    out.mkdir(parents=True, exist_ok=True)
    archive = out / f"{folder.name}.tar"

    def kept(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        inside = PurePosixPath(info.name).relative_to(folder.name).as_posix()
        return None if inside in leave_out else info

    with tarfile.open(archive, "w") as tar:
        tar.add(folder, arcname=folder.name, filter=kept)
    try:
        return split(archive, out, part_mb)
    finally:
        archive.unlink()


def unpack(packed: Path, out: Path) -> Path:
    """The folder `pack` cut up, rebuilt under `out` (checked whole before it is opened)."""
    manifest = json.loads((packed / MANIFEST).read_text(encoding="utf-8"))
    out.mkdir(parents=True, exist_ok=True)
    archive = join(packed, out / manifest["file"])
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(out, filter="data")
    finally:
        archive.unlink()
    return out / manifest["file"].removesuffix(".tar")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.device.device_transfer", description=__doc__
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("split", "pack", "unpack"):
        command = commands.add_parser(name)
        command.add_argument("source", type=Path)
        command.add_argument("--out", type=Path, required=True)
        if name == "split":  # what a call carries beside the working tree: 64 MiB less it
            command.add_argument("--part-mb", type=float, default=PART_MB)
    staging = commands.add_parser("stage")
    staging.add_argument("source", type=Path)
    staging.add_argument("--part", type=int, required=True)
    staging.add_argument("--out", type=Path, required=True)
    receiving = commands.add_parser("receive")
    receiving.add_argument("carried", type=Path)
    receiving.add_argument("--store", type=Path, required=True)
    joining = commands.add_parser("join")
    joining.add_argument("--store", type=Path, required=True)
    joining.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "split":
        print(f"{len(split(args.source, args.out, args.part_mb)['parts'])} parts in {args.out}")
    elif args.command == "pack":
        print(f"{len(pack(args.source, args.out)['parts'])} parts in {args.out}")
    elif args.command == "unpack":
        print(unpack(args.source, args.out))
    elif args.command == "stage":
        print(stage(args.source, args.part, args.out))
    elif args.command == "receive":
        print(f"received {', '.join(receive(args.carried, args.store)) or 'nothing'}")
    else:
        print(join(args.store, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
