"""The evaluator of small Python functions (app/deciding/code_interpreter.py): it gives what
Python gives on the programs it follows, and refuses, without evaluating, what reaches
beyond numbers, strings and containers."""

from __future__ import annotations

import ast
import copy
from typing import Any

import pytest

from app.deciding.code_answers import functions
from app.deciding.code_inputs import candidate_inputs
from app.deciding.code_interpreter import load_function
from app.deciding.code_names import Unsupported

PROGRAMS = {  # name: source, each compared with Python on the pool of inputs
    "fizzbuzz": "def fizzbuzz(n):\n    word = ('Fizz' if n % 3 == 0 else '') + "
    "('Buzz' if n % 5 == 0 else '')\n    return word or str(n)",
    "is_palindrome": "def is_palindrome(s):\n    letters = ''.join(s.split()).lower()\n"
    "    return letters == letters[::-1]",
    "fib": "from functools import lru_cache\n@lru_cache(maxsize=None)\ndef fib(n):\n"
    "    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)",
    "counts": "from collections import Counter, defaultdict\ndef counts(xs):\n"
    "    seen = defaultdict(int)\n    for x in xs:\n        seen[x] += 1\n"
    "    return sorted(Counter(xs).most_common(2)), dict(seen)",
    "by_length": "def by_length(words):\n"
    "    return sorted(words, key=lambda w: (len(w), w.lower()))",
    "describe": "def describe(x):\n    kind = 'int' if type(x) is int else 'v'\n"
    "    return f'{kind}={x!r:>8}|{len(str(x)):03d}' + '{:.2f}'.format(len(str(x)) / 3)",
    "safe_div": "def safe_div(a, b):\n    try:\n        return a / b\n"
    "    except ZeroDivisionError:\n"
    "        return None\n    except TypeError as exc:\n        raise ValueError('bad') from exc",
    "first_even": "def first_even(xs):\n    i = 0\n    while i < len(xs):\n"
    "        if xs[i] % 2 == 0:\n"
    "            break\n        i += 1\n    else:\n        return -1\n    return i",
    "running": "def running(xs):\n    total = 0\n    def add(x):\n        nonlocal total\n"
    "        total += x\n        return total\n    return [add(x) for x in xs]",
    "pairs": "def pairs(xs):\n    return {(a, b) for a in xs for b in xs if a < b if (a + b) % 2}",
    "index_of": "def index_of(xs):\n    return {x: i for i, x in enumerate(xs) if x == x}",
    "ends": "def ends(xs):\n    first, *middle, last = xs\n    return first, middle, last",
    "walrus": "def walrus(xs):\n    return [y for x in xs if (y := x * 2) > 3]",
    "hypot": "import math\ndef hypot(x):\n    return round(math.sqrt(abs(x)) + math.pi, 6)",
    "squash": "import re\ndef squash(s):\n    return re.sub(r'\\s+', '-', s.strip()).lower()",
    "letters": "import string\ndef letters(s):\n"
    "    return sum(c in string.ascii_lowercase for c in s)",
    "perms": "from itertools import permutations\ndef perms(xs):\n"
    "    return len(set(permutations(xs[:4])))",
    "zipped": "def zipped(a, b):\n    return [x + y for x, y in zip(a, b)] or any([a, b])",
    "mod": "def mod(a, b):\n    return a // b, a % b, -a // b, divmod(a, b)",
    "shout": "def shout(s):\n    return s.upper() + '!'",  # an AttributeError where s is no str
    "checked": "def checked(n):\n    assert n >= 0, 'negative'\n    return n ** 2",
    "counter": "COUNT = 0\ndef counter(n):\n    global COUNT\n    COUNT += n\n    return COUNT",
    "words": "def words(s, *, sep=None):\n    parts = s.split(sep)\n    parts.sort(key=str.lower)\n"
    "    del parts[1:2]\n    return parts",
    "gen": "def gen(xs):\n    return max((x for x in xs), default=None, key=abs)",
}


def _outcome(function: Any, args: list[Any]) -> tuple[str, Any]:
    try:
        return "returned", function(*copy.deepcopy(args))
    except Exception as exc:  # what Python raises, the evaluator must raise too
        return "raised", type(exc).__name__


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_evaluator_gives_what_python_gives(name: str):
    source = PROGRAMS[name]
    space: dict[str, Any] = {}
    exec(source, space)  # the test's own programs
    evaluated = load_function(source, name)
    parameters = functions(ast.parse(source))[name]
    returned = 0
    for args in candidate_inputs(parameters)[:60]:
        python = _outcome(space[name], args)
        ours = _outcome(evaluated, args)
        assert ours == python, (name, args)
        returned += python[0] == "returned"
    assert returned > 0, name  # each program returns on some input


REFUSED = {  # each reaches beyond the evaluator's Python: refused, never evaluated as Python
    "an import": "import os\ndef f(x):\n    return os.getcwd()",
    "a module it does not give": "from os import path\ndef f(x):\n    return x",
    "a dunder attribute": "def f(x):\n    return x.__class__.__subclasses__()",
    "a dunder name": "def f(x):\n    return __import__('os')",
    "a class": "class A:\n    pass\ndef f(x):\n    return A()",
    "a with block": "def f(x):\n    with open('out', 'w') as out:\n        out.write(x)",
    "a generator": "def f(x):\n    yield x",
    "a decorator": "def shout(g):\n    return g\n@shout\ndef f(x):\n    return x",
    "setting an attribute": "def f(x):\n    x.y = 1\n    return x",
    "an attribute off the whitelist": "def f(x):\n    return x.encode('utf-8')",
}


@pytest.mark.parametrize("why", sorted(REFUSED))
def test_a_program_beyond_the_evaluator_is_refused_before_it_is_evaluated(why: str):
    with pytest.raises(Unsupported):
        load_function(REFUSED[why], "f")


@pytest.mark.parametrize(
    "body",
    [
        "return open('written', 'w')",  # a builtin Python has and the evaluator does not give
        "return getattr(x, 'upper')()",
        "return eval('1 + 1')",
        "return '{0.__class__}'.format(x)",  # a template that reads into its value
        "return str.format('{0.real}', x)",
        "return type(f)",  # the evaluator's own function: not handed out
    ],
)
def test_what_only_the_evaluation_meets_is_refused_where_it_is_met(body: str, tmp_path):
    function = load_function(f"def f(x):\n    {body}", "f")
    with pytest.raises(Unsupported):
        function(1)
    assert not (tmp_path / "written").exists()


def test_a_programs_except_catches_its_errors_never_the_evaluators():
    catching = (
        "def f(x):\n    try:\n        return type(f)\n    except Exception:\n        return 1"
    )
    with pytest.raises(Unsupported):
        load_function(catching, "f")(1)
    assert load_function("def f(x):\n    try:\n        return 1 / x\n    except:\n"
                         "        return 'zero'", "f")(0) == "zero"  # fmt: skip


def test_huge_results_are_refused_before_they_are_made():
    with pytest.raises(MemoryError):
        load_function("def f(x):\n    return 'a' * 10 ** 9", "f")(1)
    with pytest.raises(MemoryError):
        load_function("def f(x):\n    return 7 ** 10 ** 9", "f")(1)
    with pytest.raises(RecursionError):
        load_function("def f(x):\n    return f(x + 1)", "f")(1)


def test_a_missing_function_is_said_so():
    with pytest.raises(LookupError):
        load_function("def g(x):\n    return x\nf = 3", "f")
