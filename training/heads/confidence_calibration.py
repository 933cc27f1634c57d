"""Fit a judge's confidence calibration: an isotonic map from a confidence indicator
to the share of right verdicts, stored with the judge (app/deciding/calibration.py).

State-head judges, on their own training pairs:

    python -m training.heads.confidence_calibration head --gguf models/store/X.gguf \
        --head models/judges/NAME/state_head.json --out models/judges/NAME/calibration.json

The head's verdicts on its own fitting pairs would be over-confident, so each
pair gets its out-of-fold P(A) instead: the head's variant and L2 strength (from
`fitted_on`) fitted again on the other folds, folds grouped by request, exactly
as `training.heads.state_head fit` chose them. An isotonic regression then maps the
confidence of each verdict (max(P(A), 1 - P(A))) to whether it matched the label
(a tie label never does: the head does not say tie). Only the natural pairs count
(Auto-J and AlpacaEval, not the nearest-request counterexamples, which relevance
makes easy). The states come from the head's feature cache (`training.heads.state_head
embed`); nothing is read from an evaluation file.

Head judges that decide by a decision record, from their head's own fitting pairs read out of
fold (training/decision/cache/head-fitting: each pair's `states` from the fold that did not
see its request), the record's confidence of each verdict mapped to whether it was right:

    python -m training.heads.confidence_calibration record [--judge NAME] [--sets autoj]

By default on the natural Auto-J training pairs alone: they come as users' pairs come, ties
included (a tie label is never right: the head says none), where the AlpacaEval pairs were
drawn to balance length, and the counterexamples are made easy by relevance.

LLM judges (read in score mode), from their saved judgments of labelled pairs they
never trained on (`training.datasets.calibration_pairs`, judged by `training.evaluation.evaluate`):

    python -m training.heads.confidence_calibration judge --labelled PAIRS.jsonl \
        --judgments RUN/judgments.jsonl --indicator entropy \
        --out models/judges/NAME/calibration.json

`--indicator confidence` maps the judge's probability of its verdict; `entropy`
its decision entropy (lower is surer). The fit's own error is reported out of fold
(5 folds) beside the in-sample one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import numpy as np

from app.deciding.calibration import ConfidenceCalibration, Indicator
from app.deciding.state_head import load_state_head
from app.io.judgments import read_judgments
from app.records import Judgment, Status
from training.datasets.labelled_files import load_labelled
from training.datasets.state_head_data import saved_fitting_pairs
from training.evaluation.meta_metrics import calibration_error
from training.evaluation.rescore import attach_judgments
from training.heads.state_head import (
    ALPACAEVAL_PAIRS,
    RUN_DIR,
    VARIANTS,
    cache_for,
    design,
    out_of_fold,
    signals_of,
    source_of,
)


def isotonic_points(
    confidence: np.ndarray, right: np.ndarray, increasing: bool = True
) -> tuple[list[float], list[float]]:
    """The isotonic fit of `right` (0/1) on `confidence`, as its breakpoints."""
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(
        y_min=0.0, y_max=1.0, increasing=increasing, out_of_bounds="clip"
    ).fit(confidence, right)
    xs, ys = model.X_thresholds_, model.y_thresholds_
    return [round(float(x), 4) for x in xs], [round(float(y), 4) for y in ys]


def fit_head(args: argparse.Namespace) -> ConfidenceCalibration:
    head = load_state_head(args.head)
    variant, c = str(head.fitted_on["variant"]), float(head.fitted_on["C"])
    pairs = saved_fitting_pairs(ALPACAEVAL_PAIRS, RUN_DIR)
    winners = [p.label.winner for p in pairs]
    states, extra = signals_of(cache_for(args.gguf), pairs)
    signals = VARIANTS[variant]
    p_a = out_of_fold(design(states, extra, signals), winners, [p.question for p in pairs], c,
                      len(signals))  # fmt: skip
    natural = np.array(["counterexample" not in source_of(p) for p in pairs])
    confidence = np.maximum(p_a, 1 - p_a)[natural]
    verdicts = np.where(p_a > 0.5, "A", "B")[natural]
    right = (verdicts == np.array(winners)[natural]).astype(float)
    xs, ys = isotonic_points(confidence, right)
    return ConfidenceCalibration(
        indicator="confidence",
        at=tuple(xs),
        right=tuple(ys),
        fitted_on={
            "pairs": int(natural.sum()),
            "variant": variant,
            "C": c,
            "out_of_fold_ece": calibration_error(confidence, right),
            "in_sample_ece_after": calibration_error(np.interp(confidence, xs, ys), right),
            "right": round(float(right.mean()), 4),
        },
    )


def indicator_and_right(
    judgments: list[Judgment], labels: list[str], indicator: Indicator
) -> tuple[np.ndarray, np.ndarray]:
    """Each ok judgment's indicator value and whether its leaning matched the label
    (rows without the indicator are left out: they could not be mapped at judge time)."""
    values, right = [], []
    for judgment, label in zip(judgments, labels, strict=True):
        value = judgment.confidence if indicator == "confidence" else judgment.entropy
        if judgment.status is not Status.OK or value is None:
            continue
        values.append(value)
        right.append(float((judgment.leaning or judgment.winner) == label))
    return np.array(values, dtype=float), np.array(right, dtype=float)


MIN_BIN_ROWS = 30  # rows per bin before the isotonic fit of an LLM judge's map


def fit_indicator(
    values: np.ndarray, right: np.ndarray, indicator: Indicator, min_rows: int = MIN_BIN_ROWS
) -> tuple[list[float], list[float]]:
    """The isotonic map's breakpoints: rising with confidence, falling with entropy.

    A few hundred pairs are too few for a map fitted row by row: its ends rest on a
    handful of rows and say 0 % or 100 %. The rows are first put in bins of at least
    `min_rows` by the indicator (its quantiles), and the map is fitted on the bins'
    mean indicator and share right, weighted by their size.
    """
    from sklearn.isotonic import IsotonicRegression

    order = np.argsort(values, kind="stable")
    bins = np.array_split(order, max(1, len(values) // min_rows))
    xs = np.array([values[b].mean() for b in bins])
    ys = np.array([right[b].mean() for b in bins])
    weights = np.array([len(b) for b in bins], dtype=float)
    model = IsotonicRegression(
        y_min=0.0, y_max=1.0, increasing=indicator == "confidence", out_of_bounds="clip"
    ).fit(xs, ys, sample_weight=weights)
    fitted = model.predict(xs)
    return [round(float(x), 4) for x in xs], [round(float(y), 4) for y in fitted]


def out_of_fold_ece(
    values: np.ndarray, right: np.ndarray, indicator: Indicator, folds: int = 5
) -> float:
    """The ECE of maps fitted on the other folds (rows dealt to folds in turn)."""
    mapped = np.empty_like(values)
    fold = np.arange(len(values)) % folds
    for k in range(folds):
        xs, ys = fit_indicator(values[fold != k], right[fold != k], indicator)
        mapped[fold == k] = np.interp(values[fold == k], xs, ys)
    return calibration_error(mapped, right)


def fit_judge(args: argparse.Namespace) -> ConfidenceCalibration:
    files = [load_labelled(args.labelled, args.labelled.name)]
    attach_judgments(files, read_judgments(args.judgments))
    (file,) = files
    labels = [row.item.label.winner for row in file.rows]  # type: ignore[union-attr]
    values, right = indicator_and_right(file.judgments, labels, args.indicator)
    if len(values) < 20:
        raise SystemExit(
            f"only {len(values)} ok judgments with a {args.indicator} in {args.judgments}; "
            "a calibration needs at least 20 (judge more labelled pairs in score mode)"
        )
    xs, ys = fit_indicator(values, right, args.indicator)
    fitted_on: dict[str, float | int | str] = {
        "pairs": len(values),
        "file": args.labelled.name,
        "model": str(file.judgments[0].model),
        "out_of_fold_ece": out_of_fold_ece(values, right, args.indicator),
        "in_sample_ece_after": calibration_error(np.interp(values, xs, ys), right),
        "right": round(float(right.mean()), 4),
    }
    if args.indicator == "confidence":
        fitted_on["ece_before"] = calibration_error(values, right)
    return ConfidenceCalibration(
        indicator=args.indicator, at=tuple(xs), right=tuple(ys), fitted_on=fitted_on
    )


def record_right(judge: str, sets: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The confidence of `judge`'s record on its head's fitting pairs of `sets` (natural
    pairs only), their states out of fold, and whether each verdict matched the label."""
    import gzip
    import json

    from app.deciding.decision import decide, load_decision
    from training.datasets.likelihood_data import OUT_OF_FOLD
    from training.decision.reads import pair_key, training_pairs
    from training.decision.record_file import record_path

    record = load_decision(record_path(judge))
    labels = {pair_key(p): p for p in training_pairs("head-fitting")}
    confidence, right = [], []
    with gzip.open(OUT_OF_FOLD, "rt", encoding="utf-8") as lines:
        for row in map(json.loads, lines):
            pair = labels.get(row["key"])
            natural = pair is not None and "counter" not in pair.id
            if not natural or pair.id.split("-")[0] not in sets or pair.label is None:
                continue
            decision = decide(record, row["values"])
            confidence.append(decision.confidence)
            right.append(float(decision.leaning == pair.label.winner))
    return np.array(confidence), np.array(right)


