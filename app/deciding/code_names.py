"""What a program evaluated by app/deciding/code_interpreter.py may name: the builtins, the
standard modules and, per type, the attributes it can reach.

Everything here is pure: it computes on numbers, strings and containers and reaches no
file, process, network, import machinery or object internals (no attribute that starts
with "_", no `getattr`, `type` only for the types below, `str.format` only with plain
fields). A name that is not here makes the program unsupported, not wrong: the caller
then reads the reference as text (or runs real Python where the user turned that on).
"""

from __future__ import annotations

import bisect
import collections
import functools
import heapq
import itertools
import math
import re
import statistics
import string
import typing
from collections.abc import Callable
from typing import Any


class Unsupported(Exception):
    """The program uses Python this evaluator does not follow (not the program's fault)."""


def _print(*args: Any, **kwargs: Any) -> None:
    """`print`: what a function prints is not what it returns, so it goes nowhere."""


SAFE_TYPES = (
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    list,
    tuple,
    dict,
    set,
    frozenset,
    range,
    slice,
    type(None),
    collections.Counter,
    collections.defaultdict,
    collections.OrderedDict,
    collections.deque,
)


def _type(value: Any) -> type:
    """`type(value)` for the types above (a class of any other kind is not handed out)."""
    kind = type(value)
    if kind not in SAFE_TYPES:
        raise Unsupported(f"type() of a {kind.__name__}")
    return kind


def _format(template: str) -> Callable[..., str]:
    """`template.format`, refusing fields that reach into their values (`{0.attr}`,
    `{0[key]}`): a format string must not open a way to an object's internals."""
    for _, field, spec, _ in string.Formatter().parse(template):
        if field and ("." in field or "[" in field):
            raise Unsupported("str.format with a field that reads an attribute or an item")
        if spec and "{" in spec:
            _format(spec)
    return template.format


EXCEPTIONS = (
    Exception,
    ArithmeticError,
    AssertionError,
    IndexError,
    KeyError,
    LookupError,
    NotImplementedError,
    OverflowError,
    RecursionError,
    RuntimeError,
    StopIteration,
    TypeError,
    ValueError,
    ZeroDivisionError,
)

BUILTINS: dict[str, Any] = {
    **{kind.__name__: kind for kind in EXCEPTIONS},
    **{
        f.__name__: f
        for f in (
            abs,
            all,
            any,
            bin,
            bool,
            chr,
            dict,
            divmod,
            enumerate,
            filter,
            float,
            format,
            frozenset,
            hash,
            hex,
            int,
            isinstance,
            iter,
            len,
            list,
            map,
            max,
            min,
            next,
            oct,
            ord,
            range,
            repr,
            reversed,
            round,
            set,
            slice,
            sorted,
            str,
            sum,
            tuple,
            zip,
        )
    },
    "print": _print,
    "type": _type,
}


def _names(words: str) -> frozenset[str]:
    return frozenset(words.split())


def _public(module: Any, names: str = "") -> dict[str, Any]:
    """A module's names a program may use (all public ones, or those `names` lists)."""
    chosen = names.split() or [n for n in dir(module) if not n.startswith("_")]
    return {name: getattr(module, name) for name in chosen}


MODULES: dict[str, dict[str, Any]] = {
    "math": _public(math),
    "string": _public(
        string,
        (
            "ascii_letters ascii_lowercase ascii_uppercase digits hexdigits octdigits punctuation "
            "whitespace printable"
        ),
    ),
    "collections": _public(collections, "Counter defaultdict OrderedDict deque"),
    "functools": _public(functools, "reduce lru_cache cache"),  # as decorators: ignored
    "itertools": _public(
        itertools,
        (
            "accumulate chain combinations compress combinations_with_replacement count cycle "
            "dropwhile filterfalse groupby islice pairwise permutations product repeat starmap "
            "takewhile zip_longest"
        ),
    ),
    "heapq": _public(
        heapq, "heapify heappop heappush heappushpop heapreplace nlargest nsmallest merge"
    ),
    "bisect": _public(bisect, "bisect bisect_left bisect_right insort insort_left insort_right"),
    "re": _public(
        re,
        (
            "compile escape findall finditer fullmatch match search split sub subn IGNORECASE I "
            "MULTILINE M DOTALL S ASCII A"
        ),
    ),
    "statistics": _public(
        statistics,
        "fmean mean median median_high median_low mode multimode pstdev pvariance stdev variance",
    ),
    "typing": _public(
        typing, "Any Callable Dict Iterable Iterator List Optional Sequence Set Tuple Union"
    ),
}
CACHE_DECORATORS = _names("lru_cache cache")  # results only: the evaluator ignores them

