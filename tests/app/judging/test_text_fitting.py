"""Cutting long texts from the middle so that the prompt fits its budget."""

from __future__ import annotations

import random
import re

import pytest

from app.judging.prompt_fitting import CUT_MARK, cut_middle, fit_texts

MARK = re.compile(r"\n\[\.\.\. (\d+) characters cut \.\.\.\]\n")


def numbered(n: int) -> str:
    """A text whose every position is recognisable: '0000 0001 0002 ...' cut to n chars."""
    return "".join(f"{i:04d} " for i in range(n // 5 + 1))[:n]


def split_cut(result: str) -> tuple[str, int, str]:
    match = MARK.search(result)
    assert match, result
    return result[: match.start()], int(match.group(1)), result[match.end() :]


# --------------------------------------------------------------------------- cut_middle


@pytest.mark.parametrize("length", [0, 1, 10, 99, 100])
def test_short_text_untouched(length: int) -> None:
    text = numbered(length)
    assert cut_middle(text, 100) is text


@pytest.mark.parametrize(("length", "limit"), [(101, 100), (200, 100), (5000, 1000), (10**5, 64)])
def test_cut_keeps_head_and_tail_and_marks_the_cut(length: int, limit: int) -> None:
    text = numbered(length)
    result = cut_middle(text, limit)
    assert len(result) <= limit
    head, removed, tail = split_cut(result)
    assert text.startswith(head) and head
    assert text.endswith(tail) and tail
    assert len(head) + removed + len(tail) == len(text)  # the mark counts what was removed
    assert abs(len(head) - len(tail)) <= 1  # the cut is in the middle
    assert len(result) >= limit - 1  # and no more is cut than needed


def test_cut_counts_the_removed_characters() -> None:
    text = "H" * 50 + "x" * 100 + "T" * 50
    result = cut_middle(text, 100)
    assert result == "H" * 35 + CUT_MARK.format(n=130) + "T" * 35


def test_limit_below_the_mark_keeps_two_characters() -> None:
    """A limit smaller than the mark cannot be met; the result keeps one char each side."""
    text = numbered(300)
    result = cut_middle(text, 10)
    head, removed, tail = split_cut(result)
    assert (head, tail) == (text[0], text[-1])
    assert removed == 298


# --------------------------------------------------------------------------- fit_texts


def test_fit_texts_short_texts_untouched() -> None:
    texts = ["question", "", "answer one", "answer two"]
    assert fit_texts(texts, 1000) == texts
    assert fit_texts(texts, sum(len(t) for t in texts)) == texts
    assert fit_texts(texts, None) == texts


def test_fit_texts_cuts_only_the_long_one() -> None:
    question, answer = "Summarise this article.", numbered(5000)
    fitted = fit_texts([question, "", answer], 1000)
    assert fitted[0] == question
    assert fitted[1] == ""
    assert sum(len(t) for t in fitted) <= 1000
    head, _, tail = split_cut(fitted[2])
    assert answer.startswith(head) and answer.endswith(tail)
    assert len(fitted[2]) >= 1000 - len(question) - 1  # uses the room it has


def test_fit_texts_cuts_the_longest_first() -> None:
    texts = [numbered(300), numbered(2000), numbered(700)]
    fitted = fit_texts(texts, 2000)
    assert sum(len(t) for t in fitted) <= 2000
    assert fitted[0] == texts[0]
    assert fitted[2] == texts[2]
    assert MARK.search(fitted[1])


def test_fit_texts_several_long_texts_share_the_budget() -> None:
    texts = [numbered(3000), numbered(3000), numbered(3000)]
    fitted = fit_texts(texts, 1500)
    assert sum(len(t) for t in fitted) <= 1500
    assert all(MARK.search(t) for t in fitted)
    assert max(len(t) for t in fitted) - min(len(t) for t in fitted) <= 1


def test_fit_texts_random_budgets() -> None:
    rng = random.Random(3)
    for _ in range(500):
        texts = [
            numbered(rng.choice([0, 5, 50, 300, 2000, 9000])) for _ in range(rng.randint(1, 7))
        ]
        budget = rng.randint(60 * len(texts), 12000)
        fitted = fit_texts(texts, budget)
        assert len(fitted) == len(texts)
        assert sum(len(t) for t in fitted) <= budget, (budget, [len(t) for t in texts])
        for original, result in zip(texts, fitted):
            if result != original:
                head, removed, tail = split_cut(result)
                assert len(head) + removed + len(tail) == len(original)
                assert original.startswith(head) and original.endswith(tail)
        if sum(len(t) for t in texts) <= budget:
            assert fitted == texts
