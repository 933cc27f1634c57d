"""Fit a judge's whole decision record at once, from the one cache of reads.

    python -m training.decision.fit [--config training/configs/decision_fit.yaml]
                                    [--reads DIR] [--own-reads DIR] [--write]

The cache (training/decision/reads.py) holds each training pair's value of every signal the
engine read, with its label (A, B or tie) and its request. The candidates and how they are
chosen are data (`--config`). The fit:

0. **The head** (`head`): the state head's vector and the weights fitted with it (the
   likelihood features and request relevance), one logistic fit at the variant and strength
   its file records, from the committed reads of its fitting set (training/decision/
   head_fit.py); the record's weights of those signals and `state_head.json` are written
   from it. The pairwise part is then fitted around these weights (the config's `held`);
   the cache's `states` values are the engine's under the head before, which the head fitted
   again follows closely (its report says how closely).
0. **The grade** (`grade`: one answer's 1-10 grade): the head's grade vector and the record's
   grade rule, a ridge over the states and likelihood features of every rated single answer
   of the fitting split, from the same committed reads (training/decision/head_fit.py).
1. **Rules** first, in the config's order: a rule decides the pairs where its value is at
   least its threshold either way; its confidence is the share of those training pairs it
   got right, smoothed ((right + 1) / (decided + 2)), so never certainty. The pairs it
   decides leave the weights' fit.
2. **Weights**: an ordinal logit over the signals (P(A) = sigmoid(score - t), P(B) =
   sigmoid(-score - t), a tie between: a third class, where the training pairs have ties),
   fed both orders of every pair (no position preference, no intercept), with an L2 penalty
   on the signals scaled to unit size; the penalty's strength chosen by request-grouped
   cross-validation (folds never split a request). A pair a candidate's own weights were
   fitted on (the config's `fitted_on`: the state head's states on its fitting set) leaves
   this fit: the signal's value is in-sample there, and every fold would trust it too much.
   The config's `held` signals keep the weights the judge's record holds (and where they were
   fitted); their sum is each pair's offset, the other weights are fitted around it.
3. **Signals chosen**: backward from all candidates with data, a signal is dropped where the
   cross-validated log loss without it is less than `min_gain + price_per_second x seconds`
   above the loss with it (it does not earn its cost). A candidate dearer than the config's
   `max_seconds` a pair is not tried.
3. **The judge's own answer** (`--own-reads`): its candidates (`self_reference_*`), steps 2
   and 3 apart, on the pairs read with it (training/decision/reads.py's `own-reads/`),
   around the same held weights: no pair has both a reference and an own answer, and one
   penalty for both shrank the reference's weights.

4. **The rubric grade** (`rubric_grade`: one answer's grade on a rubric, with a reference): a
   ridge over its signals on the cache's graded rows (training/decision/graded.py), the
   signal set and strength chosen by request-grouped CV (training/decision/grade_fit.py).
5. **The criterion shift** (`criterion_shift`: how a reference moves the criterion head's
   levels): the same penalised logit around the criterion head's own lead on the cache's
   reference-decided training pairs (training/decision/levels.py), the pairs a rule decides
   left to the rule, which holds their levels (training/decision/shift_fit.py).

`--sections` names the parts refitted (default: `head`, `pairwise`, `rubric_grade` and
`criterion_shift`; `grade` when named; a part not named is kept as the judge's record has it).
`--write` writes the record beside the judge's head (`decision.yaml`), the head
(`state_head.json`, where `head` or `grade` is refitted) and the model card's table of the rule
(training/decision/record_file.py); `--out FILE` writes the record (and the head beside it) as
a trial; without either the fit is printed alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.deciding.decision import DecisionRecord, DeclaredRule, load_decision
from models.registry import load_registry
from training.decision.fit_config import CONFIG, FitConfig, load_config
from training.decision.logit import (
    Pairs,
    Weights,
    agreement,
    best_strength,
    fit_weights,
    folds_of,
    log_loss,
    out_of_fold,
)
from training.decision.reads import OUT as READS
from training.decision.reads import (
    OWN_READS,
    REWARD_READS,
    labelled_rows,
    with_labels,
    with_own_reads,
)
from training.decision.record_file import record_path, write_record_file
from training.evaluation.reference_runs import DEFAULT_FILE

LABELS = {"A": 0, "B": 1, "tie": 2}
SMOOTHED = "(right + 1) / (decided + 2)"  # a rule's confidence: never certainty


def labelled(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The labelled, read rows of the cache (errors and unlabelled rows left out)."""
    return [r for r in rows if r.get("values") and r.get("label") in LABELS]


