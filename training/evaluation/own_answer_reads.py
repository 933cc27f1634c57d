"""The dev files read again where the judge's own answer is in use (issue 64), for `measure`.

    python -m training.evaluation.own_answer_reads --part K --parts N   (N processes, a core each)
    python -m training.evaluation.own_answer_reads --write

A record that weighs only an answer a program computed (the default's: its written answer costs
more than the bound allows, training/configs/decision_fit.yaml) reads a pair differently only
where the judge's program gives a result; elsewhere it writes no answer and the pair is judged
exactly as without one. So every dev pair's request is asked for a program first (as the engine
asks: app/deciding/computed_answer.py, in the jail), and only the pairs whose request it
computes are judged again, whole, by the engine; the saved reads of the rest stand
(tests/golden/). Each probed pair is kept as it is done (`training/runs/own-answer-reads/`),
so a stopped run goes on. `--write` writes the pairs judged again and the held-out
reference-decided pairs judged without their references (`reference_page --no-reference`)
to measure's last saved file (OWN_ANSWER_SAVED), which replaces their saved rows.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

from app.io.judgments import read_judgments
from app.records import Judgment
from training.decision.measure import FILES, HELD_OUT_BARE, OWN_ANSWER_SAVED, labelled_items
from training.decision.reads import cached_rows
from training.evaluation.decision_golden import golden_row
from training.evaluation.reference_page import OUT as PAGE

RUNS = Path(__file__).resolve().parents[1] / "runs" / "own-answer-reads"
BARE = PAGE.with_name(PAGE.name + "-bare") / "test.jsonl"


def done_rows(folder: Path = RUNS) -> dict[tuple[str, int], dict[str, Any]]:
    """The pairs probed so far, by (file, line) (a line cut short by a stop is skipped)."""
    return {(row["file"], row["line"]): row for row in cached_rows(folder)}


def probe(part: int, parts: int, folder: Path = RUNS) -> int:
    """Ask for this part's pairs' programs; judge again the pairs whose request one computes."""
    from tqdm import tqdm

    from app.api import load_judge
    from app.code_run.jail import jail_status
    from app.deciding.own_answer import write_own_answer

    pairs = [(name, line, item) for name in FILES for line, item in labelled_items(name).items()]
    done = done_rows(folder)
    todo = [p for p in pairs[part::parts] if (p[0], p[1]) not in done]
    if not todo:
        print(f"part {part}: every pair is probed")
        return 0
    if not jail_status().works:
        raise SystemExit("no working jail here: the judge's programs cannot run")
    folder.mkdir(parents=True, exist_ok=True)
    opened = load_judge(threads=1, criterion_scores=False, protocol="pairwise")
    with opened as judge, (folder / f"part{part}.jsonl").open("a", encoding="utf-8") as out:
        chars = judge.config.parts.head.question_chars  # type: ignore[union-attr]
        for name, line, item in tqdm(todo, desc=f"own answers part {part}", unit="pair"):
            started = time.perf_counter()
            own = write_own_answer(
                judge.backend, item.question[:chars], judge=judge.name, compute=True, written=False
            )
            row: dict[str, Any] = {"file": name, "line": line, "computed": own.computed}
            row["probe_s"] = round(time.perf_counter() - started, 2)
            if own.computed:  # read again, whole, as the engine judges it
                row["judgment"] = judge.judge(item).model_dump(mode="json")
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
    return 0


def write(folder: Path = RUNS, bare: Path = BARE, out: Path = OWN_ANSWER_SAVED) -> str:
    """The pairs judged again and the bare held-out pairs as measure's saved rows."""
    probed = done_rows(folder)
    rows = [
        golden_row(Judgment.model_validate(row["judgment"]), name, line)
        for (name, line), row in sorted(probed.items())
        if "judgment" in row
    ]
    if bare.is_file():
        rows += [golden_row(j, HELD_OUT_BARE, j.line) for j in read_judgments(bare)]
    found = [row for row in rows if row is not None]
    with gzip.open(out, "wt", encoding="utf-8") as lines:
        lines.writelines(json.dumps(row, sort_keys=True) + "\n" for row in found)
    total = sum(len(labelled_items(name)) for name in FILES)
    computed = sum(row["computed"] for row in probed.values())
    seconds = sum(row["probe_s"] for row in probed.values()) / max(len(probed), 1)
    return (
        f"{len(probed)} of {total} dev pairs probed, {computed} computed (the program's ask "
        f"{seconds:.1f} s a pair, judging again excluded); {len(found)} rows in {out}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluation.own_answer_reads", description=__doc__
    )
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="write measure's saved rows")
    args = parser.parse_args(argv)
    if args.write:
        print(write())
        return 0
    return probe(args.part, args.parts)


if __name__ == "__main__":
    sys.exit(main())
