"""What a loan's reward models measure (training.lora.reward_loan's `rewards.npz`), here, on the
CPU.

    python -m training.evaluation.reward_report --run training/runs/reward-loan1 \\
        --pairs build/device/data/pairs.npz --evals build/device/data/evals

Fitted on the held-out fold of the training pairs (requests the adapters never trained on),
before the evaluation files are looked at:

- the confidence scale: P(A) = sigmoid(scale * (r_A - r_B)), a logistic fit without intercept
  on both orders of the fold's decided pairs (the calibration map);
- the tie band: |P(A) - 0.5| up to it is a tie, the band that agrees most with the fold's
  labels (ties included).

Then every evaluation file's pairs, all rows, Auto-J's ties counting as it counts them (a
tie is right only when a tie is said), and the held-out single rows' Spearman, for each
model (each adapter alone, the DARE-TIES merge) and head.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from app.deciding.verdicts import calibrated_winner
from training.datasets.reward_data import RewardPairs, load_data

BANDS = np.round(np.arange(0.0, 0.301, 0.01), 2)
ECE_BINS = 10


LABELS = {1.0: "A", 0.0: "B", 0.5: "tie"}  # a pair's target as the verdict it asks for


def agreement(probability: np.ndarray, target: np.ndarray, band: float = 0.0) -> float:
    """% of pairs whose verdict, by the engine's rule (app.deciding.verdicts: a tie within
    `band` of one half), is the label's."""
    said = [calibrated_winner(float(p) - 0.5, band) for p in probability]
    right = [verdict == LABELS[float(t)] for verdict, t in zip(said, target, strict=True)]
    return round(100 * float(np.mean(right)), 1)


def fit_scale(margins: np.ndarray, target: np.ndarray) -> float:
    """The logistic scale of reward margins on decided pairs, both orders, no intercept."""
    from sklearn.linear_model import LogisticRegression

    decided = target != 0.5
    x = np.concatenate([margins[decided], -margins[decided]])[:, None]
    y = np.concatenate([target[decided], 1 - target[decided]])
    return float(LogisticRegression(C=1.0, fit_intercept=False).fit(x, y).coef_[0, 0])


def fit_band(probability: np.ndarray, target: np.ndarray) -> float:
    """The tie band that agrees most with `target` (the smallest of equals)."""
    scores = [agreement(probability, target, band) for band in BANDS]
    return float(BANDS[int(np.argmax(scores))])


def expected_calibration_error(probability: np.ndarray, target: np.ndarray) -> float:
    """ECE (%) of the side said on decided pairs, in bins of confidence 0.5-1."""
    decided = target != 0.5
    confidence = np.maximum(probability, 1 - probability)[decided]
    right = ((probability > 0.5) == (target > 0.5))[decided]
    bins = np.minimum(((confidence - 0.5) * 2 * ECE_BINS).astype(int), ECE_BINS - 1)
    gap = sum(
        abs(confidence[bins == k].mean() - right[bins == k].mean()) * (bins == k).sum()
        for k in range(ECE_BINS)
        if (bins == k).any()
    )
    return round(100 * float(gap) / max(len(confidence), 1), 1)


def margins_of(rewards: np.ndarray, pairs: RewardPairs, chosen: np.ndarray | None = None):  # type: ignore[no-untyped-def]
    chosen = np.arange(len(pairs.first)) if chosen is None else chosen
    return rewards[pairs.first[chosen]] - rewards[pairs.second[chosen]]


def held_pairs(rewards: np.ndarray, pairs: RewardPairs) -> np.ndarray:
    """The training pairs whose reads the loan read: the held-out fold's."""
    return np.flatnonzero(np.isfinite(margins_of(rewards, pairs)))


def report(run: Path, pairs_file: Path, evals: Path) -> dict:
    """Scale and band fitted on the held-out fold, then every file measured (see the module)."""
    from scipy.stats import spearmanr

    rewards = np.load(run / "rewards.npz")
    pairs = load_data(pairs_file)
    tables = {path.stem: load_data(path) for path in sorted(evals.glob("*.npz"))}
    found: dict = {}
    models = sorted({key.split("/")[0] for key in rewards.files})
    for model in models:
        heads = sorted({k.split("/")[1] for k in rewards.files if k.startswith(f"{model}/")})
        for head in heads:
            key = f"{model}/{head}"
            row: dict = {}
            if head == "pairs":
                train = rewards[f"{key}/train-pairs"]
                held = held_pairs(train, pairs)
                scale = fit_scale(margins_of(train, pairs, held), pairs.target[held])
                fold_p = 1 / (1 + np.exp(-scale * margins_of(train, pairs, held)))
                band = fit_band(fold_p, pairs.target[held])
                row |= {"scale": round(scale, 4), "tie_band": band, "fold_pairs": len(held),
                        "fold_agreement": agreement(fold_p, pairs.target[held])}  # fmt: skip
            else:
                scale, band = 1.0, 0.0
            for name, table in tables.items():
                values = rewards[f"{key}/{name}"]
                if isinstance(table, RewardPairs):
                    p = 1 / (1 + np.exp(-scale * margins_of(values, table)))
                    row[name] = agreement(p, table.target, band)
                    if head == "pairs":
                        row[f"{name} ece"] = expected_calibration_error(p, table.target)
                else:
                    row[name] = round(float(spearmanr(values, table.rating).statistic), 3)
            found[key] = row
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluation.reward_report", description=__doc__
    )
    parser.add_argument("--run", type=Path, required=True, help="an unpacked loan's runs")
    parser.add_argument("--pairs", type=Path, required=True, help="the pairs file it trained on")
    parser.add_argument("--evals", type=Path, required=True, help="reward_model evals' folder")
    args = parser.parse_args(argv)
    found = report(args.run, args.pairs, args.evals)
    (args.run / "report.json").write_text(json.dumps(found, indent=1), encoding="utf-8")
    for key, row in found.items():
        print(key, json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