def pairs_of(
    rows: Sequence[dict[str, Any]], names: Sequence[str], held: dict[str, float] | None = None
) -> Pairs:
    """The labelled, read rows of the cache as arrays; `held`: the weights kept as they are,
    whose sum is each pair's offset."""
    kept = labelled(rows)
    held = held or {}
    offset = [sum(w * (r["values"].get(n) or 0.0) for n, w in held.items()) for r in kept]
    return Pairs(
        tuple(names),
        np.array([[r["values"].get(n) or 0.0 for n in names] for r in kept], dtype=np.float64),
        np.array([[n in r["values"] for n in names] for r in kept], dtype=bool),
        np.array([LABELS[r["label"]] for r in kept]),
        np.array([r["request"] for r in kept]),
        np.array([r["set"] for r in kept]),
        np.array(offset, dtype=np.float64),
    )


@dataclass(frozen=True)
class RuleFit:
    name: str
    decided: int
    right: int

    @property
    def confidence(self) -> float:
        return (self.right + 1) / (self.decided + 2)


def fit_rules(pairs: Pairs, rules: Sequence[DeclaredRule]) -> tuple[list[RuleFit], np.ndarray]:
    """Each rule's count of decided and right training pairs, and which pairs no rule
    decides (the first rule that fires decides, as app/deciding/decision.py applies them)."""
    open_ = np.ones(len(pairs.labels), dtype=bool)
    fits = []
    for rule in rules:
        if rule.name not in pairs.names:
            continue
        value = pairs.columns([rule.name])[:, 0]
        fires = open_ & (np.abs(value) >= rule.at_least)
        favoured = np.where(value > 0, 0, 1)
        right = int(np.sum(fires & (favoured == pairs.labels)))
        fits.append(RuleFit(rule.name, int(fires.sum()), right))
        open_ &= ~fires
    return [f for f in fits if f.decided], open_


@dataclass(frozen=True)
class Choice:
    names: tuple[str, ...]
    strength: float
    loss: float
    probabilities: np.ndarray
    dropped: tuple[tuple[str, float], ...]  # each dropped signal and what dropping it cost
    edge: float  # the grid's weakest penalty: chosen there, the grid is too narrow


def read_on_cost(pairs: Pairs, name: str, without: np.ndarray, with_it: np.ndarray) -> float:
    """What leaving `name` out costs in log loss per pair it is read on (a reference's
    signal is read only on pairs with one, and costs only there)."""
    read_on = pairs.present[:, pairs.names.index(name)]
    if not read_on.any():
        return 0.0
    labels = pairs.labels[read_on]
    return log_loss(without[read_on], labels) - log_loss(with_it[read_on], labels)


def choose_signals(pairs: Pairs, config: FitConfig) -> Choice:
    """Backward from every candidate with data: drop the signal that earns its cost least,
    while one does not earn it (section 3 of the module's docstring)."""
    fold = folds_of(pairs.groups, config.folds)
    seconds = {s.name: s.seconds for s in config.signals}
    names = [n for n in pairs.names if np.any(pairs.columns([n]))]
    c, loss, probabilities = best_strength(pairs, names, config, fold)
    dropped: list[tuple[str, float]] = []
    while names:  # the last one too: against the held signals alone (a part fitted apart)
        trials = []
        for name in names:
            found = out_of_fold(pairs, [n for n in names if n != name], c, fold)
            cost = read_on_cost(pairs, name, found, probabilities)
            price = config.min_gain + config.price_per_second * seconds[name]
            trials.append((cost - price, name, cost, found))
        earns, name, cost, found = min(trials, key=lambda item: item[0])
        if earns >= 0:
            break
        names.remove(name)
        dropped.append((name, cost))
        loss, probabilities = log_loss(found, pairs.labels), found
    c, loss, probabilities = best_strength(pairs, names, config, fold)
    edge = max(config.strengths)
    return Choice(tuple(names), c, loss, probabilities, tuple(dropped), edge)


