"""The criterion head's reference shift, fitted on pairs whose reference decides them.

    python -m training.heads.reference_levels [--model NAME] [--run DIR] [--data DIR]
                                              [--head NPZ] [--write]

With a reference in use, the criterion head (app/deciding/criterion_head.py) moves every
criterion of an answer by `words * share + likelihood * mean lp + check * log-odds + order *
in-order share` (each centred over the item's answers): the share of the reference's own
words the answer states, the reference's mean log-probability after it, the log-odds of the
judge's check of the answer against it and the share of the request's items it states in
the reference's order (where the reference restates them), the readings of the reference
the verdict adds too. This fits their weights on the pairs of
training/datasets/reference_decided.py (one answer agrees with the reference, the label), as
judged by
`python -m training.heads.reference_fit --reading-cache DIR` (its run folder holds the
judgments and, under readings*/, each answer's read, from which the criterion head's own
levels are computed here as the engine computes them).

A pair's criteria decide by A's lead in their overall: the head's lead `L` (level points)
plus the shift's. The fit is the verdict's (training/datasets/reference_pairs.fit_weights:
weights >= 0, maximum likelihood) with `k * L` as the fixed offset, `k` the verdict head's
logits per level point of `L` on the criterion head's own training pairs (Auto-J, least
squares through 0), so the weights come back to level points divided by `k`. Candidates
(`CANDIDATES`) are chosen by request-grouped cross-validation of the criteria's
own decision on `train.jsonl`; `test.jsonl` is read after, beside the criteria without the
reference, the verdict head alone, and the longer and the shorter answer, overall and by
family. A pair whose functions the jail ran is not shifted by their behaviour here: the
record's rule `reference_behaviour` decides it and holds the levels
(criterion_shift.caps, app/deciding/criterion_head.behaviour_caps), which `--write` keeps.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.criterion_head import REFERENCE, CriterionHead
from app.deciding.relevance import request_similarities
from app.deciding.state_head import StateHead
from app.io.reader import InputRow, read_rows
from app.records import Judgment
from training.datasets.criterion_head_data import cached_readings
from training.datasets.criterion_rows import RUN_DIR as CRITERION_RUN
from training.datasets.reference_decided import OUT as DATA
from training.datasets.reference_pairs import (
    cross_validated_weights,
    fit_weights,
    head_score,
)
from training.evaluation.report_files import write_report
from training.heads.reference_fit import OUT as RUN
from training.heads.reference_fit import features

# the candidates, cheapest first (a tie goes to the earlier): feature names of `pair_table`
CANDIDATES = {
    "the reference's words": ("words",),
    "the words and the order": ("words", "order"),
    "the reference's likelihood": ("lead",),
    "both": ("words", "lead"),
    "both and the judge's check": ("words", "lead", "check"),
    "both, the check and the order": ("words", "lead", "check", "order"),
}
HEAD_FIELDS = {
    "words": "reference_words",
    "lead": "reference_likelihood",
    "check": "reference_check",
    "order": "reference_order",
}


def pair_table(
    rows: Sequence[InputRow],
    judgments: Sequence[Judgment],
    caches: Sequence[Any],
    state_head: StateHead,
    criterion_head: CriterionHead,
) -> dict[str, np.ndarray]:
    """Per pair judged with both answers' reads kept: reference_fit's features (the verdict
    head's logit, the reference's likelihood and words leads, A's length lead, whether A is
    right), the criterion head's lead of A (`levels`, level points, no reference), its
    request and family."""
    judged = {j.id: j for j in judgments}
    kept, kept_judgments, levels = [], [], []
    for row in rows:
        item = row.item
        judgment = judged.get(item.id) if item is not None else None
        if item is None or item.label is None or judgment is None:
            continue
        readings = cached_readings(item, state_head, caches)
        if readings is None:
            continue
        near = request_similarities(item.question, item.answers)
        first, second = (
            criterion_head.features(r.states, r.features(), len(answer), float(relevance))
            for r, answer, relevance in zip(readings, item.answers, near)
        )
        levels.append(float((first - second) @ criterion_head.weights))
        kept.append(row)
        kept_judgments.append(judgment)
    found = features(kept, kept_judgments)
    found["levels"] = np.array(levels)
    found["request"] = np.array([row.item.question for row in kept if row.item is not None])
    found["family"] = np.array([(row.raw or {}).get("family", "?") for row in kept])
    return found


def logits_per_level(
    run_dir: Path, state_head: StateHead, criterion_head: CriterionHead
) -> tuple[float, int]:
    """k: the verdict head's logit per level point of the criterion head's lead (least
    squares through 0) on the criterion head's own training pairs (`run_dir`,
    training/datasets/criterion_rows.py), the scale on which the criteria's lead meets the
    reference's; and how many pairs it was measured on."""
    from training.datasets.criterion_head_data import judged_rows, load_table
    from training.heads.criterion_head import table_z

    table = load_table(run_dir, state_head)
    logits = {
        row["id"]: head_score(Judgment.model_validate(row))
        for row in judged_rows(sorted(run_dir.glob("eval-part*/judgments.jsonl")))
    }
    u = table_z(criterion_head, table, np.arange(len(table.states))) @ criterion_head.weights
    leads, found = [], []
    for number, pair_id in enumerate(table.ids):
        first, second = np.flatnonzero(table.pair == number)[:2]
        leads.append(u[first] - u[second])
        found.append(logits[pair_id])
    lead, logit = np.array(leads), np.array(found)
    return float(lead @ logit / (lead @ lead)), len(lead)


