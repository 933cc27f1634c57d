"""The criterion head's reference shift (a decision record's `criterion_shift`), fitted by the
one procedure on the one cache (`python -m training.decision.fit --sections criterion_shift`).

With a reference in use, the criterion head (app/deciding/criterion_head.py) moves every
criterion of an answer by `words * share + likelihood * mean lp + check * log-odds + order *
in-order share` (each centred over the item's answers): the readings of the reference the
verdict adds too. A pair's criteria decide by A's lead in their overall: the head's own lead
`L` (level points, `training/decision/levels.py`) plus the shift's. The fit is the verdict's
(training/datasets/reference_pairs.fit_weights: weights >= 0, maximum likelihood) with `k * L`
as the fixed offset, `k` the verdict head's logits per level point of the criterion head's
lead (the fit config's `logits_per_level`, measured on the criterion head's own Auto-J pairs),
so the weights come back to level points divided by `k`. Candidates are chosen by
request-grouped cross-validation of the criteria's own decision on the reference-decided
training pairs (their signal values: the one cache's `reference` set); the held-out pairs
(their values: the saved reads of the held-out reference-decided pairs, tests/golden/) are
read after, beside the criteria without the reference, the verdict head alone and the
longer and the shorter answer, overall and by family. A pair whose functions the jail ran is
not shifted by their behaviour: the record's rule `reference_behaviour` decides it and holds
the levels (criterion_shift.caps), which the fit keeps.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.decision import CAP_RULES, DecisionRecord, Fitted, decide
from app.deciding.signals import PairReads
from app.deciding.signals import pair_values as signal_values
from training.decision.fit_config import FitConfig, load_config
from training.decision.levels import LEVELS, reference_pairs
from training.decision.logit import Pairs, agreement, best_strength, fit_weights, folds_of
from training.decision.measure import SAVED
from training.decision.reads import OUT, cached_rows, pair_key, recorded_values

HELD_OUT = SAVED[0]  # the saved reads of the dev files and the held-out reference-decided pairs

# the candidates, cheapest first (a tie goes to the earlier): columns of `shift_table`
CANDIDATES = {
    "the reference's words": ("words",),
    "the reference's likelihood": ("lead",),
    "both": ("words", "lead"),
    "both and the judge's check": ("words", "lead", "check"),
}
HEAD_FIELDS = {
    "words": "reference_words",
    "lead": "reference_likelihood",
    "check": "reference_check",
}
RULE_COLUMNS = {"reference_behaviour": "behaviour", "reference_order": "order"}


def cap_rules(record: DecisionRecord) -> list[tuple[str, float]]:
    """The record's rules that hold the criterion levels where they decide (every rule of
    CAP_RULES it has: a rule that overrides the verdict holds the criteria too), each with its
    threshold."""
    return [(r.name, r.at_least) for r in record.rules if r.name in CAP_RULES]


def ruled(table: dict[str, np.ndarray], rules: Sequence[tuple[str, float]]) -> np.ndarray:
    """Per pair, A's lead by the first rule that decides it (0: none does)."""
    found = np.zeros(len(table["a_wins"]))
    for name, threshold in reversed(rules):  # the first rule is written last: it wins
        lead = table[RULE_COLUMNS[name]]
        found = np.where(np.abs(lead) >= threshold, lead, found)
    return found


def own_score(record: DecisionRecord, values: Mapping[str, float]) -> float:
    """The verdict head's own logit for A: the record's decision from its signals read
    without a reference."""
    return decide(record, {n: v for n, v in values.items() if not n.startswith("reference")}).score


