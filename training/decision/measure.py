"""A decision record measured on the saved reads of the evaluation files, beside the rule
before it and the longer answer on the same rows.

    python -m training.decision.measure [--record FILE] [--head STATE_HEAD.json]
                                        [--saved FILE.jsonl.gz ...]

The saved reads are the engine's judgments of the dev files and of the held-out
reference-decided pairs, kept as their signal values (tests/golden/, written by
training/evaluation/decision_golden.py): a record is applied to them by the one combiner, so
a refit is measured without reading a file again (reads vary a little from run to run, so a
file read again may differ by a row). With `--head` (a state head fitted again), each pair's
`states` and likelihood values come from the evaluation files' reads
(`likelihood_head read --evaluation`, committed) under that head, the rest as saved: a head
is measured without judging the files again, and its grades (with the record's grade rule) on
the held-out rated single answers' reads beside the judge's shipped ones. Agreement counts a
tie as each file does: right only where the label is a tie. A file is reported whole or said to
be partial. The held-out pairs judged without their references (`reference-page-bare`,
`reference_page --no-reference`) and the dev files read again with the judge's own answer are
the last saved file's (OWN_ANSWER_SAVED); where the record weighs that answer, it is measured
without each of its signals too (`make eval`'s table with and without them). The reward
model's lead of each pair is joined from its reads (training/decision/reward_reads.py); a record
that weighs it is measured on the rows read, and without it beside.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from app.deciding.calibration import ConfidenceCalibration, load_calibration
from app.deciding.decision import SHARED_KINDS, DecisionRecord, decide, load_decision
from app.records import JudgeItem
from training.datasets.labelled_files import load_labelled
from training.decision.reads import REWARD_READS, cached_rows, recorded_values
from training.decision.record_file import record_path
from training.evaluation.meta_metrics import calibration_error, longer_answer

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"
# the saved reads; a later file's row of a (file, line) replaces an earlier one's: the dev
# files read again where the judge's own answer is in use (issue 64), after the rows before
OWN_ANSWER_SAVED = GOLDEN / "own_answer_decisions.jsonl.gz"
SAVED = (
    GOLDEN / "default_judge_decisions.jsonl.gz",
    GOLDEN / "autoj_dev_rest.jsonl.gz",
    OWN_ANSWER_SAVED,
)
BEFORE = GOLDEN / "default_judge_record_before.yaml"
DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
FILES = {
    "pairwise_dev.jsonl": DATA / "autoj" / "pairwise_dev.jsonl",
    "natural.json": DATA / "llmbar" / "natural.json",
    "adversarial_neighbor.json": DATA / "llmbar" / "adversarial_neighbor.json",
}
HELD_OUT = "reference-page"  # the held-out reference-decided pairs
HELD_OUT_BARE = "reference-page-bare"  # the same, judged without their references


@cache
def labelled_items(name: str) -> dict[int, JudgeItem]:
    """The labelled rows of one evaluation file, by line (read once a process: `--head` reads
    them for the reads, then again to measure; not to be changed by a caller)."""
    if name in (HELD_OUT, HELD_OUT_BARE):
        from training.datasets.reference_decided import build
        from training.decision.reads import as_item

        return {n + 1: as_item(row) for n, row in enumerate(build()[1])}
    found = load_labelled(FILES[name], name)
    return {row.line: row.item for row in found.rows if row.item is not None}


def saved_rows(paths: Sequence[Path]) -> list[dict]:
    """The saved rows of `paths`, one per (file, line): a later path's row replaces an
    earlier one's (a file read again)."""
    rows: dict[tuple[str, int], dict] = {}
    for path in paths:
        if path.is_file():
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                for row in map(json.loads, lines):
                    rows[row["file"], row["line"]] = row
    return list(rows.values())


def evaluation_order() -> list[tuple[str, str]]:
    """Every (question, answer) of the evaluation files' pairs, then of the held-out rated
    single answers, cut as a state head reads them (what `likelihood_head read --evaluation`
    reads, what `under_head` and `held_out_grades` measure a head on)."""
    from training.datasets.likelihood_data import cut_texts
    from training.datasets.state_head_data import single_rows

    pairs = [item for name in [*FILES, HELD_OUT] for item in labelled_items(name).values()]
    return cut_texts([*pairs, *single_rows()[1]])


