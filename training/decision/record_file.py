"""A fitted decision written as the judge's record (decision.yaml beside its head) and as the
model card's table of the rule, both from the same DecisionRecord."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

from app.deciding.decision import DecisionRecord, GradeRule, ShiftRule, load_decision
from models.registry import MODELS_DIR, load_registry

HEADER = (
    "# {judge}'s whole rule: a pair's verdict and one answer's grade\n"
    "# (app/deciding/decision.py says how it is applied):\n"
    "# score = sum(weight x value) over the signals a pair has; P(A) = sigmoid(score - t),\n"
    "# P(B) = sigmoid(-score - t), a tie between (t = tie_threshold); a rule decides outright\n"
    "# where its value is at least its threshold.\n"
)
FITTED_BY = "`python -m training.decision.fit --write` from the one cache of reads"
TABLE_START = "<!-- the rule: written from decision.yaml by training.decision -->"
TABLE_END = "<!-- the rule ends -->"


class _Plain(yaml.SafeDumper):
    """YAML without anchors: every signal's provenance written out where it is."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def record_path(judge: str | None = None) -> Path:
    """Where the registry's `judge` (default: the default judge) keeps its record."""
    entry = load_registry().get(judge)
    if entry.judging is None or entry.judging.decision_record is None:
        raise SystemExit(f"'{entry.name}' names no decision record in the registry")
    return MODELS_DIR / entry.judging.decision_record


def record_text(data: dict[str, Any], by: str = FITTED_BY) -> str:
    DecisionRecord.model_validate(data)
    dumped = yaml.dump(
        data, Dumper=_Plain, sort_keys=False, width=96, allow_unicode=True, default_flow_style=False
    )
    written = (
        f"Written by {by}; do not edit by hand. The model card's table of the rule and "
        "docs/reference.md's are made from this file."
    )
    lines = textwrap.wrap(written, width=92, initial_indent="# ", subsequent_indent="# ")
    return HEADER.format(judge=data["judge"]) + "\n".join(lines) + "\n" + dumped


def rule_table(record: DecisionRecord) -> str:
    """The record as the model card's table of the rule (between TABLE_START and END)."""
    lines = [
        TABLE_START,
        "",
        f"Pairwise, on the {record.scale} scale: score = the sum of weight x value over the "
        f"signals a pair has; P(A) = sigmoid(score - t), P(B) = sigmoid(-score - t) and a tie "
        f"between, with t = {record.tie_threshold:g}; uncertain below {record.doubt_below:g} "
        "confidence (`decision.yaml` beside this card).",
        "",
        "| signal | weight | value (A's lead over B) | reads | fitted by, on |",
        "|---|---:|---|---|---|",
    ]
    for signal in record.signals:
        where = f"`{signal.fitted.by}`, {signal.fitted.rows}"
        reference = " (with a reference)" if signal.reference else ""
        lines.append(
            f"| `{signal.name}`{reference} | {signal.weight:g} | {signal.value} | "
            f"{', '.join(signal.reads)} | {where} |"
        )
    if record.rules:
        lines += [
            "",
            "Rules, applied first, in this order (the first that fires decides):",
            "",
            "| rule | decides where | then | confidence | fitted on |",
            "|---|---|---|---:|---|",
        ]
        for rule in record.rules:
            lines.append(
                f"| `{rule.name}` | {rule.when} (value: {rule.value}) | the answer it "
                f"favours wins | {rule.confidence:.1%} | {rule.fitted.rows} |"
            )
    if record.grade is not None:
        lines += ["", *grade_table(record.grade, "One answer's grade")]
    if record.rubric_grade is not None:
        title = "A one-criterion rubric's grade of one answer, with a reference"
        lines += ["", *grade_table(record.rubric_grade, title)]
    if record.criterion_shift is not None:
        lines += ["", *shift_table(record.criterion_shift)]
    return "\n".join([*lines, "", TABLE_END])


