"""Every package the code imports is pinned in requirements.txt (or requirements-nodeps.txt).

A package that arrives only as someone else's dependency can change or vanish when that
one moves (pandas came through streamlit, jinja2 through transformers). The imports are
read from the source with an AST walk, as the import rules are, and each top-level name
is mapped to the distribution that installs it.
"""

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("app", "models", "training", "bench", "scenarios", "tests")
OURS = set(SOURCES)
REQUIREMENTS = ("requirements.txt", "requirements-nodeps.txt")


def _top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _pinned() -> dict[str, str]:
    """Distribution (normalized) -> its pinned line, from the requirements files."""
    pins = {}
    for name in REQUIREMENTS:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if match := re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==\S+", line):
                pins[_normalized(match.group(1))] = line
    return pins


def imported_packages() -> dict[str, set[str]]:
    """Third-party top-level import name -> the files that import it."""
    users: dict[str, set[str]] = {}
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name in _top_level_imports(path):
                if name not in OURS and name not in sys.stdlib_module_names:
                    users.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return users


def test_every_imported_package_is_pinned():
    distributions = importlib.metadata.packages_distributions()
    pins = _pinned()
    unpinned = []
    for name, files in sorted(imported_packages().items()):
        owners = distributions.get(name)
        assert owners, f"`import {name}` ({sorted(files)[0]}) is not installed: run `make setup`"
        if not any(_normalized(owner) in pins for owner in owners):
            unpinned.append(f"{name} ({owners[0]}; imported by {sorted(files)[0]})")
    assert not unpinned, "imported but not pinned in requirements.txt: " + ", ".join(unpinned)


def test_every_pin_is_exact():
    for name in REQUIREMENTS:
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            line = line.split("#")[0].strip()
            assert not line or "==" in line, f"{name}:{number} `{line}` is not pinned with =="


def test_the_walk_sees_a_package_that_arrives_only_through_others(tmp_path):
    """The check can fail: a module importing an unpinned package is found."""
    module = tmp_path / "uses.py"
    module.write_text("import jsonschema.validators\nfrom app import service\n")
    assert _top_level_imports(module) == {"jsonschema", "app"}
    pins = _pinned()
    assert _normalized("jsonschema") in pins
    del pins[_normalized("jsonschema")]
    owners = importlib.metadata.packages_distributions()["jsonschema"]
    assert not any(_normalized(owner) in pins for owner in owners)
