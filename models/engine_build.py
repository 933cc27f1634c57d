"""`python -m models.engine_build`: build llama.cpp's variants beside the portable build
(models/engine_library.py), those missing or whose flags changed; then say which build
this machine loads and why. `make setup` runs it (a few minutes the first time, then
nothing)."""

from __future__ import annotations

import sys

from models.engine_library import build_variants, choose


def main() -> int:
    for skipped in build_variants():
        print(f"llama.cpp variant not built: {skipped}")
    choice = choose()
    print(f"llama.cpp build: {choice.name} ({choice.reason})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