def shift_table(rule: ShiftRule) -> list[str]:
    """The criterion shift's lines of the table."""
    lines = [
        "With a reference, the criterion head moves every criterion level of an answer by the "
        "sum of weight x (its value minus the mean over the item's answers), each held in its "
        "range (level points):",
        "",
        "| signal | weight | value (the answer's own) | held in | reads | fitted by, on |",
        "|---|---:|---|---|---|---|",
    ]
    for signal in rule.signals:
        held = f"{signal.bounds[0]:g} to {signal.bounds[1]:g}" if signal.bounds else "-"
        lines.append(
            f"| `{signal.name}` | {signal.weight:g} | {signal.value} | {held} | "
            f"{', '.join(signal.reads)} | `{signal.fitted.by}`, {signal.fitted.rows} |"
        )
    for name in rule.caps:
        lines += [
            "",
            f"Where the rule `{name}` decides, an answer that {CAP_SHARES[name]} (wrong in "
            "part: at best half right) is held at most at 1 + 4.5s on the criteria a "
            "reference judges (not style or format): the rule's confidence above is theirs.",
        ]
    return lines


# each rule that holds the levels: the answer's share by it, in words
CAP_SHARES = {
    "reference_behaviour": "has a function giving a share s < 1 of the reference function's "
    "results",
    "reference_order": "states a share s < 1 of the request's items in the reference's order",
}


def grade_table(rule: GradeRule, title: str) -> list[str]:
    """A grade rule's lines of the table."""
    low, high = rule.scale
    pearson = (
        f" (Pearson with the label, out of fold: {rule.cv_pearson:g})" if rule.cv_pearson else ""
    )
    lines = [
        f"{title}: {rule.intercept:g} + the sum of weight x value over its signals, each held "
        f"in its range, clipped to {low}-{high}{pearson}.",
        "",
        "| signal | weight | value (the answer's own) | held in | reads | fitted by, on |",
        "|---|---:|---|---|---|---|",
    ]
    for signal in rule.signals:
        where = f"`{signal.fitted.by}`, {signal.fitted.rows}"
        held = f"{signal.bounds[0]:g} to {signal.bounds[1]:g}" if signal.bounds else "-"
        lines.append(
            f"| `{signal.name}` | {signal.weight:g} | {signal.value} | {held} | "
            f"{', '.join(signal.reads)} | {where} |"
        )
    return lines


def with_table(card: str, table: str) -> str:
    """`card` with its table of the rule replaced (or put before its first `## ` section)."""
    if TABLE_START in card:
        before, rest = card.split(TABLE_START, 1)
        return before + table + rest.split(TABLE_END, 1)[1]
    head, sep, rest = card.partition("\n## ")
    return f"{head}\n## The rule\n\n{table}\n{sep}{rest}"


DOCS = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def tables_written(path: Path) -> dict[Path, str]:
    """The model card beside the record at `path`, and docs/reference.md for the default
    judge, each with its table of the rule written from the record."""
    table = rule_table(load_decision(path))
    found = {}
    targets = [path.with_name("MODEL_CARD.md")]
    if path == record_path():
        targets.append(DOCS)
    for target in targets:
        if target.is_file():
            found[target] = with_table(target.read_text(encoding="utf-8"), table)
    return found


def write_record_file(
    path: Path, data: dict[str, Any], tables: bool = True, by: str = FITTED_BY
) -> None:
    """Write the record `data` to `path` (validated; `by`: the command that wrote it) and,
    with `tables`, the tables of the rule beside it; the loaded records are read again after."""
    path.write_text(record_text(data, by), encoding="utf-8")
    load_decision.cache_clear()
    if tables:
        for target, text in tables_written(path).items():
            target.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Write the tables of the rule from the record as it is (`--check`: fail where not)."""
    parser = argparse.ArgumentParser(prog="python -m training.decision.record_file")
    parser.add_argument("--judge", help="a registry name (default: the default judge)")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    stale = []
    for target, text in tables_written(record_path(args.judge)).items():
        if target.read_text(encoding="utf-8") != text:
            stale.append(target)
            if not args.check:
                target.write_text(text, encoding="utf-8")
    verb = "differs: run without --check" if args.check else "written"
    print("\n".join(f"{t}: {verb}" for t in stale) or "the tables of the rule are the record's")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
