"""The import rules of the layers (README, Layout): what may import what.

    bottom   app.errors, app.datafiles           nothing of ours but each other
    models   models.*                            the bottom layer and the app core; never
                                                 training, the CLI or the UI
    training training.*                          anything but the CLI and the UI
    fronts   app.cli, app.ui.*, app.__main__     nothing imports them but themselves

Read from the source with an AST walk (imports inside functions count too), so a
lazy import cannot slip past.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("app", "models", "training", "bench", "tests")
BOTTOM = {"app.errors", "app.datafiles"}
FRONTS = ("app.cli", "app.ui", "app.__main__")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in OURS}


MODULES = {
    _module(path): _imports(path)
    for package in ("app", "models", "training")
    for path in sorted((ROOT / package).rglob("*.py"))
}


def _within(name: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_bottom_layer_imports_nothing_of_ours_but_itself():
    for module in BOTTOM:
        bad = {name for name in MODULES[module] if not _within(name, BOTTOM)}
        assert not bad, f"{module} imports {sorted(bad)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, ("models",))))
def test_models_never_import_training_or_a_front(module):
    bad = {name for name in MODULES[module] if _within(name, ("training", *FRONTS))}
    assert not bad, f"{module} imports {sorted(bad)}"


def test_nothing_imports_a_front_but_the_fronts():
    for module, names in MODULES.items():
        if _within(module, FRONTS):
            continue
        bad = {name for name in names if _within(name, FRONTS)}
        assert not bad, f"{module} imports {sorted(bad)}"
