"""The expressions of a program that app/deciding/code_interpreter.py evaluates: operators
(huge results refused before they are made), calls, whitelisted attributes, items,
literals, f-strings, comprehensions and lambdas."""

from __future__ import annotations

import ast
import operator
from collections.abc import Iterator
from typing import Any

from app.deciding.code_names import Unsupported, attribute
from app.deciding.code_scope import Function, Scope

MAX_ITEMS = 10_000_000  # a repeated sequence, at most
MAX_BITS = 1_000_000  # an integer power or shift, at most (about)
N = ast
BINARY = {N.Add: operator.add, N.Sub: operator.sub, N.Mult: operator.mul, N.Div: operator.truediv,
          N.FloorDiv: operator.floordiv, N.Mod: operator.mod, N.Pow: operator.pow,
          N.LShift: operator.lshift, N.RShift: operator.rshift, N.BitOr: operator.or_,
          N.BitXor: operator.xor, N.BitAnd: operator.and_, N.MatMult: operator.matmul}  # fmt: skip
IN_PLACE = {N.Add: operator.iadd, N.Sub: operator.isub, N.Mult: operator.imul,
            N.Div: operator.itruediv, N.FloorDiv: operator.ifloordiv, N.Mod: operator.imod,
            N.Pow: operator.ipow, N.LShift: operator.ilshift, N.RShift: operator.irshift,
            N.BitOr: operator.ior, N.BitXor: operator.ixor, N.BitAnd: operator.iand,
            N.MatMult: operator.imatmul}  # fmt: skip
UNARY = {N.UAdd: operator.pos, N.USub: operator.neg, N.Not: operator.not_,
         N.Invert: operator.invert}  # fmt: skip
COMPARE = {N.Eq: operator.eq, N.NotEq: operator.ne, N.Lt: operator.lt, N.LtE: operator.le,
           N.Gt: operator.gt, N.GtE: operator.ge, N.Is: operator.is_, N.IsNot: operator.is_not,
           N.In: lambda a, b: a in b, N.NotIn: lambda a, b: a not in b}  # fmt: skip


def limited(op: type, left: Any, right: Any) -> None:
    """Raises MemoryError before an operation whose result would be huge (the sandbox's
    memory cap would stop it too, but slowly, and a power can spin for minutes)."""
    if op is N.Mult:
        for sequence, times in ((left, right), (right, left)):
            repeated = isinstance(sequence, str | bytes | list | tuple)
            if repeated and isinstance(times, int) and len(sequence) * times > MAX_ITEMS:
                raise MemoryError("a repeated sequence too large to evaluate")
    elif op in (N.Pow, N.LShift) and isinstance(left, int) and isinstance(right, int):
        bits = right if op is N.LShift else right * max(abs(left), 1).bit_length()
        if abs(left) > 1 and bits > MAX_BITS:
            raise MemoryError("an integer too large to evaluate")


