"""Every test function checks something: an `assert`, `pytest.raises` / `pytest.warns` /
`pytest.fail`, directly or through a helper of the test suite that does (found by name,
followed through helpers of helpers). A test that only runs code passes whatever it does."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CHECKS = {  # calls that check: pytest's, numpy's and torch's assertions
    "raises",
    "warns",
    "fail",
    "assert_allclose",
    "assert_array_equal",
    "assert_close",
}


def _functions() -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    found: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        if ".artifacts" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                node.path = path  # type: ignore[attr-defined]
                found.setdefault(node.name, []).append(node)
    return found


def _called_names(node: ast.AST) -> set[str]:
    names = set()
    for call in ast.walk(node):
        if isinstance(call, ast.Call):
            target = call.func
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Attribute):
                names.add(target.attr)
    return names


def _checks_itself(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node)) or bool(
        _called_names(node) & CHECKS
    )


def test_every_test_function_asserts_something():
    functions = _functions()
    checking = {name for name, nodes in functions.items() if any(map(_checks_itself, nodes))}
    changed = True
    while changed:  # helpers of helpers
        changed = False
        for name, nodes in functions.items():
            if name not in checking and any(_called_names(n) & checking for n in nodes):
                checking.add(name)
                changed = True
    hollow = [
        f"{node.path.relative_to(TESTS.parent)}::{name}"  # type: ignore[attr-defined]
        for name, nodes in functions.items()
        if name.startswith("test_")
        for node in nodes
        if not _checks_itself(node) and not (_called_names(node) & checking)
    ]
    assert not hollow, "test functions that check nothing:\n" + "\n".join(sorted(hollow))


def test_the_check_tells_a_hollow_test_from_a_checking_one():
    hollow = ast.parse("def test_x():\n    run()\n")
    checking = ast.parse("def test_y():\n    with pytest.raises(ValueError):\n        run()\n")
    asserting = ast.parse("def test_z():\n    assert run() == 1\n")
    assert not _checks_itself(hollow)
    assert _checks_itself(checking) and _checks_itself(asserting)