def chosen(table: dict[str, np.ndarray], k: float) -> dict[str, Any]:
    """Each candidate's request-grouped CV of the criteria's own decision, the one chosen
    (best; the cheaper on a tie) and its weights on all training pairs, in level points."""
    offsets, groups = k * table["levels"], list(table["request"])

    def columns(signals: Sequence[str]) -> np.ndarray:
        return np.column_stack([table[name] for name in signals])

    found = {
        name: cross_validated_weights(offsets, columns(signals), table["a_wins"], groups)
        for name, signals in CANDIDATES.items()
    }
    best = max(CANDIDATES, key=lambda name: found[name]["accuracy"] or 0.0)  # first on ties
    signals = CANDIDATES[best]
    weights = fit_weights(offsets, columns(signals), table["a_wins"])
    chosen_weights = {HEAD_FIELDS[n]: round(float(w) / k, 4) for n, w in zip(signals, weights)}
    # a pair's centred value is half its lead: the largest seen is each one's bound
    for signal, field in (
        ("lead", "reference_likelihood_bound"),
        ("check", "reference_check_bound"),
    ):
        if signal in signals:
            chosen_weights[field] = round(float(np.abs(table[signal]).max()) / 2, 4)
    return {
        "logits_per_level": round(k, 4),
        "candidates": {n: {"cv_accuracy": f["accuracy"]} for n, f in found.items()},
        "chosen": best,
        "weights": chosen_weights,
    }


