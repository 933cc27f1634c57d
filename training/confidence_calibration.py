"""Fit a state-head judge's confidence calibration on its training pairs.

    python -m training.confidence_calibration --gguf models/store/X.gguf \
        --head models/judges/NAME/state_head.json --out models/judges/NAME/calibration.json

The head's verdicts on its own fitting pairs would be over-confident, so each
pair gets its out-of-fold P(A) instead: the head's variant and L2 strength (from
`fitted_on`) fitted again on the other folds, folds grouped by request, exactly
as `training.state_head fit` chose them. An isotonic regression then maps the
confidence of each verdict (max(P(A), 1 - P(A))) to whether it matched the label
(a tie label never does: the head does not say tie). Only the natural pairs count
(Auto-J and AlpacaEval, not the nearest-request counterexamples, which relevance
makes easy). The states come from the head's feature cache (`training.state_head
embed`); nothing is read from an evaluation file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from app.calibration import ConfidenceCalibration
from app.state_head import load_state_head
from training.meta_metrics import calibration_error
from training.state_head import (
    ALPACAEVAL_PAIRS,
    RUN_DIR,
    VARIANTS,
    cache_for,
    design,
    out_of_fold,
    signals_of,
    source_of,
)
from training.state_head_data import saved_fitting_pairs


def isotonic_points(confidence: np.ndarray, right: np.ndarray) -> tuple[list[float], list[float]]:
    """The isotonic fit of `right` (0/1) on `confidence`, as its breakpoints."""
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(confidence, right)
    xs, ys = model.X_thresholds_, model.y_thresholds_
    return [round(float(x), 4) for x in xs], [round(float(y), 4) for y in ys]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.confidence_calibration")
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--head", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
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
    calibration = ConfidenceCalibration(
        confidence=tuple(xs),
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
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(calibration.model_dump_json(indent=2) + "\n", encoding="utf-8")
    print(calibration.model_dump_json(indent=2))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
