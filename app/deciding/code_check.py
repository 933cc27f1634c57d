"""Whether a program stays inside the Python that app/deciding/code_interpreter.py
evaluates: its syntax, names, attributes, imports and decorators, checked on the tree before
any of it is evaluated."""

from __future__ import annotations

import ast

from app.deciding.code_names import (
    ATTRIBUTE_NAMES,
    CACHE_DECORATORS,
    MODULES,
    ModuleNames,
    Unsupported,
)

N = ast
STATEMENTS = (N.FunctionDef, N.Return, N.Assign, N.AugAssign, N.AnnAssign, N.For, N.While, N.If,
              N.Break, N.Continue, N.Pass, N.Expr, N.Try, N.Raise, N.Assert, N.Delete,
              N.Global, N.Nonlocal, N.Import, N.ImportFrom)  # fmt: skip
EXPRESSIONS = (N.Constant, N.Name, N.BinOp, N.UnaryOp, N.BoolOp, N.Compare, N.IfExp, N.Call,
               N.Attribute, N.Subscript, N.Slice, N.List, N.Tuple, N.Set, N.Dict, N.JoinedStr,
               N.FormattedValue, N.ListComp, N.SetComp, N.DictComp, N.GeneratorExp, N.Lambda,
               N.NamedExpr, N.Starred)  # fmt: skip
PARTS = (N.Module, N.arguments, N.arg, N.keyword, N.comprehension, N.alias, N.ExceptHandler,
         N.expr_context, N.operator, N.unaryop, N.boolop, N.cmpop)  # fmt: skip
ALLOWED = STATEMENTS + EXPRESSIONS + PARTS
UNCHECKED_FIELDS = frozenset({"annotation", "returns", "type_comment"})  # never evaluated


def check(node: ast.AST) -> None:
    """Raises Unsupported where the tree holds syntax, a name, an attribute or an import
    the evaluator does not follow (annotations are never evaluated, so never checked)."""
    if not isinstance(node, ALLOWED):
        raise Unsupported(f"{type(node).__name__} (line {getattr(node, 'lineno', '?')})")
    if isinstance(node, N.Name) and node.id.startswith("__"):
        raise Unsupported(f"the name '{node.id}'")
    attribute = isinstance(node, N.Attribute)
    if attribute and (not isinstance(node.ctx, N.Load) or node.attr not in ATTRIBUTE_NAMES):
        raise Unsupported(f"the attribute '{node.attr}'")
    if isinstance(node, N.Import | N.ImportFrom):
        _check_import(node)
    if isinstance(node, N.FunctionDef):
        for decorator in node.decorator_list:
            if _decorator_name(decorator) not in CACHE_DECORATORS:
                raise Unsupported(f"a decorator (line {node.lineno})")
    for field, value in ast.iter_fields(node):
        if field in UNCHECKED_FIELDS or field == "decorator_list":  # caches: never evaluated
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                check(child)


def _check_import(node: ast.Import | ast.ImportFrom) -> None:
    if isinstance(node, N.Import):
        for alias in node.names:
            ModuleNames(alias.name)  # raises Unsupported for another module
        return
    if node.level or node.module not in MODULES:
        raise Unsupported(f"from {node.module} import")
    for alias in node.names:
        if alias.name not in MODULES[node.module]:
            raise Unsupported(f"from {node.module} import {alias.name}")


def _decorator_name(node: ast.expr) -> str:
    """`lru_cache` of `@lru_cache`, `@functools.lru_cache(maxsize=None)` and the like."""
    node = node.func if isinstance(node, N.Call) else node
    return node.attr if isinstance(node, N.Attribute) else getattr(node, "id", "")