@dataclass(frozen=True)
class Fit:
    """What the fit found: the rules' counts, the chosen signals and their weights."""

    rules: list[RuleFit]
    choice: Choice
    weights: Weights
    pairs: Pairs  # the pairs the weights were fitted on (those no rule decided)
    seen: int = 0  # the pairs left out: a candidate's own weights were fitted on them

    def report(self) -> str:
        lines = [
            f"{len(self.pairs.labels)} pairs for the weights ({self.seen} left out: a "
            "candidate's own weights were fitted on them), by set:"
        ]
        for name in np.unique(self.pairs.sets):
            mine = self.pairs.sets == name
            right = agreement(self.choice.probabilities[mine], self.pairs.labels[mine])
            lines.append(f"  {name}: {mine.sum()} pairs, cross-validated agreement {right:.1%}")
        lines.append(
            f"signals: {', '.join(self.choice.names)} (C {self.choice.strength:g}, "
            f"CV log loss {self.choice.loss:.4f}); tie threshold {self.weights.tie_threshold:.3f}"
        )
        if self.choice.strength == self.choice.edge:
            lines.append(
                f"  C {self.choice.edge:g} is the grid's top: widen the config's strengths"
            )
        lines += [f"  dropped {n} (cost {c:+.4f} nats)" for n, c in self.choice.dropped]
        lines += [f"  {n}: {w:+.5g}" for n, w in zip(self.weights.names, self.weights.weights)]
        lines += [
            f"rule {r.name}: {r.right} of {r.decided} decided pairs right, confidence "
            f"{r.confidence:.3f}"
            for r in self.rules
        ]
        return "\n".join(lines)


def fit(
    rows: Sequence[dict[str, Any]], config: FitConfig, held: dict[str, float] | None = None
) -> Fit:
    """Rules, then the signals and their weights, on the cached rows (the weights without the
    pairs a candidate's own weights were fitted on: `seen_by`, training/decision/in_sample.py),
    around the `held` weights (the config's `held` signals, as the judge's record has them)."""
    held = held or {}
    if missing := sorted(set(config.held) - set(held)):
        raise ValueError(f"held: the judge's record has no weight of {', '.join(missing)}")
    candidates = {s.name for s in config.signals}
    free = config.free()
    everything = pairs_of(rows, free + [r.name for r in config.rules], held)
    rules, open_ = fit_rules(everything, config.rules)
    unseen = np.array([not candidates & set(r.get("seen_by", ())) for r in labelled(rows)])
    pairs = everything.subset(open_ & unseen, free)
    choice = choose_signals(pairs, config)
    values = pairs.columns(choice.names)
    weights = fit_weights(values, pairs.labels, choice.names, choice.strength, pairs.offset)
    return Fit(rules, choice, weights, pairs, int(np.sum(open_ & ~unseen)))


def _rows_of(found: Fit, held: Sequence[str]) -> str:
    pairs = found.pairs
    sets = ", ".join(f"{name} {int((pairs.sets == name).sum())}" for name in np.unique(pairs.sets))
    ties = int((pairs.labels == 2).sum())
    text = f"{len(pairs.labels)} training pairs no rule decided ({sets}; {ties} ties)"
    if found.seen:
        text += f", {found.seen} more left out where a signal's own weights were fitted on them"
    if held:
        text += f"; around {', '.join(held)}, held as their fits left them"
    return text


def rules_data(config: FitConfig, found: Sequence[RuleFit]) -> list[dict[str, Any]]:
    """The rules the training pairs decided, in the config's order, with their confidences."""
    by_name = {r.name: r for r in found}
    rules = []
    for rule in config.rules:
        if (counted := by_name.get(rule.name)) is None:
            continue
        rows = f"{counted.decided} training pairs it decides, {counted.right} right"
        where = {"by": "python -m training.decision.fit", "rows": rows, "cv": SMOOTHED}
        data = rule.model_dump(mode="json", exclude_defaults=True)
        rules.append(data | {"confidence": round(counted.confidence, 4), "fitted": where})
    return rules


