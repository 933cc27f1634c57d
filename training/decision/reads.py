"""The one cache of reads a decision record is fitted on: each training pair judged once by
the engine as a user's batch judges it (criteria off), its signal values kept.

    python -m training.decision.reads [--sets autoj reference autoj-counter] --part K --parts N

Every pair is keyed by its request, reference and answers; a row holds the request's group
key (folds never split a request) and the pair's value of every signal the engine recorded
(`<signal>_difference` in its verdict parts: A's lead over B; every candidate of the fit's
config is read, whatever the judge's record weighs: `reading_config`), no text and no label (the
labels are joined from the data when the fit reads the cache: `labelled_rows`), so the cache
is committed and a later session goes on from it. `--part K
--parts N` lets N processes, one core each, share the pairs; each appends to its own file
and skips what any file already holds, so a stopped run goes on where it stopped.
`--skip-seen-by state_head` skips the pairs the state head was fitted on (the decision fit
leaves them out: training/decision/in_sample.py).

The sets come from the training split only:
- `autoj`: Auto-J's labelled training pairs (human labels, ties included);
- `reference`: the reference-decided training pairs (training/datasets/reference_decided.py),
  judged with their references and code run in the jail;
- `autoj-counter`: nearest-request counterexamples of 30 % of the decisive Auto-J pairs;
- `alpacaeval`: length-balanced decisive AlpacaEval pairs (GPT-4-class preferences, as many
  won by the shorter answer as by the longer), and `alpacaeval-counter`: nearest-request
  counterexamples of half of them (training/datasets/state_head_data.py builds both), so
  that the fit does not learn Auto-J's leaning to length.

A further set is written without the engine: `head-fitting`, the judge's head's own fitting
pairs with their states read out of fold (training/decision/out_of_fold.py).

Pairs read with the judge's own answer (issue 64: `--out` OWN_READS, `--answered-only`, or
`--computed-only`: those whose kept answer a program computed, the only pairs a record that
weighs computed answers alone reads differently) are kept apart, in `own-reads/`, and fitted
apart (`fit --own-reads`): `labelled_rows(own_reads=...)` adds them, a head-fitting pair's
own-answer values joined to its row with states out of fold (`own-reads/written/`: the reads
against answers written before programs could compute them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.deciding.decision import DecisionRecord, Declared, Fitted, Signal
from app.deciding.own_answer import OWN_ANSWER_TOKENS, OwnAnswer, keep
from app.judging.config import JudgeConfig
from app.records import JudgeItem, Judgment, Label, Status
from training.decision.in_sample import FITS, seen_by

OUT = Path(__file__).resolve().parent / "cache"
SETS = (
    "autoj",
    "reference",
    "autoj-counter",
    "alpacaeval",
    "alpacaeval-counter",
    "reference-bare",
)
SEED = 0
READ_WEIGHT = 1e-9  # a candidate's weight while it is read for a fit: read, not weighed
ALPACAEVAL_PAIRS = 400  # the AlpacaEval pairs a CPU can read (each about 15 s on one core)


def pair_key(item: JudgeItem) -> str:
    """The cache's key of a pair: its request, reference and both answers."""
    text = json.dumps([item.question, item.reference or "", *item.answers], ensure_ascii=False)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def reading_record(record: DecisionRecord, candidates: Sequence[Declared]) -> DecisionRecord:
    """`record` reading every candidate signal too: each one it does not weigh is added at
    READ_WEIGHT, so that the engine reads it and records its value while the verdict moves
    by no more than READ_WEIGHT times that value. A cache of reads must hold every candidate,
    or a signal the fit once left out could never be chosen again."""
    used = set(record.used())
    fitted = Fitted(by="none: read for a fit (training/decision/reads.py)", rows="none")
    added = [
        Signal(**candidate.model_dump(), weight=READ_WEIGHT, fitted=fitted)
        for candidate in candidates
        if candidate.name not in used
    ]
    names = {signal.name for signal in added}
    kept = tuple(signal for signal in record.signals if signal.name not in names)
    return record.model_copy(update={"signals": (*kept, *added)})


def reading_config(config: JudgeConfig) -> JudgeConfig:
    """`config` whose decision record reads every candidate of the decision fit's config
    (training/configs/decision_fit.yaml), whatever its record weighs, but those fitted apart
    on reads of their own (the reward model's: training/decision/reward_reads.py)."""
    from training.decision.fit_config import load_config

    record = config.parts.decision
    if config.parts.head is None or record is None:
        return config
    reading = reading_record(record, load_config().main_part().signals)
    return replace(config, parts=replace(config.parts, decision=reading))


def judge_name(model: str | None) -> str:
    """The registry name of `model` (None: the default judge)."""
    from models.registry import load_registry

    return load_registry().get(model).name