def pair_values(split: str, folder: Path = OUT, held_out: Path = HELD_OUT) -> dict[str, dict]:
    """Each pair's signal values by key: the training pairs' from the one cache's `reference`
    set, the held-out pairs' from their saved reads (by line of test.jsonl)."""
    if split == "train":
        rows = cached_rows(folder)
        return {row["key"]: row["values"] for row in rows if row.get("set") == "reference"}
    test = [item for name, item in reference_pairs() if name == "test"]
    found = {}
    with gzip.open(held_out, "rt", encoding="utf-8") as saved:
        for line in saved:
            row = json.loads(line)
            if row["file"] == "reference-page":
                found[pair_key(test[row["line"] - 1])] = recorded_values(row["parts"])
    return found


def shift_table(
    split: str, record: DecisionRecord, folder: Path = OUT, held_out: Path = HELD_OUT
) -> dict[str, np.ndarray]:
    """Per pair of `split` with its values and the criterion head's lead cached: A's lead in
    the reference's words and order (from the texts), likelihood and check (read), the
    criterion head's own lead (`levels`), the verdict head's logit, A's length lead, whether
    A is right, its request and family."""
    values = pair_values(split, folder, held_out)
    levels = {row["key"]: row["levels"] for row in cached_rows(folder / LEVELS.name)}
    columns: dict[str, list] = {name: [] for name in TABLE}
    for name, item in reference_pairs():
        key = pair_key(item)
        if name != split or key not in values or key not in levels or item.label is None:
            continue
        found = values[key]
        text = text_leads(PairReads(item, reference=item.reference))
        columns["words"].append(text.get("reference_words", 0.0))
        columns["order"].append(text.get("reference_order", 0.0))
        columns["lead"].append(found.get("reference_likelihood", 0.0))
        columns["check"].append(found.get("reference_check", 0.0))
        columns["behaviour"].append(found.get("reference_behaviour", 0.0))
        columns["levels"].append(levels[key])
        columns["head"].append(own_score(record, found))
        columns["longer"].append(float(len(item.answers[0]) - len(item.answers[1])))
        columns["a_wins"].append(float(item.label.winner == "A"))
        columns["request"].append(item.question)
        columns["family"].append(item.metadata.get("family", "?"))
    table = {name: np.array(column) for name, column in columns.items()}
    return table | {"ruled": ruled(table, cap_rules(record))}


def text_leads(pair: PairReads) -> dict[str, float]:
    """A's lead in the reference's words and order, read from the texts."""
    return signal_values(("reference_words", "reference_order"), pair)


# a shift table's columns: the signals' leads, the criterion head's, the label, the groups
TABLE = ("words", "order", "lead", "check", "behaviour", "levels", "head", "longer")
TABLE += ("a_wins", "request", "family")


def shift_pairs(table: dict[str, np.ndarray], names: Sequence[str], k: float) -> Pairs:
    """The table's pairs as the logit fits them: the signals `names`, A's win as label 0,
    `k` x the criterion head's own lead as each pair's offset."""
    values = np.column_stack([table[name] for name in names])
    labels = np.where(table["a_wins"] == 1, 0, 1)
    sets = np.full(len(labels), "reference")
    present = np.ones_like(values, dtype=bool)
    return Pairs(tuple(names), values, present, labels, table["request"], sets, k * table["levels"])


def cross_validated(pairs: Pairs, config: FitConfig) -> tuple[float, float, float]:
    """The L2 strength of lowest request-grouped CV log loss (the pairwise fit's own
    `best_strength`), that loss and the CV accuracy of the criteria's decision at it."""
    fold = folds_of(pairs.groups, min(config.folds, len(set(pairs.groups))))
    c, loss, probabilities = best_strength(pairs, pairs.names, config, fold)
    return c, loss, agreement(probabilities, pairs.labels)