_STR = _names(
    "capitalize casefold center count endswith expandtabs find format index isalnum isalpha "
    "isascii isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle "
    "isupper join ljust lower lstrip maketrans partition removeprefix removesuffix replace "
    "rfind rindex rjust rpartition rsplit rstrip split splitlines startswith strip swapcase "
    "title translate upper zfill"
)
_LIST = _names("append clear copy count extend index insert pop remove reverse sort")
_DICT = _names("clear copy fromkeys get items keys pop popitem setdefault update values")
_SET = _names(
    "add clear copy difference difference_update discard intersection intersection_update "
    "isdisjoint issubset issuperset pop remove symmetric_difference "
    "symmetric_difference_update union update"
)
_NUMBER = _names(
    "as_integer_ratio bit_count bit_length conjugate denominator imag is_integer numerator real"
)
# most specific first: an instance takes the names of the first kind it is
ATTRIBUTES: tuple[tuple[type, frozenset[str]], ...] = (
    (collections.Counter, _DICT | {"elements", "most_common", "subtract", "total"}),
    (
        collections.deque,
        _LIST - {"sort"} | {"appendleft", "extendleft", "maxlen", "popleft", "rotate"},
    ),
    (dict, _DICT),
    (str, _STR),
    (bytes, _names("decode hex")),
    (list, _LIST),
    (tuple, _names("count index")),
    (set, _SET),
    (
        frozenset,
        _SET
        - {
            "add",
            "clear",
            "discard",
            "pop",
            "remove",
            "update",
            "difference_update",
            "intersection_update",
            "symmetric_difference_update",
        },
    ),
    (bool, _NUMBER),
    (int, _NUMBER),
    (float, _NUMBER | {"fromhex", "hex"}),
    (complex, _names("conjugate imag real")),
    (range, _names("count index start step stop")),
    (
        re.Pattern,
        _names("findall finditer flags fullmatch groups match pattern search split sub subn"),
    ),
    (re.Match, _names("end group groupdict groups span start string")),
)
ATTRIBUTE_NAMES = frozenset().union(*(names for _, names in ATTRIBUTES), *MODULES.values())


def attribute(value: Any, name: str) -> Any:
    """`value.name` where the whitelist allows it, else Unsupported. A class of the types
    above gives its instances' names (`str.lower`, `dict.fromkeys`); a module its own."""
    if isinstance(value, ModuleNames):
        if name in value.names:
            return value.names[name]
        raise Unsupported(f"'{value.module}.{name}'")
    if name.startswith("_"):
        raise Unsupported(f"the attribute '{name}'")
    if not hasattr(value, name):  # the program's own mistake, as Python would say it
        raise AttributeError(f"'{type(value).__name__}' object has no attribute '{name}'")
    if name == "format":  # a template's fields could reach into its values: checked first
        if isinstance(value, str):
            return _format(value)
        raise Unsupported("format() other than a string's own")
    kind = value if isinstance(value, type) else type(value)
    for base, names in ATTRIBUTES:
        if issubclass(kind, base):
            if name not in names:
                break
            return getattr(value, name)
    raise Unsupported(f"'{kind.__name__}.{name}'")


class ModuleNames:
    """A standard module as a program sees it: the names MODULES gives it, nothing else."""

    def __init__(self, module: str) -> None:
        if module not in MODULES:
            raise Unsupported(f"import {module}")
        self.module = module
        self.names = MODULES[module]