def request_key(question: str) -> str:
    return hashlib.sha1(question.encode("utf-8")).hexdigest()[:16]


def as_item(row: dict[str, Any]) -> JudgeItem:
    """A reference-decided row (training/datasets/reference_decided.py) as a judge item."""
    return JudgeItem(
        id=row["id"],
        question=row["question"],
        answers=tuple(row["answers"]),
        reference=row["reference"],
        label=Label(winner=row["label"]["winner"]),
        metadata={"family": row["family"]},
    )


def training_pairs(name: str) -> list[JudgeItem]:
    """The labelled pairs of one training set (see the module's docstring; `head-fitting`:
    the decision fit's judge's head's fitting set, training/decision/out_of_fold.py)."""
    if name == "head-fitting":
        from training.decision.fit_config import load_config
        from training.decision.in_sample import head_fitting_pairs

        return list(head_fitting_pairs(load_config().judge))
    if name in ("reference", "reference-bare"):
        from training.datasets.reference_decided import build

        items = [as_item(row) for row in build()[0]]
        bare = name == "reference-bare"  # without their references: the judge's own answer's
        return [item.model_copy(update={"reference": None}) for item in items] if bare else items
    if name.startswith("alpacaeval"):
        from training.datasets.state_head_data import alpacaeval_pairs

        chosen, made = alpacaeval_pairs(ALPACAEVAL_PAIRS, SEED)
        return made if name == "alpacaeval-counter" else chosen
    from app.catalog.scenarios import load_catalog
    from training.datasets.examples import PAIRWISE_FILE, BuildReport, _labelled, counterexamples
    from training.datasets.state_head_data import AUTOJ_COUNTER_SHARE
    from training.lora.config import DataConfig, resolve_path

    autoj = _labelled(resolve_path(DataConfig().autoj_dir) / PAIRWISE_FILE)
    autoj = [item for item in autoj if item.label and item.label.winner]
    if name == "autoj":
        return autoj
    if name == "autoj-counter":
        decisive = [item for item in autoj if item.label.winner in ("A", "B")]
        catalog, report = load_catalog(), BuildReport()
        return counterexamples(decisive, AUTOJ_COUNTER_SHARE, SEED, catalog, report, "nearest")
    raise SystemExit(f"unknown set '{name}': one of {', '.join(SETS)}")


