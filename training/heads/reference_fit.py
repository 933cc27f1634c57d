"""The pairs whose reference decides them, judged by the engine, and the judge's verdict on them.

    python -m training.heads.reference_fit [--model NAME] [--data DIR] [--out DIR] [--threads 1]
                                           [--reading-cache DIR]

The pairs are training/datasets/reference_decided.py's (one answer agrees with the reference, the
label). Each pair is judged once through the engine, criteria and reference read on from
the head's reads as a user's page reads them; the judgment keeps the head's own logit,
A's lead in the reference's likelihood after each answer
(`reference_likelihood_difference`), A's lead in the log-odds of the judge's check of each
answer against the reference (`reference_check_difference`: asked after the reference
whether the answer gives its result, the judge's true against false) and the criterion
scores read with the reference. Judgments are saved row by row, so a stopped run goes on;
`training.evaluation.reference_page` reads the held-out ones judged as the page judges them.

The reference's weights are the judge's decision record's, fitted with every other weight
by the one procedure (`python -m training.decision.fit`); this reports what the record's
verdict gets right on `train.jsonl` and `test.jsonl` beside the head alone, each reference
signal alone (A's lead in the reference's likelihood, in the share of its own words each
answer states, app/deciding/reference_words.py, in the judge's check, in the order of the
request's items, app/deciding/reference_order.py, and in its function's results, run in
the jail) and the longer and the shorter answer, overall and per family, with the issue's
coding pair (a right answer against a polished one that sorts the caller's list in place).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.code_run.behaviour import BehaviourReading, behaviour_reading
from app.deciding.reference_order import reference_order_lead
from app.deciding.reference_words import reference_words_lead
from app.io.reader import InputRow, read_rows
from app.records import JudgeItem, Judgment, Label
from models.run_settings import RUN_DEFAULTS
from training.datasets.reference_decided import OUT as DATA
from training.datasets.reference_pairs import (
    head_score,
)
from training.evaluation.report_files import write_report

OUT = Path(__file__).resolve().parents[1] / "runs" / "reference-fit"
LEANING = {"A": 1.0, "B": -1.0}  # a verdict as a score for A
VERDICT = "the judge's verdict (its record)"
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
    label=Label(winner="A"),  # the right answer
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


def features(rows: Sequence[InputRow], judgments: Sequence[Judgment]) -> dict[str, np.ndarray]:
    """Per pair: the judge's verdict (+1 for A, -1 for B, 0 for a tie or none), the head's
    logit, the likelihood lead, the reference's words' lead, the
    check's lead, the lead of A's function in the reference function's results (code run;
    0 where the reference is no function), the criteria's lead (where they were read), A's
    length lead, and whether A is right."""
    heads, leads, words, checks, criteria, longer, a_wins = [], [], [], [], [], [], []
    behaviours, orders, verdicts = [], [], []
    for row, judgment in zip(rows, judgments, strict=True):
        assert row.item is not None and row.item.label is not None
        parts = judgment.verdict_parts or {}
        verdicts.append(LEANING.get(judgment.leaning or judgment.winner or "", 0.0))
        heads.append(head_score(judgment))
        leads.append(parts.get("reference_likelihood_difference", 0.0))
        checks.append(parts.get("reference_check_difference", 0.0))
        item = row.item
        words.append(reference_words_lead(item.answers, item.reference or "", item.question))
        orders.append(reference_order_lead(item.answers, item.reference or "", item.question))
        run = behaviour_reading(item.answers, item.reference or "", item.question)
        behaviours.append((run.lead() if isinstance(run, BehaviourReading) else None) or 0.0)
        overall = [a.expected_overall or 0.0 for a in judgment.answers] or [0.0, 0.0]
        criteria.append(overall[0] - overall[1])
        longer.append(len(row.item.answers[0]) - len(row.item.answers[1]))
        a_wins.append(row.item.label.winner == "A")
    return {
        "verdict": np.array(verdicts),
        "head": np.array(heads),
        "lead": np.array(leads),
        "words": np.array([w or 0.0 for w in words]),
        "check": np.array(checks),
        "order": np.array([o or 0.0 for o in orders]),
        "behaviour": np.array(behaviours),
        "criteria": np.array(criteria),
        "longer": np.array(longer, dtype=float),
        "a_wins": np.array(a_wins, dtype=float),
    }


def percent_right(score: np.ndarray, a_wins: np.ndarray) -> float:
    """The share of pairs a score for A (positive: A) gets right; a zero counts as wrong."""
    won = a_wins == 1
    return round(100 * float(((score > 0) == won)[score != 0].sum()) / len(won), 1)


def accuracies(found: dict[str, np.ndarray]) -> dict[str, float]:
    """The share of pairs each decision gets right (a zero score counts as wrong)."""

    def right(score: np.ndarray) -> float:
        return percent_right(score, found["a_wins"])

    return {
        VERDICT: right(found["verdict"]),
        "the head alone (no reference)": right(found["head"]),
        "the reference's likelihood alone": right(found["lead"]),
        "the reference's words alone": right(found["words"]),
        "the judge's check alone": right(found["check"]),
        "the items' order alone": right(found["order"]),
        "the code's behaviour alone (run)": right(found["behaviour"]),
        "the longer answer": right(found["longer"]),
        "the shorter answer": right(-found["longer"]),
    }


def report(
    train: tuple[Sequence[InputRow], Sequence[Judgment]],
    test: tuple[Sequence[InputRow], Sequence[Judgment]],
    coding: tuple[JudgeItem, Judgment],
) -> dict[str, Any]:
    held = features(*test)
    families = [(row.raw or {}).get("family", "?") for row in test[0]]
    by_family = {}
    for family in sorted(set(families)):
        keep = [n for n, f in enumerate(families) if f == family]
        part = {name: values[keep] for name, values in held.items()}
        by_family[family] = {"pairs": len(keep), **accuracies(part)}
    item, judged = coding
    one = features([InputRow(line=0, item=item, error=None, raw=None)], [judged])
    return {
        "train_pairs": len(train[0]),
        "test_pairs": len(test[0]),
        "train": accuracies(features(*train)),
        "test": accuracies(held),
        "test_by_family": by_family,
        "coding_pair": {
            "right_answer": "A",
            "head": "A" if one["head"][0] > 0 else "B",
            "verdict": judged.leaning or judged.winner,
            **{
                f"reference_{name}_difference": round(float(one[key][0]), 4)
                for name, key in READ_NAMES.items()
            },
        },
    }


# the coding pair's reads as the report names them: (its name, its key in `features`)
READ_NAMES = {
    "likelihood": "lead",
    "words": "words",
    "check": "check",
    "order": "order",
    "behaviour": "behaviour",
}


def render(result: dict[str, Any]) -> str:
    lines = [
        f"Reference-decided pairs: {result['train_pairs']} training pairs, "
        f"{result['test_pairs']} held out, judged by the engine with the judge's decision "
        "record (its weights: `python -m training.decision.fit`).",
        "",
        "| decision | train | test |",
        "|---|---:|---:|",
    ]
    for name, value in result["test"].items():
        lines.append(f"| {name} | {result['train'][name]} | {value} |")
    lines += [
        "",
        "| family | pairs | the judge's verdict | the head alone | the shorter answer |",
        "|---|---:|---:|---:|---:|",
    ]
    for family, row in result["test_by_family"].items():
        lines.append(
            f"| {family} | {row['pairs']} | {row[VERDICT]} | "
            f"{row['the head alone (no reference)']} | {row['the shorter answer']} |"
        )
    coding = result["coding_pair"]
    leads = ", ".join(
        f"{name} lead {coding[f'reference_{name}_difference']}" for name in READ_NAMES
    )
    lines += [
        "",
        f"The coding pair (right answer A): the head alone says {coding['head']}, the judge "
        f"{coding['verdict']} ({leads}).",
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
    parser.add_argument(
        "--reading-cache",
        type=Path,
        help="keep each answer's read there (a later head on the same model reads them)",
    )
    args = parser.parse_args(argv)
    if not (args.data / "train.jsonl").is_file():
        from training.datasets.reference_decided import main as build

        build(["--out", str(args.data)])
    from app.judging.settings import SettingsLayer
    from models.backends.base import BackendOptions
    from training.decision.reads import reading_config
    from training.device.caches import cached_reads
    from training.evaluation.evaluate import Overrides, open_evaluated

    # the verdict's reference part is read without the criterion scores (the reference comes
    # first in the judge's turn, so its likelihood is the same with them)
    judge = open_evaluated(
        args.model,
        BackendOptions(n_ctx=RUN_DEFAULTS.n_ctx, n_threads=args.threads),
        overrides=Overrides(SettingsLayer(criterion_scores=False)),
    )
    judge.config = reading_config(judge.config)  # every candidate signal read
    args.out.mkdir(parents=True, exist_ok=True)
    cached = cached_reads(judge.backend, args.reading_cache, args.out / "train.jsonl")
    try:
        sets = {}
        for name in ("train", "test"):
            rows = [r for r in read_rows(args.data / f"{name}.jsonl") if r.item is not None]
            sets[name] = (rows, judged(judge, rows, args.out / f"{name}.jsonl", args.quiet))
        coding = (CODING_PAIR, judge.judge(CODING_PAIR, judge.config))
    finally:
        if cached is not None:
            cached.close()
        judge.close()
    result = report(sets["train"], sets["test"], coding)
    write_report(args.out, result, render(result))
    return 0


def _lines(path: Path) -> list[str]:
    if not path.is_file():
        return []
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


if __name__ == "__main__":
    sys.exit(main())
