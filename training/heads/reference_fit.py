"""The reference's part of a head's verdict, fitted on pairs whose reference decides them.

    python -m training.heads.reference_fit [--model NAME] [--data DIR] [--out DIR] [--threads 1]

The pairs are training/datasets/reference_decided.py's (one answer agrees with the reference, the
label). Each pair is judged once through the engine, criteria and reference read on from
the head's reads as a user's page reads them; the judgment keeps the head's own logit,
A's lead in the reference's likelihood after each answer
(`reference_likelihood_difference`) and the criterion scores read with the reference.
Judgments are saved row by row, so a stopped run goes on.

The weight of the likelihood lead is the maximum-likelihood w >= 0 with the head's logit
as a fixed offset (training/reference_pairs.fit_weight), chosen on `train.jsonl` alone:
its request-grouped cross-validation is the figure for the choice. `test.jsonl` is read
after, with the weight fitted on all training pairs: the verdict with the reference
against the head alone (the verdict without it), the likelihood lead alone and the longer
answer, overall and per family. The issue's coding pair (a
right answer against a polished one that sorts the caller's list in place) is judged too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.io.reader import InputRow, read_rows
from app.records import JudgeItem, Judgment
from models.run_settings import RUN_DEFAULTS
from training.datasets.reference_decided import OUT as DATA
from training.datasets.reference_pairs import cross_validated_weight, fit_weight, head_score

OUT = Path(__file__).resolve().parents[1] / "runs" / "reference-fit"
CODING_PAIR = JudgeItem(
    id="coding-pair",
    question="Write a Python function that returns the second largest distinct value of a "
    "list, or None when there are fewer than two.",
    answers=(
        "def second_largest(xs):\n    values = sorted(set(xs))\n    return values[-2] if "
        "len(values) >= 2 else None",
        "Here is a clean and efficient solution!\n\n```python\ndef second_largest(xs):\n"
        "    xs.sort()\n    return xs[-2]\n```\n\nThis sorts the list and returns the second "
        "to last element, which is the second largest.",
    ),
    reference="def second_largest(xs):\n    distinct = sorted(set(xs))\n    return "
    "distinct[-2] if len(distinct) > 1 else None",
)


def judged(judge: Any, rows: Sequence[InputRow], saved: Path, quiet: bool) -> list[Judgment]:
    """Each row's judgment, from `saved` where it was judged before (one JSON per line)."""
    done = [Judgment.model_validate_json(line) for line in _lines(saved)]
    with saved.open("a", encoding="utf-8") as out:
        for row in rows[len(done) :]:
            assert row.item is not None
            judgment = judge.judge(row.item, judge.config, line=row.line)
            out.write(judgment.model_dump_json() + "\n")
            out.flush()
            done.append(judgment)
            if not quiet and len(done) % 10 == 0:
                print(f"{saved.stem}: {len(done)} of {len(rows)} pairs", file=sys.stderr)
    return done


def with_reference_read(config: Any) -> Any:
    """`config` whose head reads the reference's likelihood: a head without a weight for it
    gets one too small to move a verdict (the lead is read where a weight uses it); the
    reference's share is taken out of the head's logit here anyway (`head_score`)."""
    from dataclasses import replace

    head = config.parts.head
    if head is None or head.reference_likelihood_weight:
        return config
    head = head.model_copy(update={"reference_likelihood_weight": 1e-9})
    return replace(config, parts=replace(config.parts, head=head))


def features(rows: Sequence[InputRow], judgments: Sequence[Judgment]) -> dict[str, np.ndarray]:
    """Per pair: the head's logit, the likelihood lead, the criteria's lead (where they were
    read), A's length lead, and whether A is right."""
    heads, leads, criteria, longer, a_wins = [], [], [], [], []
    for row, judgment in zip(rows, judgments, strict=True):
        assert row.item is not None and row.item.label is not None
        parts = judgment.verdict_parts or {}
        heads.append(head_score(judgment))
        leads.append(parts.get("reference_likelihood_difference", 0.0))
        overall = [a.expected_overall or 0.0 for a in judgment.answers] or [0.0, 0.0]
        criteria.append(overall[0] - overall[1])
        longer.append(len(row.item.answers[0]) - len(row.item.answers[1]))
        a_wins.append(row.item.label.winner == "A")
    return {
        "head": np.array(heads),
        "lead": np.array(leads),
        "criteria": np.array(criteria),
        "longer": np.array(longer, dtype=float),
        "a_wins": np.array(a_wins, dtype=float),
    }


