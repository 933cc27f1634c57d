"""A linear probe: is there a preference signal in a base model's hidden states at all?

`python -m training.heads.probe --base smollm2-135m` embeds question + answer with
the frozen GGUF base (llama.cpp, per-token states, mean and last pooled), fits
a logistic regression on the difference of the two answers' features over the
same length-balanced training pairs (and counterexamples) the pairwise adapter
sees, and scores it on the evaluation files beside "the longer answer wins".

The head has no intercept and sees the feature difference in both orders, so
it cannot prefer a position: its verdict is the same in both orders and it
never says tie. It is a diagnostic of the base's capacity (a classification
head instead of generated scores), not a judge the app runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from app.deciding.state_head import state_text
from app.records import JudgeItem
from training.evaluation.meta_metrics import longer_answer, percent
from training.lora.config import DataConfig, resolve_path

EVAL_FILES = (
    "../shared/data/autoj/pairwise_dev.jsonl",
    "../shared/data/llmbar/natural.json",
    "../shared/data/llmbar/adversarial_neighbor.json",
)


def pair_features(
    items: Sequence[JudgeItem], embed: Callable[[str], np.ndarray], label: str = ""
) -> np.ndarray:
    """Per pair, answer A's features minus answer B's."""
    from tqdm import tqdm

    rows = []
    for item in tqdm(items, desc=f"probe {label}", unit="pair", file=sys.stderr):
        first, second = (embed(state_text(item.question, a)) for a in item.answers[:2])
        rows.append(first - second)
    return np.stack(rows)


def decisive(items: Sequence[JudgeItem]) -> list[JudgeItem]:
    return [i for i in items if i.label is not None and i.label.winner in ("A", "B")]


def fit_head(features: np.ndarray, winners: Sequence[str], seed: int = 0):
    """Logistic regression on both orders (x, A) and (-x, B): position-free by construction."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    y = np.array([1 if w == "A" else 0 for w in winners])
    x = np.concatenate([features, -features])
    y = np.concatenate([y, 1 - y])
    head = make_pipeline(
        StandardScaler(with_mean=False),
        LogisticRegressionCV(
            Cs=8,
            cv=5,
            l1_ratios=(0.0,),
            scoring="neg_log_loss",
            use_legacy_attributes=False,
            fit_intercept=False,
            max_iter=2000,
            random_state=seed,
        ),
    )
    return head.fit(x, y)


def agreement(predicted: Sequence[str], labels: Sequence[str]) -> float:
    """Percentage of rows where the verdict equals the label (tie labels count as misses)."""
    return round(percent(sum(p == t for p, t in zip(predicted, labels)), len(labels)), 1)


def longer(item: JudgeItem) -> str:
    """The report's 'longer answer wins' verdict, so the probe's rows match every report."""
    return longer_answer((len(item.answers[0]), len(item.answers[1])))


def alpacaeval_pairs(count: int, seed: int = 0) -> list[JudgeItem]:
    """`count` length-balanced decisive AlpacaEval pairs (the same ones for every base)."""
    from training.datasets.alpacaeval import balanced_pairs

    return balanced_pairs(resolve_path(DataConfig().alpacaeval_file), count, seed)


def sample(items: Sequence[JudgeItem], count: int, seed: int = 0) -> list[JudgeItem]:
    """A fixed random sample of `count` items (all of them when there are fewer)."""
    if count >= len(items):
        return list(items)
    chosen = np.random.default_rng(seed).choice(len(items), size=count, replace=False)
    return [items[n] for n in sorted(chosen)]


def limited(items: list[JudgeItem], limit: int) -> list[JudgeItem]:
    """The first `limit` rows (all of them for 0)."""
    return items[:limit] if limit else items


