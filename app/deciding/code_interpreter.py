"""Evaluates the small functions a code reference and its answers define, without running
their code as Python.

Whether an answer's function gives the reference function's results is what settles a
code request (app/deciding/reference_behaviour.py), and the text alone cannot tell a buggy
function from a right one (training/EXPERIMENTS.md, sessions 29-32). Running the answers'
code is for a user who turns it on (`run_code`). This module walks the program's syntax
tree itself instead: functions, lambdas, loops, comprehensions, try/except, the builtins
and methods of numbers, strings and containers, and a few pure standard modules
(app/deciding/code_names.py). Every name a program reads is its own or the whitelist's and
every attribute comes from a per-type whitelist, so it reaches no file, process, network,
import machinery or object internals. A program outside that subset raises `Unsupported`
(before any of it is evaluated where the tree shows it; else where the evaluation meets
it), and the caller reads the reference as text instead. The evaluation still happens in
the sandboxed child (app/deciding/sandbox_child.py), whose memory and time caps stop a
whitelisted builtin asked for a huge result.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import Any

from app.deciding.code_check import check
from app.deciding.code_expressions import IN_PLACE, Expressions, limited
from app.deciding.code_names import MODULES, ModuleNames, Unsupported
from app.deciding.code_scope import (
    BreakSignal,
    ContinueSignal,
    Function,
    ReturnSignal,
    Scope,
    catchable,
)

N = ast


def load_function(source: str, name: str) -> Callable[..., Any]:
    """The function `name` that the program `source` defines, its top level evaluated.

    Raises Unsupported (see check), SyntaxError, LookupError where `name` is not a
    function of the program, or what the top level raised."""
    module = ast.parse(source)
    check(module)
    top = Scope({}, None)
    Evaluator().block(module.body, top)
    found = top.names.get(name)
    if not isinstance(getattr(found, "__wrapped__", found), Function):
        raise LookupError(f"no function {name!r}")
    return found


class Evaluator(Expressions):
    """Evaluates statements and expressions of a checked program in a Scope."""

    def __init__(self) -> None:
        self.depth = 0
        self.handling: list[BaseException] = []  # the exceptions `except` blocks handle

    def block(self, body: list[ast.stmt], scope: Scope) -> None:
        for statement in body:
            self.statement(statement, scope)

    def statement(self, node: ast.stmt, scope: Scope) -> None:
        method = getattr(self, f"s_{type(node).__name__}", None)
        if method is None:
            raise Unsupported(f"{type(node).__name__} (line {node.lineno})")
        method(node, scope)

    # statements

    def s_FunctionDef(self, node: ast.FunctionDef, scope: Scope) -> None:
        function: Any = Function(node, scope, self)
        if node.decorator_list:  # check() let through only caches: remember every result
            function = functools.lru_cache(maxsize=None)(function)
        scope.assign(node.name, function)

    def s_Return(self, node: ast.Return, scope: Scope) -> None:
        raise ReturnSignal(None if node.value is None else self.eval(node.value, scope))

    def s_Assign(self, node: ast.Assign, scope: Scope) -> None:
        value = self.eval(node.value, scope)
        for target in node.targets:
            self.store(target, value, scope)

    def s_AnnAssign(self, node: ast.AnnAssign, scope: Scope) -> None:
        if node.value is not None:
            self.store(node.target, self.eval(node.value, scope), scope)

    def s_AugAssign(self, node: ast.AugAssign, scope: Scope) -> None:
        right = self.eval(node.value, scope)
        target = node.target
        if isinstance(target, N.Name):
            left = scope.lookup(target.id)
            limited(type(node.op), left, right)
            scope.assign(target.id, IN_PLACE[type(node.op)](left, right))
            return
        if not isinstance(target, N.Subscript):
            raise Unsupported(f"augmented assignment to {type(target).__name__}")
        holder = self.eval(target.value, scope)
        key = self.eval(target.slice, scope)
        left = holder[key]
        limited(type(node.op), left, right)
        holder[key] = IN_PLACE[type(node.op)](left, right)

    def store(self, target: ast.expr, value: Any, scope: Scope) -> None:
        """Binds `value` to an assignment's target (a name, an item, or unpacked)."""
        if isinstance(target, N.Name):
            scope.assign(target.id, value)
        elif isinstance(target, N.Subscript):
            self.eval(target.value, scope)[self.eval(target.slice, scope)] = value
        elif isinstance(target, N.Tuple | N.List):
            self._unpack(target.elts, value, scope)
        else:
            raise Unsupported(f"assignment to {type(target).__name__}")

    def _unpack(self, targets: list[ast.expr], value: Any, scope: Scope) -> None:
        items = list(value)
        starred = [n for n, t in enumerate(targets) if isinstance(t, N.Starred)]
        if not starred:
            if len(items) != len(targets):
                raise ValueError(f"expected {len(targets)} values to unpack, got {len(items)}")
            for target, item in zip(targets, items):
                self.store(target, item, scope)
            return
        at, after = starred[0], len(targets) - starred[0] - 1
        if len(items) < at + after:
            raise ValueError("not enough values to unpack")
        for target, item in zip(targets[:at], items[:at]):
            self.store(target, item, scope)
        self.store(targets[at].value, items[at : len(items) - after], scope)  # type: ignore[attr-defined]
        for target, item in zip(targets[at + 1 :], items[len(items) - after :]):
            self.store(target, item, scope)

    def s_Delete(self, node: ast.Delete, scope: Scope) -> None:
        for target in node.targets:
            if isinstance(target, N.Name):
                scope.delete(target.id)
            elif isinstance(target, N.Subscript):
                del self.eval(target.value, scope)[self.eval(target.slice, scope)]
            else:
                raise Unsupported(f"del of {type(target).__name__}")

    def s_If(self, node: ast.If, scope: Scope) -> None:
        self.block(node.body if self.eval(node.test, scope) else node.orelse, scope)

    def s_For(self, node: ast.For, scope: Scope) -> None:
        for item in self.eval(node.iter, scope):
            self.store(node.target, item, scope)
            if not self.loop_body(node.body, scope):
                return
        self.block(node.orelse, scope)

    def s_While(self, node: ast.While, scope: Scope) -> None:
        while self.eval(node.test, scope):
            if not self.loop_body(node.body, scope):
                return
        self.block(node.orelse, scope)

    def loop_body(self, body: list[ast.stmt], scope: Scope) -> bool:
        """A loop's body once; False where it broke out of the loop (no `else` then)."""
        try:
            self.block(body, scope)
        except BreakSignal:
            return False
        except ContinueSignal:
            pass
        return True

    def s_Break(self, node: ast.Break, scope: Scope) -> None:
        raise BreakSignal()

    def s_Continue(self, node: ast.Continue, scope: Scope) -> None:
        raise ContinueSignal()

    def s_Pass(self, node: ast.stmt, scope: Scope) -> None:
        return None

    s_Global = s_Nonlocal = s_Pass  # read by Scope from the function's body

    def s_Expr(self, node: ast.Expr, scope: Scope) -> None:
        self.eval(node.value, scope)

    def s_Try(self, node: ast.Try, scope: Scope) -> None:
        try:
            try:
                self.block(node.body, scope)
            except Exception as exc:
                handler = self._handler(exc, node.handlers, scope)
                if handler is None:
                    raise
                if handler.name:
                    scope.assign(handler.name, exc)
                self.handling.append(exc)
                try:
                    self.block(handler.body, scope)
                finally:
                    self.handling.pop()
            else:
                self.block(node.orelse, scope)
        finally:
            self.block(node.finalbody, scope)

    def _handler(
        self, exc: Exception, handlers: list[ast.ExceptHandler], scope: Scope
    ) -> ast.ExceptHandler | None:
        if not catchable(exc):
            return None
        for handler in handlers:
            if handler.type is None or isinstance(exc, self.eval(handler.type, scope)):
                return handler
        return None

    def s_Raise(self, node: ast.Raise, scope: Scope) -> None:
        if node.exc is None:
            if not self.handling:
                raise RuntimeError("No active exception to reraise")
            raise self.handling[-1]
        exc = self.eval(node.exc, scope)
        if isinstance(exc, type) and issubclass(exc, BaseException):
            exc = exc()
        if not isinstance(exc, Exception):
            raise TypeError("exceptions must derive from BaseException")
        raise exc

    def s_Assert(self, node: ast.Assert, scope: Scope) -> None:
        if not self.eval(node.test, scope):
            message = () if node.msg is None else (self.eval(node.msg, scope),)
            raise AssertionError(*message)

    def s_Import(self, node: ast.Import, scope: Scope) -> None:
        for alias in node.names:
            scope.assign(alias.asname or alias.name, ModuleNames(alias.name))

    def s_ImportFrom(self, node: ast.ImportFrom, scope: Scope) -> None:
        for alias in node.names:
            scope.assign(alias.asname or alias.name, MODULES[node.module or ""][alias.name])
