"""What `make test` guarantees, asked for by the tests that need it.

`make test` installs every pinned package, builds the models (`make models`) and runs
beside `../shared`. A test that needs one of these and finds it missing **fails in CI**
(the `CI` variable set), saying what to run, so a broken set-up never lands as a row of
skips; outside CI it skips with the same words (a developer's partial checkout).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"  # ../shared beside the checkout


def missing(message: str, *, module_level: bool = False) -> NoReturn:
    """Fail in CI, skip elsewhere; both say `message` (what is missing, what to run)."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI runs every test: nothing may be missing)", pytrace=False)
    pytest.skip(message, allow_module_level=module_level)


def need_module(
    name: str, *, install: str = "run `make setup`", module_level: bool = False
) -> ModuleType:
    """The module `name`, a package that requirements.txt pins."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} cannot be imported ({exc}): {install}", module_level=module_level)


def need_model(path: Path | None, name: str) -> Path:
    """A model file `make models` builds."""
    if path is None or not path.is_file():
        missing(f"the model {name} is not built ({path}): run `make models`")
    return path


def shared_file(relative: str) -> Path:
    """A file of ../shared/data (see its README), beside this checkout."""
    path = SHARED_DATA / relative
    if not path.exists():
        missing(
            f"{path} is missing: ../shared must sit beside the checkout (../shared/data/README.md)"
        )
    return path


def need_jail() -> None:
    """The jail answers' code runs in (bubblewrap: `make setup` installs it)."""
    from app.code_run.jail import jail_status

    status = jail_status()
    if not status.works:
        missing(f"the code jail does not work here: {status.why} ({status.fix})")