def chosen(table: dict[str, np.ndarray], k: float, config: FitConfig | None = None) -> dict:
    """Each candidate's request-grouped CV (log loss, and accuracy of the criteria's own
    decision), the one chosen (the lowest loss; a costlier candidate only where it gains
    more than the fit config's `min_gain`) and its weights on all training pairs, in level
    points; fitted by the pairwise fit's penalised logit (training/decision/fit.py, its L2
    strengths) on the pairs no rule decides (a rule's pairs are its own)."""
    config = config or load_config()
    free = table["ruled"] == 0
    table = {name: values[free] for name, values in table.items()}

    found = {
        name: cross_validated(shift_pairs(table, signals, k), config)
        for name, signals in CANDIDATES.items()
    }
    best = next(iter(CANDIDATES))
    for name in CANDIDATES:
        if found[name][1] < found[best][1] - config.min_gain:
            best = name
    signals, c = CANDIDATES[best], found[best][0]
    pairs = shift_pairs(table, signals, k)
    weights = fit_weights(pairs.values, pairs.labels, signals, c, pairs.offset).weights
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
        "candidates": {
            n: {"cv_loss": round(f[1], 4), "cv_accuracy": f[2], "strength": f[0]}
            for n, f in found.items()
        },
        "chosen": best,
        "weights": chosen_weights,
    }


def reference_shift(table: dict[str, np.ndarray], weights: dict[str, float]) -> np.ndarray:
    """A's lead in the criteria's shift (level points) under `weights` (HEAD_FIELDS' and
    the bounds' names): a pair's lead is twice each answer's centred value."""
    shift = weights.get("reference_words", 0.0) * table["words"]
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
        "the criteria with the reference": right(
            np.where(table["ruled"] != 0, table["ruled"], table["levels"] + shift)
        ),
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
        "ruled_pairs": (int((train["ruled"] != 0).sum()), int((test["ruled"] != 0).sum())),
        **choice,
        "train": accuracies(train, weights),
        "test": accuracies(test, weights),
        "test_by_family": by_family,
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        f"The criterion head's reference shift: {result['train_pairs']} reference-decided "
        f"training pairs, {result['test_pairs']} held out; k = {result['logits_per_level']} "
        f"logits per level point; the rules that hold the levels decide "
        f"{result['ruled_pairs'][0]} training and {result['ruled_pairs'][1]} held-out pairs "
        "(fitted on the others).",
        "",
        "| candidate | CV log loss | CV accuracy % of the criteria's decision | L2 strength |",
        "|---|---:|---:|---:|",
    ]
    for name, found in result["candidates"].items():
        mark = " (chosen)" if name == result["chosen"] else ""
        lines.append(
            f"| {name}{mark} | {found['cv_loss']} | {100 * found['cv_accuracy']:.1f} | "
            f"{found['strength']} |"
        )
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


def shift_section(result: dict[str, Any], kept: DecisionRecord) -> dict[str, Any]:
    """The record's criterion_shift from a fit's `result`, with the levels held by the
    record's rules that held them before (its caps)."""
    from app.deciding.decision import ShiftRule
    from training.decision.fit_config import load_config

    weights = result["weights"]
    best = result["candidates"][result["chosen"]]
    fitted = Fitted(
        by="python -m training.decision.fit --sections criterion_shift",
        rows=f"{result['train_pairs'] - result['ruled_pairs'][0]} reference-decided training "
        f"pairs no rule decides (training/datasets/reference_decided.py; "
        f"{result['ruled_pairs'][0]} more are the caps' rules'), read with their references",
        cv=f"request-grouped CV around k = {result['logits_per_level']} x the criterion "
        f"head's lead: log loss {best['cv_loss']}, the criteria's decision right "
        f"{100 * best['cv_accuracy']:.1f}% (C {best['strength']})",
    )
    config, signals = load_config(), []
    for name, weight in weights.items():
        if name.endswith("_bound") or not weight:
            continue
        bound = weights.get(f"{name}_bound")
        held = (-bound, bound) if bound else None
        signals.append(config.fitted_signal("shift_signals", name, weight, fitted, held))
    caps = tuple(name for name, _ in cap_rules(kept))
    rule = ShiftRule(signals=tuple(signals), caps=caps, fitted=fitted)
    return rule.model_dump(mode="json", exclude_defaults=True)