def record_data(
    config: FitConfig, found: Fit, doubt_below: float, kept: DecisionRecord | None = None
) -> dict[str, Any]:
    """The record's data: the chosen signals with their weights (the held ones as `kept`, the
    judge's record before, has them, with where they were fitted), the rules with their
    confidences, the tie threshold and where each was fitted."""
    rules = rules_data(config, found.rules)
    return {
        "judge": config.judge,
        "scale": "logit",
        "signals": signal_entries(config, found, kept),
        "rules": rules,
        "tie_threshold": round(found.weights.tie_threshold, 4),
        "doubt_below": doubt_below,
        "fitted": fitted_note(config, found),
        "shares": {share: words for share, words in config.shares.items()},
    }


def fitted_note(config: FitConfig, found: Fit) -> dict[str, str]:
    """Where the fit's weights were fitted: its rows and its cross-validation."""
    choice = found.choice
    right = agreement(choice.probabilities, found.pairs.labels)
    return {
        "by": "python -m training.decision.fit",
        "rows": _rows_of(found, config.held),
        "cv": f"request-grouped {config.folds}-fold: log loss {choice.loss:.4f}, agreement "
        f"{right:.1%} (C {choice.strength:g})",
    }


def signal_entries(
    config: FitConfig, found: Fit, kept: DecisionRecord | None = None
) -> list[dict[str, Any]]:
    """The record's signals, in the config's order: the held ones as `kept` has them, the
    chosen ones with their fitted weights and where they were fitted."""
    fitted = fitted_note(config, found)
    weights = dict(zip(found.weights.names, found.weights.weights))
    held = {s.name: s for s in kept.signals} if kept is not None else {}
    signals = []
    for s in config.signals:
        if s.name in config.held:
            signals.append(held[s.name].model_dump(mode="json", exclude_defaults=True))
        elif s.name in weights:
            weight = round(float(weights[s.name]), 6)
            data = s.model_dump(mode="json", exclude_defaults=True)
            signals.append(data | {"weight": weight, "fitted": fitted})
    return signals


def write_record(data: dict[str, Any], out: Path | None = None) -> str:
    """Write the judge's record and its tables of the rule (or, to `out`, the record alone:
    a trial); say what was written."""
    path = out or record_path(data["judge"])
    write_record_file(path, data, tables=out is None)
    if out is not None:
        return f"wrote {path}, a trial"
    return f"wrote {path} and its tables of the rule"


SECTIONS = ("head", "grade", "pairwise", "rubric_grade", "criterion_shift")
# the grade stage is fitted when named: measured on the held-out rated answers and not adopted
# (training/EXPERIMENTS.md, session 51), the shipped grade is the head's own fit's
DEFAULT_SECTIONS = tuple(s for s in SECTIONS if s != "grade")


def declared(record: DecisionRecord) -> dict[str, Any]:
    """The record's data as it is written: its fields with values, and its scale and tie
    threshold always (the rule says them even where they are the defaults)."""
    given = record.model_dump(mode="json", exclude_defaults=True)
    said = ("scale", "tie_threshold")
    names = [n for n in type(record).model_fields if n in given or n in said]
    return {n: given.get(n, getattr(record, n)) for n in names}


def fitted_pairwise(
    config: FitConfig,
    reads: Path,
    kept: DecisionRecord,
    own_reads: Path | None = None,
    reward_reads: Path | None = None,
) -> dict[str, Any]:
    """The record's pairwise part (signals, rules, tie and doubt thresholds) fitted on the
    cached pairs, around the weights `kept` holds of the config's `held` signals; with
    `own_reads`, the judge's own answer's candidates fitted apart on the pairs read with it
    (no pair has both: `FitConfig.own_answer_part`), and with `reward_reads`, the reward
    model's on the requests it never trained on (`FitConfig.reward_part`), their chosen
    signals added."""
    rows = labelled_rows(reads, config.fitted_on, config.judge)
    if not rows:
        raise SystemExit(f"{reads}: no reads cached: run python -m training.decision.reads")
    doubt = load_registry().get(config.judge).judging.uncertain_below  # type: ignore[union-attr]
    held = {n: w for n, w in kept.weights().items() if n in config.held}
    main = config.main_part()
    found = fit(rows, main, held)
    print(found.report())
    data = record_data(main, found, doubt, kept)
    parts = []  # (what it is, its config, its rows)
    if own_reads is not None and own_reads.is_dir():
        own = with_own_reads([], own_reads)
        parts.append(
            ("The judge's own answer, on the pairs read with it", config.own_answer_part(), own)
        )
    if reward_reads is not None and reward_reads.is_dir():
        from training.decision.reward_reads import held_out_rows

        held_out = held_out_rows(reward_reads)
        parts.append(
            ("The reward model, on requests it never trained on", config.reward_part(), held_out)
        )
    added = []
    for what, part, part_rows in parts:
        labelled_part = with_labels(part_rows, config.fitted_on, config.judge)
        apart, chosen = apart_signals(part, labelled_part, held, kept)
        print(f"{what}, fitted apart:\n{apart.report()}")
        added += chosen
    return data | {"signals": [*data["signals"], *added]}


