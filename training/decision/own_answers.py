"""The judge's own answers to the training requests, written once and kept (issue 64).

    python -m training.decision.own_answers [--sets reference autoj ...] --part K --parts N
                                            [--limit N] [--cap TOKENS] [--computed-only]

A pair judged without a reference can be judged against the judge's own answer
(app/deciding/own_answer.py). To fit that answer's signals, every training request gets the
answer the engine would write for it: greedy, capped, the request cut as the judge's head reads
it. Writing costs about as much as judging a pair on a CPU, so it is done once, in resumable
chunks: `--part K --parts N` lets N processes, one core each, share the requests; each appends
to its own file and skips what any file holds, so a stopped run goes on where it stopped.

A row holds the request's key (training/decision/reads.py's `request_key` of the cut request),
its set, the answer, its mean log-probability, its token count and whether it stopped by
itself; the request's text stays in ../shared/data. The reference-decided pairs are answered
without their references (`reference`: their train split only). `--computed-only` writes
only what a record that weighs computed answers alone needs: the program's result where one
computes it, else an empty answer (about 2 s a request instead of 15).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.deciding.own_answer import OWN_ANSWER_TOKENS, write_own_answer
from training.decision.reads import (
    ANSWERS,
    SETS,
    interleaved,
    own_answers,
    request_key,
    training_pairs,
)


def set_requests(name: str, chars: int) -> list[str]:
    """The distinct requests of a training set, each cut to `chars`, in the set's order."""
    seen: dict[str, None] = {}
    for item in training_pairs(name):
        seen.setdefault(item.question[:chars], None)
    return list(seen)


def write(
    names: list[str], part: int, parts: int, options: argparse.Namespace, folder: Path = ANSWERS
) -> int:
    """Write this part's answers not kept yet, appending each as it is done."""
    from tqdm import tqdm

    from app.api import load_judge

    opened = load_judge(options.model, threads=1)
    head = opened.config.parts.head
    chars = head.question_chars if head is not None else 400
    from app.code_run.jail import jail_status

    compute = jail_status().works  # its programs run (as a run with code running on)
    written = not options.computed_only
    done = {
        key
        for key, row in own_answers(folder).items()
        if not compute or ("computed" in row and (row["text"] or not written))
    }
    sets = [[(name, q) for q in set_requests(name, chars)[part::parts]] for name in names]
    todo = [p for p in interleaved(sets) if request_key(p[1]) not in done][: options.limit]
    folder.mkdir(parents=True, exist_ok=True)
    if not todo:
        opened.close()
        print(f"part {part}: every request is answered")
        return 0
    path = folder / f"part{part}.jsonl"
    with opened as judge, path.open("a", encoding="utf-8") as out:
        for name, question in tqdm(todo, desc=f"answers part {part}", unit="request"):
            answer = write_own_answer(
                judge.backend, question, options.cap, compute=compute, written=written
            )
            row = {"request": request_key(question), "set": name, **answer.__dict__}
            if not compute:
                del row["computed"]  # written where no program could run
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.decision.own_answers", description=__doc__
    )
    parser.add_argument("--sets", nargs="+", default=["reference", "autoj"], choices=SETS)
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--limit", type=int, help="at most this many answers (a trial)")
    parser.add_argument("--cap", type=int, default=OWN_ANSWER_TOKENS, help="tokens per answer")
    parser.add_argument(
        "--computed-only",
        action="store_true",
        help="no written answer where no program computes one (an empty one in its place)",
    )
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    parser.add_argument("--out", type=Path, default=ANSWERS)
    args = parser.parse_args(argv)
    return write(args.sets, args.part, args.parts, args, args.out)


if __name__ == "__main__":
    sys.exit(main())
