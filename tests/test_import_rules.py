"""The import rules of the layers (README, Layout): what may import what, by folder.

    bottom   models/foundation/                   nothing of ours but itself
    models   models/ (the rest)                   the bottom layer and itself; never the
                                                  core, training, the CLI or the UI
    core     app/ (the rest: judging, deciding,   the bottom layer, models and itself
             batches, reports, catalog, ...)
    training training/                            anything but the CLI and the UI
    fronts   app/cli/, app/ui/, app/__main__.py   nothing imports them but themselves

and no module imports itself through others (no cycles). Read from the source with an
AST walk (imports inside functions count too), so a lazy import cannot slip past; an
import under `if TYPE_CHECKING:` names a type and runs nothing, so cycles leave it out.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("app", "models", "training", "bench", "tests")
BOTTOM = ("models.foundation",)  # a folder: every module in it
FRONTS = ("app.cli", "app.ui", "app.__main__")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_only(tree: ast.AST) -> set[ast.AST]:
    """The import nodes under `if TYPE_CHECKING:`."""
    return {
        inner
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for branch in node.body
        for inner in ast.walk(branch)
    }


def _imports(path: Path, *, runtime: bool = False) -> set[str]:
    names = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_only(tree) if runtime else set()
    for node in ast.walk(tree):
        if node in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name.split(".")[0] in OURS}


PATHS = {
    _module(path): path
    for package in ("app", "models", "training")
    for path in sorted((ROOT / package).rglob("*.py"))
}
MODULES = {module: _imports(path) for module, path in PATHS.items()}


def _within(name: str, prefixes: tuple[str, ...] | set[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_bottom_layer_imports_nothing_of_ours_but_itself():
    bottom = [module for module in MODULES if _within(module, BOTTOM)]
    assert len(bottom) >= 3  # the folder, its errors and its data files
    for module in bottom:
        bad = {name for name in MODULES[module] if not _within(name, BOTTOM)}
        assert not bad, f"{module} imports {sorted(bad)}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, ("models",))))
def test_models_import_only_the_bottom_layer_and_each_other(module):
    bad = {
        name
        for name in MODULES[module]
        if not _within(name, ("models",)) and not _within(name, BOTTOM)
    }
    assert not bad, f"{module} imports {sorted(bad)}"


def _owner(name: str) -> str | None:
    """The module of ours an imported name lives in (`app.x.Y` -> `app.x`)."""
    while name and name not in PATHS:
        name = name.rpartition(".")[0]
    return name or None


def test_no_module_imports_itself_through_others():
    graph = {
        module: {owner for name in _imports(path, runtime=True) if (owner := _owner(name))}
        - {module}
        for module, path in PATHS.items()
    }
    cycles = []
    for start in graph:  # a depth-first walk from each module, back to itself
        stack, seen = [(start, (start,))], set()
        while stack:
            module, trail = stack.pop()
            for nxt in graph[module]:
                if nxt == start:
                    cycles.append(" -> ".join((*trail, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    assert not cycles, "import cycles:\n" + "\n".join(sorted(set(cycles))[:10])


def test_nothing_imports_a_front_but_the_fronts():
    for module, names in MODULES.items():
        if _within(module, FRONTS):
            continue
        bad = {name for name in names if _within(name, FRONTS)}
        assert not bad, f"{module} imports {sorted(bad)}"