def apart_signals(
    part: FitConfig, rows: Sequence[dict[str, Any]], held: dict[str, float], kept: DecisionRecord
) -> tuple[Fit, list[dict[str, Any]]]:
    """A part's candidates (`part`: the config of those alone) fitted apart on `rows` around
    the `held` weights, and the record's entries of those it chose."""
    apart = fit(rows, part, held)
    entries = signal_entries(part, apart, kept)
    return apart, [signal for signal in entries if signal["name"] not in part.held]


def fitted_rubric_grade(file: Path, folder: Path) -> dict[str, Any]:
    """The rubric grade fitted on the cache's graded rows of `file` (their labels)."""
    from training.decision.grade_fit import render, report, table
    from training.decision.graded import labelled_graded

    rows = labelled_graded(file, folder)
    if not rows:
        raise SystemExit(f"{folder}: no graded rows cached: run python -m training.decision.graded")
    result = report(table(rows))
    print(render(result))
    return result["grade"].model_dump(mode="json", exclude_defaults=True)


def fitted_criterion_shift(kept: DecisionRecord, reads: Path, k: float) -> dict[str, Any]:
    """The criterion head's shift fitted on the cache's reference-decided training pairs (their
    values and the criterion head's lead), reported on the held-out ones after."""
    from training.decision.shift_fit import render, report, shift_section, shift_table

    train = shift_table("train", kept, reads)
    if not len(train["a_wins"]):
        raise SystemExit(f"{reads}: no criterion-head leads: run training.decision.levels")
    result = report(train, shift_table("test", kept, reads), k)
    print(render(result))
    return shift_section(result, kept)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.decision.fit", description=__doc__)
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--reads", type=Path, default=READS)
    parser.add_argument("--write", action="store_true", help="write the judge's decision.yaml")
    parser.add_argument("--out", type=Path, help="write the record here instead (a trial)")
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=SECTIONS,
        default=list(DEFAULT_SECTIONS),
        help="what to refit",
    )
    parser.add_argument("--graded", type=Path, default=DEFAULT_FILE, help="the graded rows' file")
    parser.add_argument(
        "--own-reads",
        type=Path,
        default=OWN_READS,
        help="the pairs read with the judge's own answer, whose candidates are fitted apart "
        "on them (default: own-reads/; a folder that is not there: none)",
    )
    parser.add_argument(
        "--reward-reads",
        type=Path,
        default=REWARD_READS,
        help="the reward model's reads, whose candidates are fitted apart on the requests it "
        "never trained on (default: reward-reads/; a folder that is not there: none)",
    )
    args = parser.parse_args(argv)
    config = load_config(args.config)
    kept = load_decision(record_path(config.judge))  # its held weights and rules of grades
    head = None
    if "head" in args.sections:
        from training.decision.head_fit import refitted_head

        kept, head = refitted_head(kept)
    data = declared(kept)
    if "grade" in args.sections:
        from training.decision.head_fit import fitted_grade
        from training.decision.in_sample import judge_head

        data["grade"], head = fitted_grade(config.judge, head or judge_head(config.judge)[1])
    if "pairwise" in args.sections:
        data |= fitted_pairwise(config, args.reads, kept, args.own_reads, args.reward_reads)
    if "rubric_grade" in args.sections:
        data["rubric_grade"] = fitted_rubric_grade(args.graded, args.reads / "graded")
    if "criterion_shift" in args.sections:
        if config.logits_per_level is None:
            raise SystemExit(f"{args.config}: logits_per_level: needed to fit criterion_shift")
        shift = fitted_criterion_shift(kept, args.reads, config.logits_per_level)
        data["criterion_shift"] = shift
    if args.write or args.out:
        print(write_record(data, args.out))
        if head is not None:
            from training.decision.head_fit import write_head

            print(write_head(head, config.judge, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