def load_eval(path: Path) -> list[JudgeItem]:
    from app.io.reader import read_rows

    return [r.item for r in read_rows(path) if r.item is not None and r.item.label]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training.heads.probe", description=__doc__)
    parser.add_argument(
        "--base", default="smollm2-135m", help="base model name (models.base_models)"
    )
    parser.add_argument("--gguf", help="embed with this GGUF instead of the base's")
    parser.add_argument("--out", default="training/runs/probe", help="output folder")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--alpacaeval",
        type=int,
        default=0,
        metavar="N",
        help="also fit on N length-balanced AlpacaEval pairs (../shared/data/alpacaeval)",
    )
    parser.add_argument(
        "--train-limit",
        type=int,
        default=0,
        metavar="N",
        help="fit on a fixed random sample of N Auto-J training pairs (0: all); a screen "
        "for bases that embed slowly",
    )
    parser.add_argument(
        "--eval-limit",
        type=int,
        default=0,
        metavar="N",
        help="score the first N labelled rows of each evaluation file (0: all)",
    )
    parser.add_argument(
        "--embed-only",
        choices=("train", "alpacaeval", "eval"),
        help="only embed (and cache) the Auto-J training pairs, the AlpacaEval pairs or the "
        "evaluation pairs, then stop: two processes, one core each, share the work; a later "
        "plain run fits on the cache",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    from app.catalog.scenarios import load_catalog
    from models.backends.state_reader import StateReader
    from models.base_models import base_gguf
    from training.datasets.examples import BuildReport, training_pairs

    gguf = Path(args.gguf) if args.gguf else base_gguf(args.base)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    embed = StateReader.open(gguf, n_threads=args.threads).features

    def cached(name: str, items: list[JudgeItem]) -> np.ndarray:
        path = out / f"{gguf.stem}-{name}.npy"
        if path.exists():
            return np.load(path)
        features = pair_features(items, embed, name)
        np.save(path, features)
        return features

    train = decisive(training_pairs(DataConfig(), load_catalog(), BuildReport()))
    train_name = "train"
    if args.train_limit:
        train = sample(train, args.train_limit)
        train_name = f"train{args.train_limit}"
    train_sources = [(train_name, train)]
    if args.alpacaeval:
        train_sources.append((f"alpacaeval{args.alpacaeval}", alpacaeval_pairs(args.alpacaeval)))
    eval_sources = [
        (resolve_path(f), limited(load_eval(resolve_path(f)), args.eval_limit)) for f in EVAL_FILES
    ]
    eval_suffix = f"-first{args.eval_limit}" if args.eval_limit else ""
    if args.embed_only:
        chosen = {
            "train": train_sources[:1],
            "alpacaeval": train_sources[1:],
            "eval": eval_sources,
        }[args.embed_only]
        for name, items in chosen:
            cached(name if isinstance(name, str) else name.stem + eval_suffix, items)
        return 0
    train = [item for _, items in train_sources for item in items]
    features = np.concatenate([cached(name, items) for name, items in train_sources])
    head = fit_head(features, [i.label.winner for i in train])
    results = {
        "gguf": gguf.name,
        "train_pairs": len(train),
        "alpacaeval_pairs": args.alpacaeval,
        "eval_limit": args.eval_limit or None,
        "files": {},
    }
    for path, items in eval_sources:
        probs = head.predict_proba(cached(path.stem + eval_suffix, items))[:, 1]
        results["files"][path.name] = file_result(items, probs)
    suffix = f"-{train_name}" if args.train_limit else ""
    suffix += f"-alpacaeval{args.alpacaeval}" if args.alpacaeval else ""
    suffix += eval_suffix
    (out / f"{gguf.stem}{suffix}-results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


def file_result(items: list[JudgeItem], probs: np.ndarray) -> dict[str, float | int]:
    """The probe's agreement on one file beside the longer answer's, all rows and pairs
    with a winner."""
    verdicts = ["A" if p >= 0.5 else "B" for p in probs]
    labels = [i.label.winner for i in items]  # type: ignore[union-attr]
    won = [n for n, label in enumerate(labels) if label in ("A", "B")]
    return {
        "rows": len(items),
        "probe": agreement(verdicts, labels),
        "longer answer wins": agreement([longer(i) for i in items], labels),
        "pairs with a winner": len(won),
        "probe, pairs with a winner": agreement(
            [verdicts[n] for n in won], [labels[n] for n in won]
        ),
        "longer answer wins, pairs with a winner": agreement(
            [longer(items[n]) for n in won], [labels[n] for n in won]
        ),
        "probe picks the longer answer %": agreement(verdicts, [longer(i) for i in items]),
    }


if __name__ == "__main__":
    sys.exit(main())
