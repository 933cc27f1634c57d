"""A judge's decision record (app/deciding/decision.py) written from the weights its fits
left today: the state head's file (its likelihood, relevance, length and reference weights)
and its registry entry's tie band and doubt threshold.

    python -m training.heads.decision_record [--judge NAME] [--check]

Until one fitting procedure writes the record itself (issue 63), this is how the record is
kept equal to the weights the engine applies: `--check` (and a test) fails where the
committed record differs from what this writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from app.deciding.decision import DecisionRecord
from app.deciding.head_record import record_of
from app.deciding.state_head import load_state_head
from models.registry import MODELS_DIR, load_registry

RECORD_FILE = "decision.yaml"
HEADER = (
    "# {judge}'s whole pairwise rule: score = sum(weight * value) over these signals,\n"
    "# P(A) = sigmoid(score); a tie within `tie_within` of 1/2, uncertain below `doubt_below`\n"
    "# (the registry's uncertain_below). Written by `python -m training.heads.decision_record`\n"
    "# from the weights its fits left (state_head.json, the registry); the engine applies the\n"
    "# same record (app/deciding/decision.py) and the model card's table of the rule is made\n"
    "# from it.\n"
)


class _Plain(yaml.SafeDumper):
    """YAML without anchors: every signal's provenance written out where it is."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def written(judge: str | None = None) -> tuple[Path, str]:
    """The record's path and its text as this module writes it, for the registry's `judge`
    (default: the default judge)."""
    entry = load_registry().get(judge)
    judging = entry.judging
    if judging is None or judging.state_head is None:
        raise SystemExit(f"'{entry.name}' has no state head: no decision record to write")
    head_path = MODELS_DIR / judging.state_head
    data = record_of(
        entry.name, load_state_head(head_path), judging.tie_margin, judging.uncertain_below
    )
    DecisionRecord.model_validate(data)
    text = HEADER.format(judge=entry.name) + yaml.dump(
        data, Dumper=_Plain, sort_keys=False, width=96, allow_unicode=True, default_flow_style=False
    )
    return head_path.with_name(RECORD_FILE), text


TABLE_START = "<!-- the rule: written from decision.yaml by training.heads.decision_record -->"
TABLE_END = "<!-- the rule ends -->"


def rule_table(record: DecisionRecord) -> str:
    """The record as the model card's table of the rule (between TABLE_START and END)."""
    lines = [
        TABLE_START,
        "",
        f"Pairwise, on the {record.scale} scale: score = the sum of weight x value over the "
        f"signals a pair has, P(A) = sigmoid(score); a tie where |P(A) - 1/2| <= "
        f"{record.tie_within:g}; uncertain below {record.doubt_below:g} confidence "
        "(`decision.yaml` beside this card).",
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
    bound = [s.name for s in record.signals if abs(s.weight) >= 100.0]
    if bound:
        lines += [
            "",
            f"At the fit's bound (100), so rules written as weights: {', '.join(bound)}.",
        ]
    return "\n".join([*lines, "", TABLE_END])


def with_table(card: str, table: str) -> str:
    """`card` with its table of the rule replaced (or put before its first `## ` section)."""
    if TABLE_START in card:
        before, rest = card.split(TABLE_START, 1)
        return before + table + rest.split(TABLE_END, 1)[1]
    head, sep, rest = card.partition("\n## ")
    return f"{head}\n## The rule\n\n{table}\n{sep}{rest}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.heads.decision_record", description=__doc__
    )
    parser.add_argument("--judge", help="a registry name (default: the default judge)")
    parser.add_argument("--check", action="store_true", help="fail where the record differs")
    args = parser.parse_args(argv)
    path, text = written(args.judge)
    card = path.with_name("MODEL_CARD.md")
    table = rule_table(DecisionRecord.model_validate(yaml.safe_load(text)))
    card_text = with_table(card.read_text(encoding="utf-8"), table) if card.is_file() else None
    if args.check:
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        same = same and (card_text is None or card.read_text(encoding="utf-8") == card_text)
        print(f"{path}: {'as written' if same else 'differs: run without --check'}")
        return 0 if same else 1
    path.write_text(text, encoding="utf-8")
    if card_text is not None:
        card.write_text(card_text, encoding="utf-8")
    print(f"wrote {path} and its card's table of the rule")
    return 0


if __name__ == "__main__":
    sys.exit(main())