def under_head(rows: list[dict], head_file: Path, gguf: Path) -> list[dict]:
    """The saved rows with each pair's `states` (`head_file`'s w . (f(A) - f(B))) and
    likelihood values from the evaluation files' reads of `gguf`; a row whose answers were
    not read is left out (its file then reads as partial)."""
    import numpy as np

    from app.deciding.state_head import load_state_head
    from models.readings import FEATURES
    from training.datasets.likelihood_data import EVALUATION_CACHE_DIR, cache_for, cut

    weights = np.asarray(load_state_head(head_file).weights, dtype=np.float64)
    cache = cache_for(gguf, EVALUATION_CACHE_DIR / gguf.stem)
    items = {name: labelled_items(name) for name in [*FILES, HELD_OUT, HELD_OUT_BARE]}
    found = []
    for row in rows:
        item = items.get(row["file"], {}).get(row["line"])
        texts = [cut(item.question, answer) for answer in item.answers] if item else []
        if not texts or not all(cache.has(*text) for text in texts):
            continue
        first, second = (cache.get(*text) for text in texts)
        a, b = first.features(), second.features()
        values = {"states": float(weights @ first.states - weights @ second.states)}
        values |= {name: a[name] - b[name] for name in FEATURES}
        parts = row["parts"] | {f"{name}_difference": value for name, value in values.items()}
        found.append(row | {"parts": parts})
    return found


def held_out_grades(records: dict[str, DecisionRecord], heads: dict[str, Path], gguf: Path) -> str:
    """Each record's grade rule, with its head's grade vector (`heads`, by the same label), on
    the held-out rated single answers' reads of `gguf`: the Spearman of the grades a judgment
    shows (rounded, as `make eval` correlates them) with the ratings, beside the answers'
    lengths; or why it cannot be measured."""
    from scipy.stats import spearmanr

    from app.deciding.state_head import load_state_head
    from app.deciding.state_judging import answer_grade
    from training.datasets.likelihood_data import EVALUATION_CACHE_DIR, cache_for, cut
    from training.datasets.state_head_data import single_rows

    cache = cache_for(gguf, EVALUATION_CACHE_DIR / gguf.stem)
    rows = single_rows()[1]
    texts = [cut(row.question, row.answers[0]) for row in rows]
    if unread := sum(not cache.has(*text) for text in texts):
        return f"held-out grades: {unread} of {len(rows)} answers not read (--evaluation)"
    readings = [cache.get(*text) for text in texts]
    ratings = [float(row.label.score) for row in rows]  # type: ignore[union-attr]
    cells = []
    for label, record in records.items():
        head = load_state_head(heads[label])
        if record.grade is None or not head.grade_weights:
            continue
        grades = [round(answer_grade(record.grade, head, r.states, r.features())) for r in readings]
        cells.append(f"{label} {spearmanr(grades, ratings).statistic:.3f}")
    lengths = spearmanr([len(row.answers[0]) for row in rows], ratings).statistic
    return f"held-out grades ({len(rows)} rows), Spearman: {', '.join(cells)}; length {lengths:.3f}"


def measured(
    records: dict[str, DecisionRecord],
    rows: list[dict],
    calibration: ConfidenceCalibration | None = None,
) -> list[dict]:
    """Per file: its rows read, whether whole, each record's and the longer answer's agreement
    with the labels, and each record's calibration error (ECE, %: its confidence, and mapped by
    the judge's `calibration` where a reference did not move the verdict, as the engine maps
    it)."""
    table = []
    # a record that weighs the reward model is measured only where it was read
    rewarded = any(record.uses("reward") for record in records.values())
    for name in [*FILES, HELD_OUT, HELD_OUT_BARE]:
        items = labelled_items(name)
        mine = {
            r["line"]: r
            for r in rows
            if r["file"] == name
            and r["line"] in items
            and (not rewarded or "reward_difference" in r["parts"])
        }
        if not mine:
            continue
        line = {"file": name, "rows": len(mine), "whole": len(mine) == len(items)}
        labels = {n: items[n].label.winner for n in mine}
        for label, record in records.items():
            decided = {n: decide(record, recorded_values(r["parts"])) for n, r in mine.items()}
            right = [float(decided[n].leaning == labels[n]) for n in mine]
            line[label] = 100 * sum(right) / len(mine)
            line[f"{label} ties"] = sum(d.leaning == "tie" for d in decided.values())
            confidence = [d.confidence for d in decided.values()]
            line[f"{label} ece"] = calibration_error(confidence, right)
            if calibration is not None:
                mapped = [
                    d.confidence
                    if any(d.shares.get(kind) for kind in SHARED_KINDS)
                    else calibration(d.confidence)
                    for d in decided.values()
                ]
                line[f"{label} ece calibrated"] = calibration_error(mapped, right)
        lengths = {n: (len(items[n].answers[0]), len(items[n].answers[1])) for n in mine}
        line["longer"] = 100 * sum(longer_answer(lengths[n]) == labels[n] for n in mine) / len(mine)
        table.append(line)
    return table