def reference_shift(table: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """A's lead in the criteria's shift (level points) under `weights` (HEAD_FIELDS' and
    the bounds' names): a pair's lead is twice each answer's centred value."""
    shift = weights.get("reference_words", 0.0) * table["words"]
    shift = shift + weights.get("reference_order", 0.0) * table["order"]
    for signal, name in (("lead", "reference_likelihood"), ("check", "reference_check")):
        bound = 2 * (weights.get(f"{name}_bound") or np.inf)
        shift = shift + weights.get(name, 0.0) * np.clip(table[signal], -bound, bound)
    return shift


def accuracies(table: dict[str, np.ndarray], weights: dict[str, float]) -> dict[str, float]:
    """The share of pairs each decision gets right (a zero lead counts as wrong)."""
    shift = reference_shift(table, weights)
    won = table["a_wins"] == 1

    def right(lead: np.ndarray) -> float:
        return round(100 * float(((lead > 0) == won)[lead != 0].sum()) / max(len(won), 1), 1)

    return {
        "the criteria with the reference": right(table["levels"] + shift),
        "the criteria without it": right(table["levels"]),
        "the verdict head alone": right(table["head"]),
        "the longer answer": right(table["longer"]),
        "the shorter answer": right(-table["longer"]),
    }


def report(train: dict[str, np.ndarray], test: dict[str, np.ndarray], k: float) -> dict[str, Any]:
    choice = chosen(train, k)
    weights = choice["weights"]
    by_family = {}
    for family in sorted(set(test["family"])):
        keep = test["family"] == family
        part = {name: values[keep] for name, values in test.items()}
        by_family[str(family)] = {"pairs": int(keep.sum()), **accuracies(part, weights)}
    return {
        "train_pairs": len(train["a_wins"]),
        "test_pairs": len(test["a_wins"]),
        **choice,
        "train": accuracies(train, weights),
        "test": accuracies(test, weights),
        "test_by_family": by_family,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"The criterion head's reference shift: {result['train_pairs']} reference-decided "
        f"training pairs, {result['test_pairs']} held out; k = {result['logits_per_level']} "
        f"logits per level point.",
        "",
        "| candidate | CV accuracy % of the criteria's decision |",
        "|---|---:|",
    ]
    for name, found in result["candidates"].items():
        mark = " (chosen)" if name == result["chosen"] else ""
        lines.append(f"| {name}{mark} | {100 * (found['cv_accuracy'] or 0):.1f} |")
    lines += ["", f"Weights (level points): {result['weights']}", ""]
    lines += ["| decision | train | test |", "|---|---:|---:|"]
    for name, value in result["test"].items():
        lines.append(f"| {name} | {result['train'][name]} | {value} |")
    lines += ["", "| family | pairs | criteria with the reference | without |"]
    lines.append("|---|---:|---:|---:|")
    for family, row in result["test_by_family"].items():
        lines.append(
            f"| {family} | {row['pairs']} | {row['the criteria with the reference']} | "
            f"{row['the criteria without it']} |"
        )
    return "\n".join(lines) + "\n"


def judged_file(path: Path) -> list[Judgment]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return [Judgment.model_validate_json(line) for line in lines if line.strip()]


def write_shift(head: CriterionHead, path: Path, record: str | None) -> str:
    """The fitted reference weights written where the judge keeps them: its decision record's
    criterion_shift (and the tables of the rule; the levels held by the record's rules that
    can hold them, as before), or, for a judge without a record, the criterion head's file
    at `path`."""
    from dataclasses import replace as replaced

    from app.deciding.criterion_head import shift_fields, shift_rule
    from app.deciding.decision import CAP_RULES, Fitted, load_decision
    from models.registry import MODELS_DIR
    from training.decision.record_file import write_section

    if record is None:
        head.save(path)
        return f"wrote the reference weights into {path}"
    fitted = Fitted(
        by="python -m training.heads.reference_levels",
        rows="the reference-decided training pairs (training/datasets/reference_decided.py), "
        "read with their references",
        cv="request-grouped CV accuracy of the pairs' criterion verdicts (levels-report)",
    )
    target = MODELS_DIR / record
    before = load_decision(target)
    held = before.criterion_shift.caps if before.criterion_shift else ()
    caps = tuple(r.name for r in before.rules if r.name in CAP_RULES and r.name in held)
    write_section(target, "criterion_shift", shift_rule(head, fitted, caps))
    replaced(head, **dict.fromkeys(shift_fields(head), 0.0)).save(path)  # one place: the record
    return f"wrote the reference weights into {target}"


def main(argv: list[str] | None = None) -> int:
    from app.deciding.state_head import load_state_head
    from models.registry import MODELS_DIR, load_registry
    from training.device.reading_cache import ReadingCache

    parser = argparse.ArgumentParser(
        prog="python -m training.heads.reference_levels", description=__doc__
    )
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    parser.add_argument("--run", type=Path, default=RUN, help="reference_fit's run folder")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--criterion-run", type=Path, default=CRITERION_RUN, help="the criterion head's pairs"
    )
    parser.add_argument("--head", type=Path, help="the criterion head (default: the judge's)")
    parser.add_argument("--write", action="store_true", help="write the weights into --head")
    args = parser.parse_args(argv)
    entry = load_registry().get(args.model)
    if args.head is None and not (entry.judging.criterion_head and entry.judging.state_head):
        print(f"{entry.name} has no criterion head: nothing to fit", file=sys.stderr)
        return 0
    state_head = load_state_head(MODELS_DIR / str(entry.judging.state_head))
    path = args.head or MODELS_DIR / str(entry.judging.criterion_head)
    criterion_head = CriterionHead.load(path)
    caches = [ReadingCache(folder) for folder in sorted(args.run.glob("readings*"))]
    tables = {}
    for name in ("train", "test"):
        rows = list(read_rows(args.data / f"{name}.jsonl"))
        judged = judged_file(args.run / f"{name}.jsonl")
        tables[name] = pair_table(rows, judged, caches, state_head, criterion_head)
    if not len(tables["train"]["a_wins"]):
        print(f"{args.run}: no judged training pair with its reads kept", file=sys.stderr)
        return 2
    k, measured = logits_per_level(args.criterion_run, state_head, criterion_head)
    print(f"k = {k:.4f} logits per level point ({measured} pairs of {args.criterion_run})")
    result = report(tables["train"], tables["test"], k)
    if args.write:
        unset = dict.fromkeys(REFERENCE, 0.0)  # a signal not chosen reads nothing
        fitted_head = replace(criterion_head, **{**unset, **result["weights"]})
        print(write_shift(fitted_head, path, entry.judging.decision_record))
    write_report(args.run, result, render(result), "levels-report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
