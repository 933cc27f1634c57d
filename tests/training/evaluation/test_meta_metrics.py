"""Meta-evaluation metrics against small examples computed by hand."""

from __future__ import annotations

import pytest

from app.catalog.scenarios import load_catalog
from app.records import Status
from training.evaluation.meta_metrics import (
    PairRow,
    ScoreRow,
    agreement,
    correlations,
    group_table,
    heuristic_metrics,
    longer_answer,
    macro_prf,
    pairwise_metrics,
    position_bias,
    scenario_group,
    single_metrics,
    status_counts,
    verbosity_bias,
    verdict_distribution,
)

approx = pytest.approx

# Five pairs. orders = (verdict of the original order, of the swapped order), both
# already in the original labels; verdict = the combined ("agree") verdict.
ROWS = [
    # 1: both orders A, label A; A is the longer answer
    PairRow(label="A", verdict="A", orders=("A", "A"), lengths=(20, 10), group="Code"),
    # 2: first position won both times (A then B): inconsistent, combined tie; label B
    PairRow(label="B", verdict="tie", orders=("A", "B"), lengths=(10, 30), group="Code"),
    # 3: both orders B, label tie; B is longer
    PairRow(label="tie", verdict="B", orders=("B", "B"), lengths=(5, 50), group="Rewriting"),
    # 4: second position won both times (B then A), label A; B is longer
    PairRow(label="A", verdict="tie", orders=("B", "A"), lengths=(10, 40)),
    # 5: unparsed, label B; B is longer
    PairRow(label="B", status=Status.UNPARSED, lengths=(1, 2)),
]


def test_agreement_single_both_and_combined() -> None:
    # single order (orders[0] == label): row 1 only -> 1/5 = 20
    # both orders (orders[0] == orders[1] == label): row 1 only -> 1/5 = 20
    # combined (verdict == label): row 1 only (row 3 says B for a tie) -> 1/5 = 20
    # the unparsed row 5 counts as wrong everywhere
    assert agreement(ROWS) == {
        "agreement_single": 20.0,
        "agreement_both": 20.0,
        "agreement_combined": 20.0,
    }


def test_single_order_and_both_orders_differ() -> None:
    rows = [
        PairRow(label="A", verdict="tie", orders=("A", "B")),  # single right, both wrong
        PairRow(label="tie", verdict="tie", orders=("A", "B")),  # combined right only
        PairRow(label="B", verdict="B", orders=("B", "B")),  # all right
        PairRow(label="B", verdict="tie", orders=("tie", "B")),  # swapped order right only
    ]
    # single: rows 1, 3 -> 2/4 = 50; both: row 3 -> 1/4 = 25; combined: rows 2, 3 -> 2/4 = 50
    assert agreement(rows) == {
        "agreement_single": 50.0,
        "agreement_both": 25.0,
        "agreement_combined": 50.0,
    }


def test_without_swap_data_the_combined_verdict_stands_for_both_orders() -> None:
    rows = [
        PairRow(label="A", verdict="A"),
        PairRow(label="B", verdict="A"),
        PairRow(label="tie", verdict="tie"),
    ]
    # every number is verdict == label: rows 1, 3 -> 2/3 = 66.67
    expected = 200 / 3
    assert agreement(rows) == {
        "agreement_single": approx(expected),
        "agreement_both": approx(expected),
        "agreement_combined": approx(expected),
    }
    assert position_bias(rows) == {
        "consistency": None,
        "bias_first": None,
        "bias_second": None,
        "delta_bias": None,
    }


def test_macro_precision_recall_f1() -> None:
    # truth     A   B    tie  A    B
    # predicted A   tie  B    tie  (none: unparsed)
    # A:   TP 1, FP 0, FN 1 -> P 1,   R 1/2, F1 2/3
    # B:   TP 0, FP 1, FN 2 -> P 0,   R 0,   F1 0
    # tie: TP 0, FP 2, FN 1 -> P 0,   R 0,   F1 0
    # macro: P 1/3 = 33.33, R 1/6 = 16.67, F1 2/9 = 22.22
    result = macro_prf(ROWS)
    assert result["macro_precision"] == approx(100 / 3)
    assert result["macro_recall"] == approx(100 / 6)
    assert result["macro_f1"] == approx(200 / 9)