def accuracies(found: dict[str, np.ndarray], weight: float) -> dict[str, float]:
    """The share of pairs each decision gets right (a zero score counts as wrong)."""
    a_wins = found["a_wins"] == 1

    def right(score: np.ndarray) -> float:
        return round(100 * float(((score > 0) == a_wins)[score != 0].sum()) / len(a_wins), 1)

    return {
        "verdict with the reference": right(found["head"] + weight * found["lead"]),
        "verdict without it (the head)": right(found["head"]),
        "the reference's likelihood alone": right(found["lead"]),
        "the longer answer": right(found["longer"]),
    }


def report(
    train: tuple[Sequence[InputRow], Sequence[Judgment]],
    test: tuple[Sequence[InputRow], Sequence[Judgment]],
    coding: Judgment,
) -> dict[str, Any]:
    fit = features(*train)
    groups = [row.item.question for row in train[0] if row.item is not None]
    cv = cross_validated_weight(fit["head"], fit["lead"], fit["a_wins"], groups)
    weight = fit_weight(fit["head"], fit["lead"], fit["a_wins"])
    held = features(*test)
    families = [(row.raw or {}).get("family", "?") for row in test[0]]
    by_family = {}
    for family in sorted(set(families)):
        keep = [n for n, f in enumerate(families) if f == family]
        part = {name: values[keep] for name, values in held.items()}
        by_family[family] = {"pairs": len(keep), **accuracies(part, weight)}
    parts = coding.verdict_parts or {}
    return {
        "train_pairs": len(train[0]),
        "test_pairs": len(test[0]),
        "weight": round(weight, 3),
        "train_cross_validated": cv,
        "train": accuracies(fit, weight),
        "test": accuracies(held, weight),
        "test_by_family": by_family,
        "coding_pair": {
            "right_answer": "A",
            "head": "A" if head_score(coding) > 0 else "B",
            "with_the_reference": "A"
            if head_score(coding) + weight * parts.get("reference_likelihood_difference", 0) > 0
            else "B",
            "reference_likelihood_difference": parts.get("reference_likelihood_difference"),
        },
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"Reference-decided pairs: weight {result['weight']} fitted on "
        f"{result['train_pairs']} training pairs (request-grouped CV accuracy "
        f"{100 * (result['train_cross_validated']['accuracy'] or 0):.1f} %), "
        f"judged on {result['test_pairs']} held-out pairs:",
        "",
        "| decision | train | test |",
        "|---|---:|---:|",
    ]
    for name, value in result["test"].items():
        lines.append(f"| {name} | {result['train'][name]} | {value} |")
    lines += [
        "",
        "| family | pairs | with the reference | without | longer |",
        "|---|---:|---:|---:|---:|",
    ]
    for family, row in result["test_by_family"].items():
        lines.append(
            f"| {family} | {row['pairs']} | {row['verdict with the reference']} | "
            f"{row['verdict without it (the head)']} | {row['the longer answer']} |"
        )
    coding = result["coding_pair"]
    lines += [
        "",
        f"The coding pair (right answer A): the head says {coding['head']}, with the "
        f"reference {coding['with_the_reference']} (likelihood lead "
        f"{coding['reference_likelihood_difference']}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.reference_fit", description=__doc__
    )
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    if not (args.data / "train.jsonl").is_file():
        from training.datasets.reference_decided import main as build

        build(["--out", str(args.data)])
    from app.judging.settings import SettingsLayer
    from models.backends.base import BackendOptions
    from training.evaluation.evaluate import Overrides, open_evaluated

    # the verdict's reference part is read without the criterion scores (the reference comes
    # first in the judge's turn, so its likelihood is the same with them)
    judge = open_evaluated(
        args.model,
        BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=args.threads),
        overrides=Overrides(SettingsLayer(criterion_scores=False)),
    )
    judge.config = with_reference_read(judge.config)
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        sets = {}
        for name in ("train", "test"):
            rows = [r for r in read_rows(args.data / f"{name}.jsonl") if r.item is not None]
            sets[name] = (rows, judged(judge, rows, args.out / f"{name}.jsonl", args.quiet))
        coding = judge.judge(CODING_PAIR, judge.config)
    finally:
        judge.close()
    result = report(sets["train"], sets["test"], coding)
    (args.out / "report.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    text = render(result)
    (args.out / "report.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
