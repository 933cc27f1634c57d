"""The inputs a reference function and the answers' functions are called with.

No request states its test cases in a form to run, so the inputs are a fixed pool of small
values of the types such functions take (integers with zero, negatives and multiples of
3, 5 and 15; floats; strings with spaces, capitals and vowels; lists with duplicates,
empty and one-item lists), crossed for two or three parameters. The reference is called
on each and an input is kept where it returns: that is the behaviour the request asked
for, and an answer is compared with it there alone.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

INTEGERS = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 12, 15, 20, 30, 45, -1, -4]
FLOATS = [0.5, 2.5, -1.25, 3.0]
STRINGS = ["", "a", "Racecar", "never odd or even", "Hello World", "abcab", "AEIOU xyz",
           "Python", "a man a plan", "10", "Was it a car or a cat I saw"]  # fmt: skip
INTEGER_LISTS = [[], [1], [3, 1, 2], [5, 5, 3, 1], [2, 4, 6, 7], [1, 2, 2, 3, 1],
                 [-1, 0, 4], [7, 7], [10, 3, 8, 3, 1], [0, -2, -2, 9]]  # fmt: skip
STRING_LISTS = [[], ["b", "a", "b"], ["apple", "Banana", "cherry"], ["x"]]
FLOAT_LISTS = [[1.5, 2.5], [0.1, 0.2, 0.3]]
POOL: list[Any] = [*INTEGERS, *FLOATS, *STRINGS, *INTEGER_LISTS, *STRING_LISTS, *FLOAT_LISTS]
MAX_TRIED = 160  # argument tuples offered to the reference (two or three parameters)
SEED = 15


def candidate_inputs(parameters: int) -> list[list[Any]]:
    """The argument lists tried for a function of `parameters` positional parameters, the
    same every time (one: the whole pool; more: a fixed sample of its crossings, small
    values of one type across parameters first)."""
    if parameters == 1:
        return [[value] for value in POOL]
    alike = [list(args) for kind in (INTEGERS, STRINGS, INTEGER_LISTS)
             for args in itertools.product(kind[:8], repeat=parameters)]  # fmt: skip
    mixed = [list(args) for args in itertools.product(POOL, repeat=parameters)]
    rng = random.Random(SEED)
    rng.shuffle(alike)
    rng.shuffle(mixed)
    half = MAX_TRIED // 2
    return alike[:half] + mixed[:half]