def test_macro_leaves_out_a_class_nobody_used() -> None:
    # no tie as label or verdict: classes A and B only (A: P 1 R 1/2 F1 2/3; B: P 1/2 R 1 F1 2/3)
    rows = [
        PairRow(label="A", verdict="A"),
        PairRow(label="A", verdict="B"),
        PairRow(label="B", verdict="B"),
    ]
    result = macro_prf(rows)
    assert result["macro_precision"] == approx(75.0)  # (1 + 1/2) / 2
    assert result["macro_recall"] == approx(75.0)  # (1/2 + 1) / 2
    assert result["macro_f1"] == approx(200 / 3)  # (2/3 + 2/3) / 2


def test_swap_consistency_and_position_bias() -> None:
    # consistent: rows 1, 3 -> 2/5 = 40; first position (A, B): row 2 -> 1/5 = 20;
    # second position (B, A): row 4 -> 1/5 = 20; delta |20 - 20| = 0
    assert position_bias(ROWS) == {
        "consistency": 40.0,
        "bias_first": 20.0,
        "bias_second": 20.0,
        "delta_bias": 0.0,
    }


def test_delta_bias() -> None:
    rows = [
        PairRow(label="A", verdict="tie", orders=("A", "B")),
        PairRow(label="A", verdict="tie", orders=("A", "B")),
        PairRow(label="A", verdict="tie", orders=("B", "A")),
        PairRow(label="A", verdict="A", orders=("A", "A")),
    ]
    # consistent 1/4 = 25, first 2/4 = 50, second 1/4 = 25, delta |50 - 25| = 25
    assert position_bias(rows) == {
        "consistency": 25.0,
        "bias_first": 50.0,
        "bias_second": 25.0,
        "delta_bias": 25.0,
    }


def test_verbosity_bias() -> None:
    # longer answer: 1 A, 2 B, 3 B, 4 B (row 5 is not ok and left out)
    # label not the longer one: row 1 (label A = longer: no), row 2 (B = longer: no),
    # row 3 (tie: yes), row 4 (A, the shorter: yes) -> 2 rows
    # judge picks the longer one: row 3 (B) yes, row 4 (tie) no -> 1/2 = 50
    assert verbosity_bias(ROWS) == {"verbosity_bias": 50.0, "verbosity_n": 2}


def test_verbosity_bias_skips_equal_lengths() -> None:
    rows = [PairRow(label="tie", verdict="A", lengths=(7, 7))]
    assert verbosity_bias(rows) == {"verbosity_bias": None, "verbosity_n": 0}


def test_verdict_distribution() -> None:
    # verdicts A, tie, B, tie, none -> A 1/5, B 1/5, tie 2/5, none 1/5
    assert verdict_distribution(ROWS) == {"A": 20.0, "B": 20.0, "tie": 40.0, "none": 20.0}


@pytest.mark.parametrize(
    ("lengths", "expected"), [((3, 2), "A"), ((2, 3), "B"), ((4, 4), "tie"), ((0, 0), "tie")]
)
def test_longer_answer_ties_only_on_equal_length(lengths: tuple[int, int], expected: str) -> None:
    assert longer_answer(lengths) == expected


def test_heuristic_on_the_same_rows() -> None:
    # longer: A, B, B, B, B; labels A, B, tie, A, B -> right on rows 1, 2, 5 -> 3/5 = 60
    # (the heuristic is never unparsed, so row 5 counts)
    result = heuristic_metrics(ROWS)
    assert result["n"] == 5
    assert result["agreement_single"] == 60.0
    assert result["agreement_both"] == 60.0
    assert result["agreement_combined"] == 60.0
    # classes A, B, tie: A P 1 R 1/2 F1 2/3; B P 2/4 R 1 F1 2/3; tie P 0 R 0 F1 0
    # macro F1 (2/3 + 2/3 + 0) / 3 = 4/9
    assert result["macro_f1"] == approx(400 / 9)


