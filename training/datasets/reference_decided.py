"""Pairs whose reference answer decides them: a labelled set written by this code.

    python -m training.datasets.reference_decided [--out DIR]

No labelled data has requests with one checkable answer, a reference, and one answer
that agrees with it beside one that does not; the vicuna_eval pairs reward detail in
open-ended answers. So the set is generated: requests whose right answer is computed
here (percentages, arithmetic, unit conversions, weekdays, strings, sorting, small
functions with a stated behaviour) or taken from short tables written for this module
(capitals that are not the largest city, element symbols, greetings in three
languages). Each pair holds one answer that agrees with the reference and one that
does not (a plausible mistake, a buggy function, another city or language), and the
label is the agreeing one.

How the two are written varies so nothing but agreement with the reference tells them
apart: half the pairs set a polished, confident wrong answer against a terse right
one, a quarter both elaborate, a quarter a terse wrong answer against an elaborate
right one; the right answer is A or B at random. The reference is worded apart from
the right answer (a different sentence; another correct implementation).

Rows go to `train.jsonl` and `test.jsonl` (30 % of requests, by a hash of the request),
in PocketJudge's own layout with `label.winner`. The fits (training/decision/fit.py, through
its cache of reads, and training/decision/shift_fit.py) see only `train.jsonl`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "runs" / "reference-decided"
TEST_SHARE = 0.3
SEED = 42


@dataclass(frozen=True)
class Case:
    """One request with its reference, the right result and a wrong one (plain text)."""

    family: str
    question: str
    reference: str
    right: str
    wrong: str


def percent_cases(rng: random.Random) -> Iterator[Case]:
    for _ in range(30):
        p = rng.choice([5, 10, 12, 15, 20, 25, 30, 40, 60, 75])
        n = rng.choice([40, 60, 80, 120, 160, 200, 240, 300, 360, 480])
        value = n * p // 100 if n * p % 100 == 0 else n * p / 100
        wrong = rng.choice([n * p / 10, n - p, value + p, n / p if n % p == 0 else value * 2])
        if wrong == value:
            wrong = value + 1
        yield Case("percent", f"What is {p}% of {n}?", f"{p}% of {n} is {_num(value)}.",
                   _num(value), _num(wrong))  # fmt: skip


def arithmetic_cases(rng: random.Random) -> Iterator[Case]:
    things = [("box", "apples"), ("crate", "bottles"), ("pack", "pencils"), ("bag", "marbles")]
    for _ in range(30):
        holder, item = rng.choice(things)
        a, b, c = rng.randint(3, 12), rng.randint(2, 9), rng.randint(1, 9)
        right = a * b + c
        wrong = rng.choice([a * (b + c), a + b + c, a * b - c, (a + c) * b])
        wrong = wrong if wrong != right else right + a
        question = (
            f"A {holder} holds {a} {item}. How many {item} are there in {b} full {holder}es "
            f"and {c} loose {item}?"
            if holder == "box"
            else f"A {holder} holds {a} {item}. How many {item} are there in {b} full "
            f"{holder}s and {c} loose {item}?"
        )
        yield Case("arithmetic", question, f"There are {right} {item} in all.", str(right),
                   str(wrong))  # fmt: skip


UNITS = [
    ("minutes", "hours", 60, [100, 30]),
    ("seconds", "minutes", 60, [100, 10]),
    ("grams", "kilograms", 1000, [100, 10]),
    ("centimetres", "metres", 100, [1000, 10]),
    ("millimetres", "centimetres", 10, [100, 1000]),
    ("hours", "days", 24, [12, 60]),
]


def unit_cases(rng: random.Random) -> Iterator[Case]:
    for small, large, factor, mistakes in UNITS:
        for _ in range(4):
            k = rng.randint(2, 15)
            right, wrong = k * factor, k * rng.choice(mistakes)
            yield Case("units", f"How many {small} are there in {k} {large}?",
                       f"{k} {large} make {right} {small}.", f"{right} {small}",
                       f"{wrong} {small}")  # fmt: skip


def weekday_cases(rng: random.Random) -> Iterator[Case]:
    for _ in range(24):
        day = dt.date(1990, 1, 1) + dt.timedelta(days=rng.randint(0, 40 * 365))
        right = day.strftime("%A")
        wrong = (day + dt.timedelta(days=rng.choice([1, 2, 3, 4, 5, 6]))).strftime("%A")
        told = f"{day.strftime('%B')} {day.day}, {day.year}"
        yield Case("weekday", f"What day of the week was {told}?", f"{told} was a {right}.",
                   right, wrong)  # fmt: skip


WORDS = ["planet", "garden", "stream", "lantern", "market", "picture", "kitchen", "bottle",
         "window", "shelter", "journey", "harvest", "rocket", "pillow", "canvas"]  # fmt: skip


def string_cases(rng: random.Random) -> Iterator[Case]:
    for word in WORDS:
        reverse = word[::-1]
        swapped = _swap_two(reverse)
        yield Case("strings", f"Write the word '{word}' backwards.",
                   f"Backwards, '{word}' is '{reverse}'.", reverse, swapped)  # fmt: skip
        letter = rng.choice(sorted(set(word)))
        count = word.count(letter)
        yield Case("strings", f"How many times does the letter '{letter}' appear in '{word}'?",
                   f"'{letter}' appears {count} time{'s' if count > 1 else ''} in '{word}'.",
                   str(count), str(count + 1))  # fmt: skip


def sorting_cases(rng: random.Random) -> Iterator[Case]:
    for _ in range(20):
        numbers = rng.sample(range(1, 99), rng.randint(5, 7))
        right = sorted(numbers)
        wrong = list(right)
        i = rng.randrange(len(wrong) - 1)
        wrong[i], wrong[i + 1] = wrong[i + 1], wrong[i]
        shown = ", ".join(map(str, numbers))
        yield Case("sorting", f"Sort these numbers from smallest to largest: {shown}.",
                   "In order: " + ", ".join(map(str, right)) + ".",
                   ", ".join(map(str, right)), ", ".join(map(str, wrong)))  # fmt: skip


# Each: the request, a reference implementation, a right one and a buggy one.
CODE = [
    ("second_largest", "returns the second largest distinct value of a list of numbers, or None "
     "when there are fewer than two distinct values",
     "def {f}(xs):\n    distinct = sorted(set(xs))\n    return distinct[-2] if len(distinct) > 1 "
     "else None",
     "def {f}(values):\n    unique = sorted(set(values), reverse=True)\n    if len(unique) < 2:\n"
     "        return None\n    return unique[1]",
     "def {f}(values):\n    values.sort()\n    return values[-2]"),
    ("sum_of_evens", "returns the sum of the even numbers in a list of integers",
     "def {f}(xs):\n    return sum(x for x in xs if x % 2 == 0)",
     "def {f}(numbers):\n    total = 0\n    for n in numbers:\n        if n % 2 == 0:\n"
     "            total += n\n    return total",
     "def {f}(numbers):\n    total = 0\n    for n in numbers:\n        if n % 2:\n"
     "            total += n\n    return total"),
    ("count_vowels", "counts the vowels (a, e, i, o, u, upper or lower case) in a string",
     "def {f}(text):\n    return sum(1 for ch in text.lower() if ch in 'aeiou')",
     "def {f}(s):\n    vowels = set('aeiouAEIOU')\n    return len([c for c in s if c in vowels])",
     "def {f}(s):\n    return len([c for c in s if c in 'aeiou'])"),
    ("is_palindrome", "tells whether a string reads the same backwards, ignoring case and spaces",
     "def {f}(text):\n    cleaned = text.replace(' ', '').lower()\n    return cleaned == "
     "cleaned[::-1]",
     "def {f}(s):\n    letters = ''.join(s.split()).lower()\n    return letters == letters[::-1]",
     "def {f}(s):\n    return s == s[::-1]"),
    ("factorial", "returns n! for a non-negative integer n (0! is 1)",
     "def {f}(n):\n    result = 1\n    for k in range(2, n + 1):\n        result *= k\n"
     "    return result",
     "def {f}(n):\n    if n == 0:\n        return 1\n    return n * {f}(n - 1)",
     "def {f}(n):\n    result = 1\n    for k in range(1, n):\n        result *= k\n"
     "    return result"),
    ("mean_or_none", "returns the average of a list of numbers, or None for an empty list",
     "def {f}(xs):\n    return sum(xs) / len(xs) if xs else None",
     "def {f}(values):\n    if not values:\n        return None\n    return sum(values) / "
     "len(values)",
     "def {f}(values):\n    return sum(values) / len(values)"),
    ("dedupe", "removes duplicates from a list and keeps the first occurrence of each item in "
     "its original order",
     "def {f}(xs):\n    return list(dict.fromkeys(xs))",
     "def {f}(items):\n    seen = set()\n    out = []\n    for x in items:\n        if x not in "
     "seen:\n            seen.add(x)\n            out.append(x)\n    return out",
     "def {f}(items):\n    return list(set(items))"),
    ("fizzbuzz", "returns 'FizzBuzz' for multiples of 15, 'Fizz' for other multiples of 3, "
     "'Buzz' for other multiples of 5 and the number as a string otherwise",
     "def {f}(n):\n    if n % 15 == 0:\n        return 'FizzBuzz'\n    if n % 3 == 0:\n"
     "        return 'Fizz'\n    if n % 5 == 0:\n        return 'Buzz'\n    return str(n)",
     "def {f}(n):\n    word = ('Fizz' if n % 3 == 0 else '') + ('Buzz' if n % 5 == 0 else '')\n"
     "    return word or str(n)",
     "def {f}(n):\n    if n % 3 == 0:\n        return 'Fizz'\n    if n % 5 == 0:\n"
     "        return 'Buzz'\n    if n % 15 == 0:\n        return 'FizzBuzz'\n    return str(n)"),
]  # fmt: skip
CODE_ASKS = [
    "Write a Python function `{f}` that {what}.",
    "Implement `{f}` in Python: it {what}.",
    "I need a Python function named {f} that {what}. Can you write it?",
    "Give me Python code for a function {f} which {what}.",
]


def code_cases(rng: random.Random) -> Iterator[Case]:
    for name, what, reference, right, buggy in CODE:
        for ask in CODE_ASKS:
            f = rng.choice([name, name + "_of", "get_" + name, name.replace("_", "")])
            yield Case("code", ask.format(f=f, what=what), reference.format(f=f),
                       right.format(f=f), buggy.format(f=f))  # fmt: skip


CAPITALS = [
    ("Australia", "Canberra", "Sydney"), ("Canada", "Ottawa", "Toronto"),
    ("Brazil", "Brasília", "Rio de Janeiro"), ("Turkey", "Ankara", "Istanbul"),
    ("Switzerland", "Bern", "Zurich"), ("New Zealand", "Wellington", "Auckland"),
    ("Nigeria", "Abuja", "Lagos"), ("Morocco", "Rabat", "Casablanca"),
    ("Vietnam", "Hanoi", "Ho Chi Minh City"), ("Pakistan", "Islamabad", "Karachi"),
    ("India", "New Delhi", "Mumbai"), ("the United States", "Washington, D.C.", "New York City"),
    ("China", "Beijing", "Shanghai"), ("Myanmar", "Naypyidaw", "Yangon"),
    ("Kazakhstan", "Astana", "Almaty"), ("Tanzania", "Dodoma", "Dar es Salaam"),
    ("Scotland", "Edinburgh", "Glasgow"), ("Germany", "Berlin", "Munich"),
    ("Italy", "Rome", "Milan"), ("Spain", "Madrid", "Barcelona"),
    ("the United Arab Emirates", "Abu Dhabi", "Dubai"), ("Ecuador", "Quito", "Guayaquil"),
    ("Cameroon", "Yaoundé", "Douala"), ("Belize", "Belmopan", "Belize City"),
]  # fmt: skip
ELEMENTS = [
    ("gold", "Au", "Ag"), ("silver", "Ag", "Si"), ("iron", "Fe", "Ir"), ("sodium", "Na", "So"),
    ("potassium", "K", "P"), ("lead", "Pb", "Ld"), ("tin", "Sn", "Ti"), ("mercury", "Hg", "Me"),
    ("copper", "Cu", "Co"), ("tungsten", "W", "Tu"),
]  # fmt: skip
PHRASES = {  # English: French, Spanish, German
    "good morning": ("Bonjour", "Buenos días", "Guten Morgen"),
    "thank you": ("Merci", "Gracias", "Danke"),
    "good night": ("Bonne nuit", "Buenas noches", "Gute Nacht"),
    "please": ("S'il vous plaît", "Por favor", "Bitte"),
    "see you tomorrow": ("À demain", "Hasta mañana", "Bis morgen"),
    "I love you": ("Je t'aime", "Te quiero", "Ich liebe dich"),
    "the cat": ("Le chat", "El gato", "Die Katze"),
    "the red house": ("La maison rouge", "La casa roja", "Das rote Haus"),
    "water": ("L'eau", "El agua", "Das Wasser"),
    "happy birthday": ("Joyeux anniversaire", "Feliz cumpleaños", "Alles Gute zum Geburtstag"),
}
LANGUAGES = ("French", "Spanish", "German")


def fact_cases(rng: random.Random) -> Iterator[Case]:
    for country, capital, city in CAPITALS:
        yield Case("capitals", f"What is the capital of {country}?",
                   f"The capital of {country} is {capital}.", capital, city)  # fmt: skip
    for element, symbol, other in ELEMENTS:
        yield Case("elements", f"What is the chemical symbol for {element}?",
                   f"The symbol of {element} is {symbol}.", symbol, other)  # fmt: skip
    for english, said in PHRASES.items():
        for n, language in enumerate(LANGUAGES):
            other = said[(n + rng.choice([1, 2])) % 3]
            yield Case("translation", f"Translate '{english}' into {language}.",
                       f"In {language}, '{english}' is '{said[n]}'.", said[n], other)  # fmt: skip


FAMILIES: list[Callable[[random.Random], Iterator[Case]]] = [
    percent_cases,
    arithmetic_cases,
    unit_cases,
    weekday_cases,
    string_cases,
    sorting_cases,
    code_cases,
    fact_cases,
]

TERSE = ["{v}", "{v}.", "It is {v}.", "The answer is {v}."]
POLISHED = [
    "Great question! {why} The answer is **{v}**. I hope this helps - let me know if you "
    "would like more detail!",
    "Certainly! Here is a clear, step-by-step answer.\n\n{why}\n\n**Answer: {v}**\n\nThis is a "
    "common question, and the result above is the one you can rely on.",
    "Sure. {why}\n\nSo, to put it simply: **{v}**. Feel free to ask if anything is unclear.",
]
WHY = {
    "percent": "To find a percentage of a number, multiply the number by the percentage and "
    "divide by 100.",
    "arithmetic": "Multiply the number in each full container by the number of containers, "
    "then add the loose ones.",
    "units": "Multiply by the number of smaller units in one larger unit.",
    "weekday": "Counting the days from a known date gives the weekday.",
    "strings": "Reading the word letter by letter gives the result.",
    "sorting": "Comparing the numbers one by one puts them in order.",
    "capitals": "The capital is the seat of the national government.",
    "elements": "Chemical symbols come from the element's name, sometimes its Latin name.",
    "translation": "This is the usual everyday way to say it.",
}


def written(case: Case, value: str, polished: bool, rng: random.Random) -> str:
    """An answer giving `value`, terse or polished (code: the function, bare or presented)."""
    if case.family == "code":
        if not polished:
            return value
        return (
            "Here is a clean, efficient and well-tested solution:\n\n```python\n"
            f"{value}\n```\n\nIt handles every case described in the request and runs in "
            "linear time. Let me know if you need tests!"
        )
    template = rng.choice(POLISHED if polished else TERSE)
    return template.format(v=value, why=WHY[case.family])


def pair_row(case: Case, index: int, rng: random.Random) -> dict:
    """The labelled pair of `case`: the right answer at A or B, styles drawn as the module
    says."""
    draw = rng.random()
    polished_right, polished_wrong = (
        (False, True) if draw < 0.5 else (True, True) if draw < 0.75 else (True, False)
    )
    right = written(case, case.right, polished_right, rng)
    wrong = written(case, case.wrong, polished_wrong, rng)
    right_first = rng.random() < 0.5
    answers = [right, wrong] if right_first else [wrong, right]
    return {
        "id": f"refdec-{index:04d}",
        "question": case.question,
        "answers": answers,
        "reference": case.reference,
        "label": {"winner": "A" if right_first else "B"},
        "family": case.family,
        "style": {"right_polished": polished_right, "wrong_polished": polished_wrong},
    }


def is_test(question: str) -> bool:
    digest = hashlib.sha256(question.encode("utf-8")).digest()
    return digest[0] / 256 < TEST_SHARE


def build(seed: int = SEED) -> tuple[list[dict], list[dict]]:
    """The train and test rows (distinct requests; a request never in both)."""
    rng = random.Random(seed)
    cases = [case for family in FAMILIES for case in family(rng)]
    seen: set[str] = set()
    rows = []
    for case in cases:
        if case.question in seen or case.right == case.wrong:
            continue
        seen.add(case.question)
        rows.append(pair_row(case, len(rows), rng))
    train = [r for r in rows if not is_test(r["question"])]
    test = [r for r in rows if is_test(r["question"])]
    return train, test


def _swap_two(text: str) -> str:
    """`text` with its first two neighbouring different letters after the second swapped."""
    for i in range(2, len(text) - 1):
        if text[i] != text[i + 1]:
            return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    return text[::-1]


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.datasets.reference_decided")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    train, test = build()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("test", test)):
        with (args.out / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(train)} train and {len(test)} test pairs in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