def without_new_signals(record: DecisionRecord) -> dict[str, DecisionRecord]:
    """`record` without each signal of the judge's own answer it weighs, without them all,
    and without the reward model's (`make eval`'s table with and without each new signal);
    none where it weighs none."""
    own = [s.name for s in record.signals if s.own_answer]
    reward = [s.name for s in record.signals if "reward" in s.reads]

    def less(names: Sequence[str]) -> DecisionRecord:
        kept = tuple(s for s in record.signals if s.name not in names)
        return record.model_copy(update={"signals": kept})

    found = {f"without {name}": less([name]) for name in own} if len(own) > 1 else {}
    if own:
        found["without its own answer"] = less(own)
    if reward:
        found["without the reward model"] = less(reward)
    return found


def dev_rewards(folder: Path = REWARD_READS) -> dict[tuple[str, int], float]:
    """The evaluation files' reward leads read so far (training/decision/reward_reads.py), by
    (file, line)."""
    return {
        (row["file"], row["line"]): row["values"]["reward"]
        for row in cached_rows(folder)
        if row["set"] == "dev" and "reward" in row["values"]
    }


def with_rewards(rows: list[dict], rewards: dict[tuple[str, int], float]) -> list[dict]:
    """The saved rows with the reward model's lead of each pair read
    (training/decision/reward_reads.py) among their parts; the held-out pairs judged without
    their references have the same answers, so their reads are the held-out pairs'."""
    found = []
    for row in rows:
        file = HELD_OUT if row["file"] == HELD_OUT_BARE else row["file"]
        value = rewards.get((file, row["line"]))
        if value is not None:
            row = row | {"parts": row["parts"] | {"reward_difference": value}}
        found.append(row)
    return found


def markdown(table: list[dict], labels: Sequence[str]) -> str:
    """Agreement % (ties said) and ECE of each record (then calibrated, where measured)."""
    head = "| file | rows | " + " | ".join(labels) + " | the longer answer |"
    lines = [head, "|---|---:|" + "---:|" * (len(labels) + 1)]
    for line in table:
        rows = f"{line['rows']}" + ("" if line["whole"] else " (partial)")
        cells = []
        for k in labels:
            ece = f"ECE {line[f'{k} ece']:.1f}"
            if f"{k} ece calibrated" in line:
                ece += f", calibrated {line[f'{k} ece calibrated']:.1f}"
            cells.append(f"{line[k]:.1f} ({line[f'{k} ties']} ties; {ece})")
        lines.append(f"| {line['file']} | {rows} | {' | '.join(cells)} | {line['longer']:.1f} |")
    return "\n".join(lines)


def judge_calibration(judge: str) -> ConfidenceCalibration | None:
    """The registry judge's confidence calibration, where it has one."""
    from models.registry import MODELS_DIR, load_registry

    judging = load_registry().get(judge).judging
    if judging is None or judging.calibration is None:
        return None
    return load_calibration(MODELS_DIR / judging.calibration)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.decision.measure", description=__doc__
    )
    parser.add_argument("--record", type=Path, help="default: the default judge's decision.yaml")
    parser.add_argument("--head", type=Path, help="a state head file, measured on the reads")
    parser.add_argument("--saved", nargs="+", type=Path, default=list(SAVED))
    args = parser.parse_args(argv)
    record = load_decision(args.record or record_path())
    records = {"before": load_decision(BEFORE), "record": record, **without_new_signals(record)}
    rows = with_rewards(saved_rows(args.saved), dev_rewards())
    if args.head is not None:
        from training.decision.in_sample import judge_gguf, judge_head

        judge = records["record"].judge
        gguf = judge_gguf(judge)
        rows = under_head(rows, args.head, gguf)
        # the grades beside the judge's own rule and head
        graders = {"shipped": load_decision(record_path(judge)), "record": records["record"]}
        heads = {"shipped": judge_head(judge)[0], "record": args.head}
        print(held_out_grades(graders, heads, gguf))
    print(
        markdown(measured(records, rows, judge_calibration(records["record"].judge)), list(records))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
