"""TokenTable on a toy vocabulary: which tokens keep a value valid, and what they commit to."""

from __future__ import annotations

import math

import numpy as np
import pytest

from models.backends.value_constraints import TokenTable, _consistent, entropy_of, softmax_over

VOCAB = [
    "1", "0", "10", '"', "A", '"A"', '",', "tie", '"t', "}", ", ", ":", " ",
    "2", "3", "4", "5", "6", "7", "8", "9", "B", '"B"', " 1", ": ", " {", "{", "[", "\n",
    "ie", "e", '"tie"', "1}", "10,", "7,", "100", "12", '"A",', "]", "x", "",
]  # fmt: skip
TEN = tuple(str(i) for i in range(1, 11))
VERDICTS = ('"A"', '"B"', '"tie"')


@pytest.fixture(scope="module")
def table() -> TokenTable:
    return TokenTable(VOCAB)


def ids_of(*pieces: str) -> set[int]:
    return {VOCAB.index(piece) for piece in pieces}


def commitments_by_piece(
    table: TokenTable, partial: str, candidates: tuple[str, ...]
) -> dict[str, tuple[str, ...]]:
    ids, consistent = table.commitments(partial, candidates)
    assert len(ids) == len(consistent)
    assert len(set(ids.tolist())) == len(ids), "a token is listed twice"
    return {VOCAB[token_id]: matches for token_id, matches in zip(ids.tolist(), consistent)}


def test_structural_tokens(table: TokenTable) -> None:
    assert set(table.colon_ids.tolist()) == ids_of(":", ": ")
    assert set(table.open_ids.tolist()) == ids_of(" ", " {", "{", "[", "\n")
    assert table.pieces == VOCAB


def test_numbers_from_scratch(table: TokenTable) -> None:
    got = commitments_by_piece(table, "", TEN)
    assert got == {
        "1": ("1", "10"),  # shared by 1 and 10: needs a look-ahead
        " 1": ("1", "10"),  # leading space is dropped at the start of a value
        "10": ("10",),
        "1}": ("1",),
        "10,": ("10",),
        "7,": ("7",),
        **{str(i): (str(i),) for i in range(2, 10)},
    }
    assert "100" not in got and "12" not in got and "0" not in got


def test_numbers_after_the_shared_one(table: TokenTable) -> None:
    got = commitments_by_piece(table, "1", TEN)
    assert got == {
        "0": ("10",),
        ", ": ("1",),
        "}": ("1",),
        "]": ("1",),
        " ": ("1",),
        "\n": ("1",),
    }


def test_number_complete(table: TokenTable) -> None:
    got = commitments_by_piece(table, "10", TEN)
    assert got == {", ": ("10",), "}": ("10",), "]": ("10",), " ": ("10",), "\n": ("10",)}


def test_restricted_to_allowed(table: TokenTable) -> None:
    assert commitments_by_piece(table, "", ("7",)) == {"7": ("7",), "7,": ("7",)}
    assert commitments_by_piece(table, "", ("10",)) == {
        "1": ("10",),
        " 1": ("10",),
        "10": ("10",),
        "10,": ("10",),
    }
    assert commitments_by_piece(table, "", ("1",)) == {"1": ("1",), " 1": ("1",), "1}": ("1",)}


def test_verdict_strings(table: TokenTable) -> None:
    got = commitments_by_piece(table, "", VERDICTS)
    assert got == {
        '"': VERDICTS,
        '"A"': ('"A"',),
        '"A",': ('"A"',),
        '"B"': ('"B"',),
        '"t': ('"tie"',),
        '"tie"': ('"tie"',),
    }
    assert '",' not in got
    assert commitments_by_piece(table, '"', VERDICTS) == {
        "A": ('"A"',),
        "B": ('"B"',),
        "tie": ('"tie"',),
    }
    assert commitments_by_piece(table, '"t', VERDICTS) == {"ie": ('"tie"',)}
    assert commitments_by_piece(table, '"ti', VERDICTS) == {"e": ('"tie"',)}
    assert commitments_by_piece(table, '"A', VERDICTS) == {
        '"': ('"A"',),
        '",': ('"A"',),
    }


def test_nothing_fits(table: TokenTable) -> None:
    ids, consistent = table.commitments("", ("Z",))
    assert ids.size == 0 and consistent == []
    ids, consistent = table.commitments("", ())
    assert ids.size == 0
    assert ids.dtype == np.int64


