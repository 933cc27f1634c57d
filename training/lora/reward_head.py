"""The reward model's trained value heads as the engine's state head and its judge's
decision record (app/deciding/state_head.py, app/deciding/decision.py): the pairwise head's
reward difference is the `states` signal, the grade head's reward its grade.

    python -m training.lora.reward_head --pairs-run DIR [--grades-run DIR] \\
        --gguf-name MERGED.gguf --out models/judges/NAME/state_head.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from training.lora.reward_model import HALF_RANGE, MID_RATING, ValueHead


def as_state_head(  # type: ignore[no-untyped-def]
    pairs_head: ValueHead,
    base_file: str,
    grade_head: ValueHead | None = None,
    scale: float = 1.0,
    fitted_on: dict | None = None,
):
    """The trained heads as the engine's state head (app/deciding/state_head.py), read on the
    GGUF with the adapter in (`base_file`): `scale` times the reward difference of two
    answers is its pairwise score (the last-state half of its weights; the bias cancels;
    `scale` the calibration map, training.evaluation.reward_report), and the grade head's
    reward times HALF_RANGE its grade's part (its record adds the intercept: reward_record)."""
    from app.deciding.state_head import StateHead

    zeros = [0.0] * len(pairs_head.weights)
    grade: dict = {}
    if grade_head is not None:
        grade = {"grade_weights": tuple(zeros + (HALF_RANGE * grade_head.weights).tolist())}
    return StateHead(
        base_file=base_file,
        reads="reply",
        weights=tuple(zeros + (scale * pairs_head.weights).tolist()),
        fitted_on=fitted_on
        or {"recipe": "training.lora.reward_model (LoRA, value head, Bradley-Terry)"},
        **grade,
    )


def reward_record(
    judge: str, pairs_head: ValueHead, grade_head: ValueHead | None, rows: str
) -> dict[str, Any]:
    """The reward judge's decision record: the state head's score as it is (its scale is in
    the head's weights) and, with a grade head, its reward mapped back to 1-10 (`rows`: what
    the heads were trained on)."""
    from training.decision.head_records import grade_rule, head_record

    width = 2 * len(pairs_head.weights)
    fitted = {"by": "python -m training.lora.reward_model", "rows": rows}
    grade = None
    if grade_head is not None:
        intercept = MID_RATING + HALF_RANGE * grade_head.bias
        grade = grade_rule({"grade_states": 1.0}, intercept, fitted, width)
    return head_record(judge, {"states": 1.0}, fitted, width, grade)


def write_state_head(args: argparse.Namespace) -> int:
    """The state head and, beside it, its decision record (decision.yaml)."""
    from training.decision.record_file import write_record_file

    grades = args.grades_run and ValueHead.load(args.grades_run / "value_head.json")
    pairs = ValueHead.load(args.pairs_run / "value_head.json")
    head = as_state_head(pairs, args.gguf_name, grades)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(head.model_dump_json(indent=1), encoding="utf-8")
    record = reward_record(args.out.parent.name, pairs, grades, "the value heads' runs")
    write_record_file(args.out.with_name("decision.yaml"), record, tables=False, by=BY)
    print(f"{args.out}: a state head reading {args.gguf_name}, its record beside it")
    return 0


BY = "`python -m training.lora.reward_model`"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.lora.reward_head", description=__doc__
    )
    parser.add_argument("--pairs-run", type=Path, required=True, help="its value_head.json's run")
    parser.add_argument("--grades-run", type=Path, help="the grade adapter's run, if any")
    parser.add_argument("--gguf-name", required=True, help="the merged GGUF's file name")
    parser.add_argument("--out", type=Path, required=True, help="models/judges/NAME/...json")
    return write_state_head(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