class Expressions:
    """Evaluates the expressions of a checked program (the statements: code_interpreter)."""

    def eval(self, node: ast.expr, scope: Scope) -> Any:
        method = getattr(self, f"e_{type(node).__name__}", None)
        if method is None:
            raise Unsupported(f"{type(node).__name__} (line {getattr(node, 'lineno', '?')})")
        return method(node, scope)

    def e_Constant(self, node: ast.Constant, scope: Scope) -> Any:
        return node.value

    def e_Name(self, node: ast.Name, scope: Scope) -> Any:
        return scope.lookup(node.id)

    def e_BinOp(self, node: ast.BinOp, scope: Scope) -> Any:
        left, right = self.eval(node.left, scope), self.eval(node.right, scope)
        limited(type(node.op), left, right)
        return BINARY[type(node.op)](left, right)

    def e_UnaryOp(self, node: ast.UnaryOp, scope: Scope) -> Any:
        return UNARY[type(node.op)](self.eval(node.operand, scope))

    def e_BoolOp(self, node: ast.BoolOp, scope: Scope) -> Any:
        value: Any = None
        for operand in node.values:
            value = self.eval(operand, scope)
            if bool(value) is isinstance(node.op, N.Or):
                return value
        return value

    def e_Compare(self, node: ast.Compare, scope: Scope) -> bool:
        left = self.eval(node.left, scope)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator, scope)
            if not COMPARE[type(op)](left, right):
                return False
            left = right
        return True

    def e_IfExp(self, node: ast.IfExp, scope: Scope) -> Any:
        return self.eval(node.body if self.eval(node.test, scope) else node.orelse, scope)

    def e_NamedExpr(self, node: ast.NamedExpr, scope: Scope) -> Any:
        value = self.eval(node.value, scope)
        scope.assign(node.target.id, value)
        return value

    def e_Call(self, node: ast.Call, scope: Scope) -> Any:
        function = self.eval(node.func, scope)
        args = self.items(node.args, scope)
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self.eval(keyword.value, scope)
            if keyword.arg is None:
                kwargs.update(value)
            else:
                kwargs[keyword.arg] = value
        return function(*args, **kwargs)

    def e_Attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        return attribute(self.eval(node.value, scope), node.attr)

    def e_Subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        return self.eval(node.value, scope)[self.eval(node.slice, scope)]

    def e_Slice(self, node: ast.Slice, scope: Scope) -> slice:
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if part is None else self.eval(part, scope) for part in parts))

    def items(self, nodes: list[ast.expr], scope: Scope) -> list[Any]:
        """The values of a literal's or a call's items, starred ones spread."""
        found: list[Any] = []
        for item in nodes:
            if isinstance(item, N.Starred):
                found.extend(self.eval(item.value, scope))
            else:
                found.append(self.eval(item, scope))
        return found

    def e_List(self, node: ast.List, scope: Scope) -> list[Any]:
        return self.items(node.elts, scope)

    def e_Tuple(self, node: ast.Tuple, scope: Scope) -> tuple[Any, ...]:
        return tuple(self.items(node.elts, scope))

    def e_Set(self, node: ast.Set, scope: Scope) -> set[Any]:
        return set(self.items(node.elts, scope))

    def e_Dict(self, node: ast.Dict, scope: Scope) -> dict[Any, Any]:
        found: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                found.update(self.eval(value, scope))
            else:
                found[self.eval(key, scope)] = self.eval(value, scope)
        return found

    def e_JoinedStr(self, node: ast.JoinedStr, scope: Scope) -> str:
        return "".join(str(self.eval(part, scope)) for part in node.values)

    def e_FormattedValue(self, node: ast.FormattedValue, scope: Scope) -> str:
        value = self.eval(node.value, scope)
        value = {115: str, 114: repr, 97: ascii}.get(node.conversion, lambda v: v)(value)
        spec = "" if node.format_spec is None else self.eval(node.format_spec, scope)
        return format(value, spec)

    def e_Lambda(self, node: ast.Lambda, scope: Scope) -> Function:
        return Function(node, scope, self)  # type: ignore[arg-type]

    def e_ListComp(self, node: ast.ListComp, scope: Scope) -> list[Any]:
        return [self.eval(node.elt, inner) for inner in self.loops(node.generators, scope)]

    def e_SetComp(self, node: ast.SetComp, scope: Scope) -> set[Any]:
        return {self.eval(node.elt, inner) for inner in self.loops(node.generators, scope)}

    def e_GeneratorExp(self, node: ast.GeneratorExp, scope: Scope) -> Iterator[Any]:
        return (self.eval(node.elt, inner) for inner in self.loops(node.generators, scope))

    def e_DictComp(self, node: ast.DictComp, scope: Scope) -> dict[Any, Any]:
        return {
            self.eval(node.key, inner): self.eval(node.value, inner)
            for inner in self.loops(node.generators, scope)
        }

    def loops(self, generators: list[ast.comprehension], scope: Scope) -> Iterator[Scope]:
        """A comprehension's scope once per combination of its loops that passes its ifs
        (its first iterable evaluated where it stands, as Python does)."""
        inner = Scope({}, scope)
        first = iter(self.eval(generators[0].iter, scope))
        yield from self._loop(generators, 0, first, inner)

    def _loop(
        self, generators: list[ast.comprehension], at: int, values: Iterator[Any], inner: Scope
    ) -> Iterator[Scope]:
        loop = generators[at]
        for value in values:
            self.store(loop.target, value, inner)
            if not all(self.eval(test, inner) for test in loop.ifs):
                continue
            if at + 1 == len(generators):
                yield inner
            else:
                following = iter(self.eval(generators[at + 1].iter, inner))
                yield from self._loop(generators, at + 1, following, inner)

    def store(self, target: ast.expr, value: Any, scope: Scope) -> None:
        raise NotImplementedError  # code_interpreter.Evaluator's