def test_commitments_are_cached(table: TokenTable) -> None:
    first = table.commitments("1", TEN)
    assert table.commitments("1", TEN) is first


def test_every_listed_token_keeps_a_candidate_reachable(table: TokenTable) -> None:
    for partial in ("", "1", "10", '"', '"t', '"A'):
        for candidates in (TEN, VERDICTS, ("1",), ("10",)):
            ids, consistent = table.commitments(partial, candidates)
            for token_id, matches in zip(ids.tolist(), consistent):
                piece = VOCAB[token_id]
                written = partial + (piece if partial else piece.lstrip())
                assert matches
                assert all(_consistent(written, c) for c in matches)
                assert all(c in candidates for c in matches)


@pytest.mark.parametrize(
    ("written", "candidate", "expected"),
    [
        ("", "7", True),
        ("1", "10", True),
        ("1", "1", True),
        ("10", "10", True),
        ("10,", "10", True),
        ("10 }", "10", True),
        ("1\n]", "1", True),
        ("10, ", "10", True),
        ("100", "10", False),
        ("10a", "10", False),
        ("10:", "10", False),
        ("2", "10", False),
        ("0", "10", False),
        ('"A",', '"A"', True),
        ('"A"}', '"A"', True),
        ('"A"x', '"A"', False),
        ('"t', '"tie"', True),
        ('"ta', '"tie"', False),
        ('"tie"', '"A"', False),
    ],
)
def test_consistent(written: str, candidate: str, expected: bool) -> None:
    assert _consistent(written, candidate) is expected


def test_softmax_over_hand_computed() -> None:
    logits = np.array([0.0, math.log(2), math.log(3), 100.0], dtype=np.float32)
    probs = softmax_over(logits, np.array([0, 1, 2]))
    assert probs.dtype == np.float64
    np.testing.assert_allclose(probs, [1 / 6, 2 / 6, 3 / 6], rtol=1e-6)
    np.testing.assert_allclose(softmax_over(logits, np.array([2, 0])), [0.75, 0.25], rtol=1e-6)


def test_softmax_over_is_stable_and_normalised() -> None:
    logits = np.array([1000.0, 1000.0, -1000.0, 5.0])
    probs = softmax_over(logits, np.array([0, 1, 2]))
    assert np.all(np.isfinite(probs))
    np.testing.assert_allclose(probs, [0.5, 0.5, 0.0], atol=1e-12)
    assert softmax_over(logits, np.array([3])).tolist() == [1.0]
    assert logits.tolist() == [1000.0, 1000.0, -1000.0, 5.0]  # the input is not modified


def test_candidate_probabilities_with_the_shared_one(table: TokenTable) -> None:
    """One step's logits split over "1" (1 or 10), "10" and the other digits."""
    logits = np.full(len(VOCAB), -50.0)
    logits[VOCAB.index("1")] = math.log(4)
    logits[VOCAB.index("10")] = math.log(2)
    logits[VOCAB.index("7")] = math.log(2)
    ids, consistent = table.commitments("", TEN)
    probs = softmax_over(logits, ids)
    mass: dict[str, float] = {}
    for p, matches in zip(probs.tolist(), consistent):
        key = "|".join(matches)
        mass[key] = mass.get(key, 0.0) + p
    assert mass["1|10"] == pytest.approx(0.5, abs=1e-9)
    assert mass["10"] == pytest.approx(0.25, abs=1e-9)
    assert mass["7"] == pytest.approx(0.25, abs=1e-9)


def test_entropy_of_the_whole_vocabulary() -> None:
    assert entropy_of(np.zeros(1000, dtype=np.float32)) == pytest.approx(math.log(1000))
    peaked = np.full(1000, -1e4, dtype=np.float32)
    peaked[7] = 0.0
    assert entropy_of(peaked) == pytest.approx(0.0, abs=1e-9)
    two = np.array([0.0, 0.0, -np.inf, -np.inf], dtype=np.float32)  # masked tokens: no mass
    assert entropy_of(two) == pytest.approx(math.log(2))
    logits = np.random.default_rng(0).normal(size=50)
    p = np.exp(logits) / np.exp(logits).sum()
    assert entropy_of(logits) == pytest.approx(float(-(p * np.log(p)).sum()))
