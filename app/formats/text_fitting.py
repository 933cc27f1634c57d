"""Keep long inputs inside the model's context by cutting texts from the middle.

The start of a text states the task and its end usually holds the conclusion,
so the middle goes first (as Auto-J does for long queries). The cut is marked,
so the judge sees that something is missing.
"""

from __future__ import annotations

from collections.abc import Sequence

CUT_MARK = "\n[... {n} characters cut ...]\n"


def cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    # The mark counts the characters really removed; sized for the widest count it can show.
    keep = max(limit - len(CUT_MARK.format(n=len(text))), 2)
    mark = CUT_MARK.format(n=len(text) - keep)
    head = keep // 2
    return text[:head] + mark + text[len(text) - (keep - head) :]


def fit_texts(texts: Sequence[str], budget: int | None) -> list[str]:
    """Shorten the longest texts until the total length fits `budget` characters."""
    if budget is None or sum(len(t) for t in texts) <= budget:
        return list(texts)
    limits = [len(t) for t in texts]
    while sum(limits) > budget:
        longest = max(range(len(limits)), key=limits.__getitem__)
        others = sum(limits) - limits[longest]
        second = max((v for i, v in enumerate(limits) if i != longest), default=0)
        limits[longest] = max(budget - others, second, budget // (2 * len(limits)))
        if sum(limits) > budget and limits[longest] == second:
            share = budget // len(limits)
            limits = [min(v, share) for v in limits]
            break
    return [cut_middle(t, limit) for t, limit in zip(texts, limits)]


PROMPT_OVERHEAD_TOKENS = 1300  # instructions and 10 criteria; the rest is for the item
CHARS_PER_TOKEN = 3  # conservative for English text


def input_budget_chars(n_ctx: int, reply_tokens: int) -> int:
    """How many characters of question, reference and answers fit the context, for
    backends that cannot count tokens (a conservative guess)."""
    return max(1000, (n_ctx - reply_tokens - PROMPT_OVERHEAD_TOKENS) * CHARS_PER_TOKEN)


def scaled_budget(chars: int, item_tokens: int, room_tokens: int) -> int:
    """A character budget that should bring `item_tokens` (for `chars` characters) down to
    `room_tokens`, with a little slack for tokens that cost more characters when cut."""
    if item_tokens <= 0:
        return chars
    return max(200, int(chars * room_tokens / item_tokens * 0.95))