def test_status_counts() -> None:
    rows = [*ROWS, PairRow(label="A", status=Status.ERROR)]
    assert status_counts(rows) == {"ok": 4, "unparsed": 1, "error": 1}


def test_all_ties() -> None:
    rows = [
        PairRow(label="tie", verdict="tie", orders=("tie", "tie"), lengths=(1, 2)),
        PairRow(label="tie", verdict="tie", orders=("tie", "tie"), lengths=(3, 2)),
    ]
    result = pairwise_metrics(rows)
    # the judge is right on both rows, consistent on both, never biased
    assert result["agreement_both"] == 100.0
    assert result["macro_f1"] == 100.0  # only the tie class is in use
    assert result["consistency"] == 100.0
    assert result["bias_first"] == 0.0
    # both rows are eligible for verbosity (label tie) and the judge never picks the longer one
    assert result["verbosity_bias"] == 0.0
    assert result["verbosity_n"] == 2
    # the heuristic never says tie: 0/2 right; classes tie, A, B all with F1 0
    assert result["heuristic"]["agreement_both"] == 0.0
    assert result["heuristic"]["macro_f1"] == 0.0


def test_no_row_ok() -> None:
    rows = [
        PairRow(label="A", status=Status.ERROR, lengths=(2, 1)),
        PairRow(label="B", status=Status.UNPARSED, lengths=(1, 2)),
    ]
    result = pairwise_metrics(rows)
    assert result["agreement_single"] == 0.0
    assert result["agreement_both"] == 0.0
    assert result["agreement_combined"] == 0.0
    assert result["macro_f1"] == 0.0  # classes A, B: nothing predicted
    assert result["consistency"] is None  # no swap data at all
    assert result["verbosity_bias"] is None
    assert result["verdicts"]["none"] == 100.0
    assert result["status"] == {"ok": 0, "unparsed": 1, "error": 1}
    assert result["heuristic"]["agreement_both"] == 100.0  # longer: A, B


def test_empty_pairwise_input_gives_none() -> None:
    result = pairwise_metrics([])
    assert result["n"] == 0
    for key in ("agreement_single", "agreement_both", "agreement_combined", "macro_f1"):
        assert result[key] is None
    assert result["consistency"] is None
    assert result["verbosity_bias"] is None
    assert result["verdicts"] == {"A": None, "B": None, "tie": None, "none": None}
    assert result["heuristic"]["agreement_both"] is None
    assert group_table([]) == {}


def test_group_table() -> None:
    # Code: rows 1, 2 -> judge both orders 1/2 = 50; heuristic (A, B vs A, B) 2/2 = 100
    # Rewriting: row 3 -> judge 0; heuristic B vs tie -> 0
    # other: rows 4, 5 -> judge 0 (row 5 unparsed); heuristic B, B vs A, B -> 1/2 = 50
    assert group_table(ROWS) == {
        "Code": {"n": 2, "agreement_both": 50.0, "heuristic": 100.0},
        "Rewriting": {"n": 1, "agreement_both": 0.0, "heuristic": 0.0},
        "other": {"n": 2, "agreement_both": 0.0, "heuristic": 50.0},
    }


def test_scenario_group() -> None:
    catalog = load_catalog()
    assert scenario_group("code_generation", catalog) == "Code"
    assert scenario_group("Code Generation", catalog) == "Code"  # names are normalised
    assert scenario_group("no_such_scenario", catalog) == "other"
    assert scenario_group(None, catalog) == "other"


# --------------------------------------------------------------------------- single grading


