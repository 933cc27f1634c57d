"""The scopes and functions of a program that app/deciding/code_interpreter.py evaluates:
names looked up as Python does (the call, the functions around it, the top level, then
the whitelisted builtins), and the program's functions as Python callables, so that
`sorted(key=...)` or `map` can call them."""

from __future__ import annotations

import ast
import builtins
import inspect
from typing import Any, Protocol

from app.deciding.code_names import BUILTINS, Unsupported

MAX_DEPTH = 300  # nested calls of the program's own functions
N = ast


class Evaluating(Protocol):
    """What a Function needs of the evaluator (app/deciding/code_interpreter.Evaluator)."""

    depth: int

    def eval(self, node: ast.expr, scope: Scope) -> Any: ...

    def block(self, body: list[ast.stmt], scope: Scope) -> None: ...


class Scope:
    """The names of one function call, comprehension or the program's top level."""

    def __init__(
        self,
        names: dict[str, Any],
        parent: Scope | None,
        declared: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset()),
    ):
        self.names = names
        self.parent = parent
        self.declared_global, self.declared_nonlocal = declared  # by the function's body

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        if name in BUILTINS:
            return BUILTINS[name]
        if hasattr(builtins, name):  # Python has it, the evaluator does not follow it
            raise Unsupported(f"the builtin '{name}'")
        raise NameError(f"name {name!r} is not defined")

    def assign(self, name: str, value: Any) -> None:
        self._holder(name).names[name] = value

    def delete(self, name: str) -> None:
        del self._holder(name).names[name]

    def _holder(self, name: str) -> Scope:
        if name in self.declared_global:
            return self.top()
        if name in self.declared_nonlocal:
            scope = self.parent
            while scope is not None and scope.parent is not None:
                if name in scope.names:
                    return scope
                scope = scope.parent
        return self

    def top(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


def _declarations(node: ast.AST | None) -> tuple[frozenset[str], frozenset[str]]:
    """The names a function's own body declares global and nonlocal."""
    if not isinstance(node, N.FunctionDef):
        return frozenset(), frozenset()
    found: dict[type, set[str]] = {N.Global: set(), N.Nonlocal: set()}
    pending = list(node.body)
    while pending:
        child = pending.pop()
        if isinstance(child, N.Global | N.Nonlocal):
            found[type(child)].update(child.names)
        elif not isinstance(child, N.FunctionDef | N.Lambda):
            pending.extend(ast.iter_child_nodes(child))
    return frozenset(found[N.Global]), frozenset(found[N.Nonlocal])


class Function:
    """A function or lambda of the program: callable like a Python one (so `sorted(key=...)`
    and `map` can call it), evaluated by the Evaluator."""

    def __init__(self, node: ast.FunctionDef | ast.Lambda, scope: Scope, evaluator: Evaluating):
        self.node = node
        self.scope = scope
        self.evaluator = evaluator
        self.name = getattr(node, "name", "<lambda>")
        self.signature = _signature(node.args, scope, evaluator)
        self.declared = _declarations(node)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        local = Scope(dict(bound.arguments), self.scope, self.declared)
        evaluator = self.evaluator
        if evaluator.depth >= MAX_DEPTH:
            raise RecursionError("maximum recursion depth exceeded")
        evaluator.depth += 1
        try:
            if isinstance(self.node, N.Lambda):
                return evaluator.eval(self.node.body, local)
            evaluator.block(self.node.body, local)
        except ReturnSignal as done:
            return done.value
        finally:
            evaluator.depth -= 1
        return None

    def __repr__(self) -> str:
        return f"<function {self.name}>"


def _signature(args: ast.arguments, scope: Scope, evaluator: Evaluating) -> inspect.Signature:
    """The parameters of a definition, its defaults evaluated where it is defined."""
    kind = inspect.Parameter
    positional = [(a, kind.POSITIONAL_ONLY) for a in args.posonlyargs]
    positional += [(a, kind.POSITIONAL_OR_KEYWORD) for a in args.args]
    defaults = [evaluator.eval(d, scope) for d in args.defaults]
    first_default = len(positional) - len(defaults)
    parameters = [
        kind(a.arg, k, default=defaults[n - first_default] if n >= first_default else kind.empty)
        for n, (a, k) in enumerate(positional)
    ]
    if args.vararg:
        parameters.append(kind(args.vararg.arg, kind.VAR_POSITIONAL))
    for a, default in zip(args.kwonlyargs, args.kw_defaults):
        value = kind.empty if default is None else evaluator.eval(default, scope)
        parameters.append(kind(a.arg, kind.KEYWORD_ONLY, default=value))
    if args.kwarg:
        parameters.append(kind(args.kwarg.arg, kind.VAR_KEYWORD))
    return inspect.Signature(parameters)


class ReturnSignal(BaseException):
    def __init__(self, value: Any) -> None:
        self.value = value


class BreakSignal(BaseException):
    pass


class ContinueSignal(BaseException):
    pass


def catchable(exc: BaseException) -> bool:
    """Whether a program's `except` may catch `exc`: a builtin exception (never the
    evaluator's own signals, Unsupported or the sandbox's time-out)."""
    return isinstance(exc, Exception) and type(exc).__module__ == "builtins"