def fit_record(args: argparse.Namespace) -> ConfidenceCalibration:
    from models.registry import load_registry

    judge = load_registry().get(args.judge).name
    values, right = record_right(judge, tuple(args.sets))
    xs, ys = fit_indicator(values, right, "confidence")
    return ConfidenceCalibration(
        indicator="confidence",
        at=tuple(xs),
        right=tuple(ys),
        fitted_on={
            "pairs": len(values),
            "sets": ",".join(args.sets),
            "by": "python -m training.heads.confidence_calibration record (states out of fold)",
            "ece_before": calibration_error(values, right),
            "out_of_fold_ece": out_of_fold_ece(values, right, "confidence"),
            "in_sample_ece_after": calibration_error(np.interp(values, xs, ys), right),
            "right": round(float(right.mean()), 4),
        },
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.heads.confidence_calibration")
    commands = parser.add_subparsers(dest="command", required=True)
    head = commands.add_parser("head", help="a state-head judge, on its training pairs")
    head.add_argument("--gguf", type=Path, required=True)
    head.add_argument("--head", type=Path, required=True)
    head.add_argument("--out", type=Path, required=True)
    judge = commands.add_parser("judge", help="an LLM judge, from its saved judgments")
    judge.add_argument("--labelled", type=Path, required=True, help="the labelled pairs judged")
    judge.add_argument("--judgments", type=Path, required=True, help="its judgments.jsonl")
    judge.add_argument("--indicator", choices=get_args(Indicator), default="entropy")
    judge.add_argument("--out", type=Path, required=True)
    record = commands.add_parser("record", help="a head judge's record, on its fitting pairs")
    record.add_argument("--judge", help="a registry name (default: the default judge)")
    record.add_argument("--sets", nargs="+", default=["autoj"], choices=["autoj", "alpacaeval"])
    record.add_argument("--out", type=Path, help="default: calibration.json beside its record")
    args = parser.parse_args(argv)
    fits = {"head": fit_head, "judge": fit_judge, "record": fit_record}
    calibration = fits[args.command](args)
    if args.out is None:
        from models.registry import load_registry
        from training.decision.record_file import record_path

        args.out = record_path(load_registry().get(args.judge).name).with_name("calibration.json")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
    print(calibration.model_dump_json(indent=2))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