def test_single_correlations_and_mae() -> None:
    rows = [
        ScoreRow(label=1, judge=1, label_scale=(1, 5), length=10),
        ScoreRow(label=3, judge=5, label_scale=(1, 5), length=30),
        ScoreRow(label=5, judge=10, label_scale=(1, 5), length=20),
        ScoreRow(label=None, judge=4),  # no label score: skipped
        ScoreRow(label=2, status=Status.UNPARSED),  # no judge score: skipped
    ]
    result = single_metrics(rows)
    assert result["n"] == 3
    assert result["skipped"] == 2
    # x = 1, 3, 5 (mean 3, dx -2, 0, 2); y = 1, 5, 10 (mean 16/3, dy -13/3, -1/3, 14/3)
    # sum dx*dy = 26/3 + 28/3 = 18; sum dx^2 = 8; sum dy^2 = (169 + 1 + 196) / 9 = 366/9
    # r = 18 / sqrt(8 * 366/9) = 18 / sqrt(325.33) = 0.99795
    assert result["pearson"] == approx(18 / (8 * 366 / 9) ** 0.5)
    assert result["pearson"] == approx(0.99795, abs=1e-5)
    assert result["spearman"] == approx(1.0)  # same order
    assert result["kendall"] == approx(1.0)  # 3 concordant pairs of 3
    # on 0-1: label (s-1)/4 = 0, 0.5, 1; judge (s-1)/9 = 0, 4/9, 1
    # MAE = (0 + |0.5 - 4/9| + 0) / 3 = (1/18) / 3 = 1/54
    assert result["mae"] == approx(1 / 54)
    assert result["status"] == {"ok": 4, "unparsed": 1, "error": 0}
    # length heuristic on the 4 labelled rows: labels 1, 3, 5, 2 vs lengths 10, 30, 20, 0
    # ranks 1, 3, 4, 2 vs 2, 4, 3, 1: d = -1, -1, 1, 1 -> rho = 1 - 6*4 / (4*15) = 0.6
    assert result["heuristic"]["n"] == 4
    assert result["heuristic"]["spearman"] == approx(0.6)


def test_kendall_with_one_discordant_pair() -> None:
    # pairs (1,2) concordant, (1,3) concordant, (2,3) discordant -> (2 - 1) / 3
    result = correlations([1, 2, 3], [1, 3, 2])
    assert result["kendall"] == approx(1 / 3)
    # ranks equal the values: rho = 1 - 6 * (0 + 1 + 1) / (3 * 8) = 0.5
    assert result["spearman"] == approx(0.5)


def test_correlations_need_two_varied_rows() -> None:
    assert correlations([], []) == {"n": 0, "pearson": None, "spearman": None, "kendall": None}
    assert correlations([3], [4])["pearson"] is None
    assert correlations([3, 3, 3], [1, 2, 3])["spearman"] is None  # constant labels


def test_empty_single_input_gives_none() -> None:
    result = single_metrics([])
    assert result["n"] == 0
    assert result["pearson"] is None
    assert result["mae"] is None
    assert result["heuristic"]["n"] == 0


def test_tie_margin_tuning_picks_the_best_split() -> None:
    from training.heads.tie_band import tune_tie_margin, verdict_at

    # |margins| 0.1, 0.2, 1.0, 2.0 -> candidates 0, 0.15, 0.6, 1.5.
    # At 0.6: 0.1 tie (ok), -0.2 tie (ok), 1.0 A (ok), -2.0 B (ok) -> 4/4.
    pairs = [(0.1, "tie"), (-0.2, "tie"), (1.0, "A"), (-2.0, "B")]
    assert tune_tie_margin(pairs) == {"tie_margin": 0.6, "agreement": 100.0, "pairs": 4}
    # No ties in the labels: margin 0 is best (and the smallest among equals).
    assert tune_tie_margin([(0.1, "A"), (-0.3, "B")])["tie_margin"] == 0.0
    assert verdict_at(0.5, 0.5) == "tie" and verdict_at(-0.6, 0.5) == "B"
    with pytest.raises(ValueError, match="no judged pairs"):
        tune_tie_margin([])