def cached_rows(folder: Path = OUT) -> Iterator[dict[str, Any]]:
    """Every row the cache holds (a line cut short by a stopped run is skipped)."""
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def with_own_reads(rows: list[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    """`rows` and the pairs read with the judge's own answer in `folder`: a pair of the head's
    fitting set as its row with states out of fold (training/decision/out_of_fold.py) with
    the own answer's values joined; any other pair as it was read."""
    import gzip

    from app.deciding.signals import OWN_ANSWER_SIGNALS
    from training.datasets.likelihood_data import OUT_OF_FOLD

    with gzip.open(OUT_OF_FOLD, "rt", encoding="utf-8") as lines:
        out_of_fold = {row["key"]: row for row in map(json.loads, lines)}
    found = []
    for row in cached_rows(folder):
        base = out_of_fold.get(row["key"])
        if base is None:
            found.append(row)
            continue
        own = {n: v for n, v in row["values"].items() if n in OWN_ANSWER_SIGNALS}
        found.append(base | {"values": base["values"] | own, "error": row["error"]})
    return [*rows, *with_own_text_values(found)]


def pairs_by_key(names: Iterable[str]) -> dict[str, JudgeItem]:
    """The training pairs of the sets `names` (each once) by pair key."""
    return {pair_key(item): item for name in sorted(set(names)) for item in training_pairs(name)}


def with_own_text_values(
    rows: list[dict[str, Any]], answers: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """`rows` (pairs read with the judge's own answer) with the own answer's signals that read
    only texts computed again from the pair and the answer kept: a signal added since the
    pair was read gains its value, and a computed result reads as the engine now keeps it
    (`plain_number`). A row whose pair or answer (`answers`, default: the kept ones) is not
    found is left as it was."""
    from app.deciding.computed_answer import plain_number
    from app.deciding.signals import OWN_ANSWER_SIGNALS, PairReads, pair_values
    from training.decision.fit_config import load_config

    names = [s.name for s in load_config().signals if s.own_answer and set(s.reads) == {"text"}]
    kept = own_answers() if answers is None else answers
    items = pairs_by_key(row["set"] for row in rows)
    found = []
    for row in rows:
        item = items.get(row["key"])
        answer = kept_answer(item, kept) if item else None
        read = any(name in OWN_ANSWER_SIGNALS for name in row["values"])
        if item is None or answer is None or not answer["text"] or not read:
            found.append(row)
            continue
        text = plain_number(answer["text"]) if answer.get("computed") else answer["text"]
        fields = (answer["mean_logprob"], answer["tokens"], answer["finished"])
        own = OwnAnswer(text, *fields, computed=answer.get("computed", False))
        values = pair_values(names, PairReads(item, own_answer=own))
        found.append(row | {"values": row["values"] | values})
    return found


def labelled_rows(
    folder: Path = OUT,
    fits: dict[str, str] | None = None,
    judge: str | None = None,
    own_reads: Path | None = None,
) -> list[dict[str, Any]]:
    """The cached rows with their training labels joined from the data by pair key, and
    (`fits`: a signal -> the fit of its own weights) the signals of `judge` (a registry name;
    None: the default) fitted on each pair; `own_reads`: with the pairs read with the judge's
    own answer there (`with_own_reads`)."""
    rows = list(cached_rows(folder))
    if own_reads is not None:
        rows = with_own_reads(rows, own_reads)
    return with_labels(rows, fits, judge)


def with_labels(
    rows: list[dict[str, Any]], fits: dict[str, str] | None = None, judge: str | None = None
) -> list[dict[str, Any]]:
    """`rows` with their training labels and the fits that saw each (`labelled_rows`)."""
    items = pairs_by_key(row["set"] for row in rows)
    joined, name = [], judge_name(judge) if fits else ""
    for row in rows:
        item = items.get(row["key"])
        item = item if item is not None and item.label is not None else None
        label = item.label.winner if item is not None else None  # type: ignore[union-attr]
        seen = seen_by(item, fits, name) if item is not None and fits else []
        seen = [s for s in seen if s not in row.get("out_of_fold", ())]  # read out of fold
        joined.append(row | {"label": label, "seen_by": seen})
    return joined


@dataclass(frozen=True)
class ReadOptions:
    """Which judge reads (a registry name; None: the default) and the fits whose pairs it
    skips (training/decision/in_sample.py: their signals' values there are in-sample)."""

    model: str | None = None
    skip_seen_by: tuple[str, ...] = ()
    answered_only: bool = False  # only the pairs whose request has an own answer kept
    computed_only: bool = False  # only those whose own answer a program computed
    shuffled: bool = False  # each set's pairs in a seeded random order (a stopped run: a sample)
    id_prefixes: tuple[str, ...] = ()  # only the pairs whose id starts so (none: every pair)


def recorded_values(parts: Mapping[str, float]) -> dict[str, float]:
    """The signal values a pairwise judgment recorded in its `verdict_parts`, each as
    `<signal>_difference` (A's value minus B's); a judgment saved before the states' value
    was recorded keeps it as its `states` share (its weight is 1)."""
    found = {
        key.removesuffix("_difference"): value
        for key, value in parts.items()
        if key.endswith("_difference")
    }
    if "states" not in found and "states" in parts:
        found["states"] = parts["states"]
    return found


def cache_row(name: str, item: JudgeItem, judgment: Judgment) -> dict[str, Any]:
    """What the cache keeps of one judged pair."""
    parts = judgment.verdict_parts or {}
    values = recorded_values(parts) if judgment.status is Status.OK else {}
    return pair_row(name, item, values, judgment.error)


def pair_row(
    name: str, item: JudgeItem, values: dict[str, float], error: str | None = None
) -> dict[str, Any]:
    """A cache row: the pair's key and request, its signal values, no text and no label."""
    return {
        "key": pair_key(item),
        "set": name,
        "id": item.id,
        "request": request_key(item.question),
        "reference": bool(item.reference),
        "values": values,
        "error": error,
    }


ANSWERS = OUT / "own-answers"  # the judge's own answers (training/decision/own_answers.py)
OWN_READS = OUT / "own-reads"  # pairs read with them, apart until a record weighs them
REWARD_READS = OUT / "reward-reads"  # the reward model's (training/decision/reward_reads.py)


def own_answers(folder: Path = ANSWERS) -> dict[str, dict[str, Any]]:
    """The kept answers by request key, the most telling of each request's: a computed one,
    else one written where programs could compute it (its row says `computed`, true or false:
    empty where `--computed-only` found no program's result), else one written before."""

    def rank(row: dict[str, Any]) -> tuple[bool, bool, bool]:
        return row.get("computed", False), "computed" in row, bool(row["text"])

    found: dict[str, dict[str, Any]] = {}
    for row in cached_rows(folder):
        if (before := found.get(row["request"])) is None or rank(row) >= rank(before):
            found[row["request"]] = row
    return found


def keep_written(judge: str, question: str, kept: dict[str, dict[str, Any]]) -> bool:
    """Give the engine `judge`'s answer to `question` written before (`kept`: own_answers),
    so judging its pairs writes none again; False where none was written."""
    row = kept.get(request_key(question))
    if row is None:
        return False
    fields = ("text", "mean_logprob", "tokens", "finished")
    answer = OwnAnswer(*(row[name] for name in fields), computed=row.get("computed", False))
    keep(judge, question, OWN_ANSWER_TOKENS, answer, "computed" in row)
    return True


def interleaved(sets: list[list[Any]]) -> list[Any]:
    """The sets' pairs taken in turn, each set at its own pace (by its share of all), so a run
    stopped at any point has read every set alike."""
    total = sum(len(pairs) for pairs in sets)
    order = sorted(
        ((n + 0.5) / len(pairs), s, n) for s, pairs in enumerate(sets) for n in range(len(pairs))
    )
    return [sets[s][n] for _, s, n in order] if total else []


def ordered(pairs: list[JudgeItem], shuffled: bool) -> list[JudgeItem]:
    """`pairs` as they are, or in a random order (SEED)."""
    if not shuffled:
        return pairs
    import random

    return random.Random(SEED).sample(pairs, len(pairs))


def answered(item: JudgeItem, kept: dict[str, dict[str, Any]], computed: bool = False) -> bool:
    """Whether the judge's own answer to `item`'s request (cut as its head reads it, any
    cut the own answers hold) is kept (`computed`: and a program computed it)."""
    row = kept_answer(item, kept)
    return row is not None and (not computed or row.get("computed", False))


def kept_answer(item: JudgeItem, kept: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The kept own answer to `item`'s request, cut as the judge's head reads it (None: none)."""
    from app.deciding.state_head import QUESTION_CHARS

    return kept.get(request_key(item.question[:QUESTION_CHARS]))


def read(
    names: list[str],
    part: int,
    parts: int,
    folder: Path = OUT,
    options: ReadOptions = ReadOptions(),
) -> int:
    """Judge this part's pairs of each set not cached yet, appending each as it is done."""
    from tqdm import tqdm

    from app.api import load_judge

    done = {row["key"] for row in cached_rows(folder)}
    seen, judge_of = [FITS[fit] for fit in options.skip_seen_by], judge_name(options.model)
    kept = own_answers()
    sets = [
        [
            (name, p)
            for p in ordered(training_pairs(name), options.shuffled)[part::parts]
            if not any(s(p, judge_of) for s in seen)
            and (not options.answered_only or answered(p, kept))
            and (not options.computed_only or answered(p, kept, computed=True))
            and (not options.id_prefixes or p.id.startswith(options.id_prefixes))
        ]
        for name in names
    ]
    todo = interleaved([[p for p in found if pair_key(p[1]) not in done] for found in sets])
    folder.mkdir(parents=True, exist_ok=True)
    if not todo:
        print(f"part {part}: every pair is cached")
        return 0
    opened = load_judge(options.model, threads=1, criterion_scores=False, protocol="pairwise")
    path = folder / f"part{part}.jsonl"
    with opened as judge, path.open("a", encoding="utf-8") as out:
        judge.config = reading_config(judge.config)
        head = judge.config.parts.head
        for name, item in tqdm(todo, desc=f"reads part {part}", unit="pair", file=sys.stderr):
            if head is not None:  # the judge's own answer written before, where it was
                keep_written(judge.name, item.question[: head.question_chars], kept)
            row = cache_row(name, item, judge.judge(item))
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.decision.reads", description=__doc__)
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=(*SETS, "head-fitting"))
    parser.add_argument("--part", type=int, default=0)
    parser.add_argument("--parts", type=int, default=1)
    parser.add_argument("--model", help="a registry name (default: the default judge)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--skip-seen-by",
        nargs="+",
        default=[],
        choices=sorted(FITS),
        help="skip the pairs these fits were fitted on (a decision fit leaves them out)",
    )
    parser.add_argument(
        "--answered-only",
        action="store_true",
        help="only the pairs whose request has the judge's own answer kept (own_answers)",
    )
    parser.add_argument(
        "--computed-only",
        action="store_true",
        help="only the pairs whose request's kept own answer a program computed",
    )
    parser.add_argument(
        "--shuffled", action="store_true", help="each set's pairs in a seeded random order"
    )
    parser.add_argument("--id-prefix", nargs="+", default=[], help="only pairs whose id starts so")
    args = parser.parse_args(argv)
    options = ReadOptions(
        args.model,
        tuple(args.skip_seen_by),
        answered_only=args.answered_only,
        computed_only=args.computed_only,
        shuffled=args.shuffled,
        id_prefixes=tuple(args.id_prefix),
    )
    return read(args.sets, args.part, args.parts, args.out, options)


if __name__ == "__main__":
    sys.exit(main())