def confident_rows() -> list[PairRow]:
    """Ten rows: the five least confident half right, the five most confident all right."""
    rows = []
    for n in range(10):
        confidence = 0.5 + n * 0.05
        right = n >= 5 or n % 2 == 0
        rows.append(PairRow(label="A", verdict="A" if right else "B", confidence=confidence))
    return rows


def test_confidence_buckets_split_the_rows_into_fifths_least_confident_first() -> None:
    from training.evaluation.meta_metrics import confidence_buckets

    rows = [*confident_rows(), PairRow(label="A", status=Status.UNPARSED)]  # left out
    buckets = confidence_buckets(rows)
    assert [b["n"] for b in buckets] == [2] * 5
    assert buckets[0]["low"] == 0.5 and buckets[-1]["high"] == 0.95
    assert [b["agreement"] for b in buckets] == [50.0, 50.0, 100.0, 100.0, 100.0]
    assert buckets[2]["mean_confidence"] == pytest.approx(0.725)


def test_expected_calibration_error_is_the_weighted_gap_per_bin() -> None:
    from training.evaluation.meta_metrics import expected_calibration_error

    perfectly = [PairRow(label="A", verdict="A", confidence=1.0)] * 4
    assert expected_calibration_error(perfectly) == 0.0
    # 0.9 sure, right half the time: a gap of 40 points
    half = [PairRow(label="A", verdict=v, confidence=0.9) for v in ("A", "B", "A", "B")]
    assert expected_calibration_error(half) == 40.0
    assert expected_calibration_error([PairRow(label="A", verdict="A")]) is None


def test_cascade_sends_the_least_confident_rows_to_the_second_judge() -> None:
    from training.evaluation.meta_metrics import cascade_curve

    rows = confident_rows()
    second = ["A"] * 10  # a second judge that is always right here
    points = cascade_curve(rows, second, shares=(0.0, 0.3, 0.5, 1.0))
    assert [p["sent"] for p in points] == [0, 3, 5, 10]
    # the wrong rows are n = 1 and 3 (least confident half): 0.3 fixes one, 0.5 both
    assert [p["agreement"] for p in points] == [80.0, 90.0, 100.0, 100.0]
    with pytest.raises(ValueError):
        cascade_curve(rows, second[:3])


def test_indicator_halves_pick_the_surer_half_by_each_indicator() -> None:
    from training.evaluation.meta_metrics import indicator_halves

    # right, confidence, entropy: confidence is backwards here, entropy is right
    rows = [
        PairRow(label="A", verdict="A", confidence=0.55, entropy=0.1),
        PairRow(label="A", verdict="A", confidence=0.60, entropy=0.2),
        PairRow(label="A", verdict="B", confidence=0.90, entropy=2.0),
        PairRow(label="A", verdict="B", confidence=0.95, entropy=3.0),
        PairRow(label="A", status=Status.UNPARSED),  # not ok: left out
    ]
    table = indicator_halves(rows, base_entropy=[1.0, 0.0, 1.0, 5.0, None])
    assert table == [
        {"indicator": "all rows", "n": 4, "agreement": 50.0},
        {"indicator": "confidence", "n": 2, "agreement": 0.0},
        {"indicator": "entropy", "n": 2, "agreement": 100.0},
        # minus base: 0.1-1 = -0.9, 0.2-0 = 0.2, 2-1 = 1, 3-5 = -2: surer are rows 4 and 1
        {"indicator": "entropy minus base", "n": 2, "agreement": 50.0},
    ]
    # an indicator some ok row lacks is not compared (it would pick from fewer rows)
    partial = [rows[0], PairRow(label="A", verdict="A", confidence=0.7)]
    assert [r["indicator"] for r in indicator_halves(partial)] == ["all rows", "confidence"]
    with pytest.raises(ValueError):
        indicator_halves(rows, base_entropy=[1.0])
