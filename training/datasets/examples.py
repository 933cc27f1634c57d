"""Training examples for the judge, rendered exactly as the engine prompts at inference.

Each example is the prompt the engine would send (same template, scenario
criteria, fences and text cutting) and the JSON the engine's grammar accepts as
the reply. The reply is tokenized piece by piece the way the llama.cpp backend
builds it: structure the schema forces (braces, keys, commas) is fed as its
own chunk, and each value the model chooses is tokenized on its own, so the
token boundaries the model learns are the ones it meets when it judges. Only
the value pieces carry loss: the forced structure is never the model's to
predict.

Sources (../shared/data, see its README):
- single: `autoj/single_train.jsonl`, teacher rating 1-10 and critique; a
  seeded part is held out for evaluation and never trained on.
- pairwise: `autoj/pairwise_train.jsonl`, human preference A / B / tie, and
  optionally `data.alpacaeval_pairs` length-balanced pairs from
  `alpacaeval/pairs.jsonl.gz` (GPT-4-class preferences; training/datasets/alpacaeval.py).
`pairwise_dev.jsonl` and LLMBar are evaluation data and are never read here.

With a decision-first template (`pocketjudge-decision*`) the reply starts
with the decision, so the decision is the first value the model writes; with
`data.criteria: false` it is the only value of a pair's target (the verdict
token) and a single target is the grade and the teacher's critique.

Counter-measures against learning "longer is better" (the human labels reward
length): length balancing drops pairs where the longer answer wins until they
are as many as those where the shorter one wins, and counterexamples pair an
on-topic answer with a longer answer written for another request (of the same
kind, or the most similar one), which must lose.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.catalog.criteria_resolution import CriteriaChoice, ResolvedCriteria, resolve
from app.catalog.scenarios import Catalog, load_catalog
from app.formats.prompts import get_template
from app.io.reader import read_rows
from app.judging.prompt_fitting import prompt_input
from app.records import JudgeItem, Protocol
from models.foundation.errors import PocketJudgeError
from training.datasets.replies import (
    Piece,
    json_pieces,
    pairwise_reply,
    pairwise_reply_first,
    restate_weights,
    single_reply,
    single_reply_first,
)
from training.lora.config import CounterexampleMatch, DataConfig, resolve_path

SINGLE_FILE = "single_train.jsonl"
PAIRWISE_FILE = "pairwise_train.jsonl"
SWAPPED = {"A": "B", "B": "A", "tie": "tie"}


@dataclass(frozen=True)
class Example:
    id: str
    adapter: str  # "single" or "pairwise"
    messages: tuple[dict[str, str], ...]
    pieces: tuple[Piece, ...]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> str:
        return "".join(p.text for p in self.pieces)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "adapter": self.adapter,
            "messages": list(self.messages),
            "pieces": [
                [p.text, p.value] if p.weight == 1.0 else [p.text, p.value, p.weight]
                for p in self.pieces
            ],
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Example:
        return cls(
            id=data["id"],
            adapter=data["adapter"],
            messages=tuple(data["messages"]),
            pieces=tuple(
                Piece(text, bool(value), float(rest[0]) if rest else 1.0)
                for text, value, *rest in data["pieces"]
            ),
            meta=data.get("meta", {}),
        )


def decision_first(template: str) -> bool:
    return get_template(template).decision_first


# -- prompts -------------------------------------------------------------------
def render_messages(
    item: JudgeItem,
    protocol: Protocol,
    resolved: ResolvedCriteria,
    template: str,
    max_input_chars: int,
    with_reference: bool,
) -> tuple[dict[str, str], ...]:
    """The messages the judging service sends for this item, in this answer order."""
    reference = item.reference if with_reference else None
    prompt = prompt_input(
        protocol, item.question, item.answers, reference, resolved, max_input_chars
    )
    return tuple(
        {"role": m.role, "content": m.content} for m in get_template(template).render(prompt)
    )


def feedback_text(critique: str, limit: int) -> str:
    """The teacher critique without its rating line, cut at a sentence end within `limit`."""
    text = critique.split("Rating: [[")[0].strip()
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    return cut[: end + 1] if end > limit // 3 else cut.rsplit(" ", 1)[0] + "..."


# -- building ------------------------------------------------------------------
@dataclass
class BuildReport:
    counts: Counter = field(default_factory=Counter)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def _labelled(path: Path) -> list[JudgeItem]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: training data not found (see ../shared/data/README.md)")
    return [row.item for row in read_rows(path) if row.item is not None and row.item.label]


def split_single(items: list[JudgeItem], heldout: int, seed: int) -> tuple[list, list]:
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    held = sorted(order[:heldout])
    train = sorted(order[heldout:])
    return [items[i] for i in train], [items[i] for i in held]


def single_examples(
    items: list[JudgeItem], config: DataConfig, catalog: Catalog, report: BuildReport
) -> Iterator[Example]:
    rng = random.Random(config.seed + 1)
    for item in items:
        label = item.label
        assert label is not None and label.score is not None
        score = max(1, min(10, round(label.score)))
        resolved = resolve(CriteriaChoice(), item, catalog)
        keep_reference = bool(item.reference) and rng.random() >= config.reference_drop
        messages = render_messages(
            item,
            Protocol.SINGLE,
            resolved,
            config.template,
            config.max_input_chars,
            keep_reference,
        )
        critique = feedback_text(
            str(item.metadata.get("target_output") or ""), config.feedback_chars
        )
        reply = (
            single_reply_first(resolved.rule.keys, score, critique, config.criteria)
            if decision_first(config.template)
            else single_reply(resolved.rule.keys, score, critique)
        )
        report.add("single")
        yield Example(
            id=f"single-{item.id}",
            adapter="single",
            messages=messages,
            pieces=tuple(
                restate_weights(json_pieces(reply), config.restated_weight, config.feedback_weight)
            ),
            meta={"score": score, "scenario": item.scenario},
        )


def _longer(item: JudgeItem) -> str:
    return "A" if len(item.answers[0]) >= len(item.answers[1]) else "B"


def balance_lengths(items: list[JudgeItem], seed: int, report: BuildReport) -> list[JudgeItem]:
    """Drop pairs where the longer answer wins until they match the shorter-wins pairs."""
    longer_wins = [i for i in items if i.label.winner in "AB" and i.label.winner == _longer(i)]
    shorter_wins = [i for i in items if i.label.winner in "AB" and i.label.winner != _longer(i)]
    report.add("pairs_longer_wins", len(longer_wins))
    report.add("pairs_shorter_wins", len(shorter_wins))
    if len(longer_wins) <= len(shorter_wins):
        return items
    rng = random.Random(seed + 2)
    dropped = set(id(i) for i in rng.sample(longer_wins, len(longer_wins) - len(shorter_wins)))
    report.add("pairs_dropped_for_length_balance", len(dropped))
    return [i for i in items if id(i) not in dropped]


def counterexamples(
    items: list[JudgeItem],
    share: float,
    seed: int,
    catalog: Catalog,
    report: BuildReport,
    match: CounterexampleMatch = "group",
) -> list[JudgeItem]:
    """On-topic answer vs a longer answer to another request, which must lose.

    `match` picks that other request: "group", any request of the same scenario group;
    "nearest", the most similar request that has a longer answer (LLMBar's neighbours are
    built this way, and off-topic answers to near requests are the hard ones to spot)."""
    rng = random.Random(seed + 3)
    by_group: dict[str, list[JudgeItem]] = {}
    for item in items:
        by_group.setdefault(_group(item.scenario, catalog), []).append(item)
    neighbours: list[list[int]] = []
    if match == "nearest" and share > 0:
        from training.datasets.similarity import neighbours_by_similarity

        neighbours = neighbours_by_similarity([i.question for i in items])

    def longer_answers(index: int, good: str) -> list[str]:
        item = items[index]
        if match == "nearest":
            for j in neighbours[index]:
                longer = [a for a in items[j].answers if len(a) > len(good)]
                if longer:
                    return longer
            return []
        others = [
            o for o in by_group[_group(item.scenario, catalog)] if o.question != item.question
        ]
        return [a for o in others for a in o.answers if len(a) > len(good)]

    made: list[JudgeItem] = []
    wanted = round(share * len(items))
    order = list(range(len(items)))
    rng.shuffle(order)
    for index in order:
        if len(made) >= wanted:
            break
        item = items[index]
        good = item.answers[0 if item.label.winner in ("A", "tie") else 1]
        longer = longer_answers(index, good)
        if not longer:
            continue
        off_topic = rng.choice(longer)
        winner = rng.choice("AB")
        answers = (good, off_topic) if winner == "A" else (off_topic, good)
        made.append(
            item.model_copy(
                update={
                    "id": f"{item.id}-counter",
                    "answers": answers,
                    "label": item.label.model_copy(update={"winner": winner}),
                    "metadata": {**item.metadata, "counterexample": True},
                }
            )
        )
    report.add("pairs_counterexamples", len(made))
    return made


def _group(scenario: str | None, catalog: Catalog) -> str:
    try:
        return catalog.get_scenario(scenario or "default").group
    except PocketJudgeError:  # unknown scenario: one bucket of its own
        return "other"


def pairwise_examples(
    items: list[JudgeItem], config: DataConfig, catalog: Catalog, report: BuildReport
) -> Iterator[Example]:
    rng = random.Random(config.seed + 4)
    first = decision_first(config.template)
    for item in items:
        winner = item.label.winner
        resolved = resolve(CriteriaChoice(), item, catalog)
        orders = [(0, 1), (1, 0)] if config.swap else [rng.choice([(0, 1), (1, 0)])]
        keep_reference = bool(item.reference) and rng.random() >= config.reference_drop
        for order in orders:
            shown = item.model_copy(update={"answers": tuple(item.answers[i] for i in order)})
            label = winner if order == (0, 1) else SWAPPED[winner]
            messages = render_messages(
                shown,
                Protocol.PAIRWISE,
                resolved,
                config.template,
                config.max_input_chars,
                keep_reference,
            )
            reply = (
                pairwise_reply_first(resolved.rule.keys, label, config.pair_scores, config.criteria)
                if first
                else pairwise_reply(resolved.rule.keys, label, config.pair_scores)
            )
            report.add(f"pairwise_label_{label}")
            yield Example(
                id=f"pair-{item.id}-{''.join(map(str, order))}",
                adapter="pairwise",
                messages=messages,
                pieces=tuple(
                    restate_weights(
                        json_pieces(reply), config.restated_weight, config.feedback_weight
                    )
                ),
                meta={
                    "label": label,
                    "scenario": item.scenario,
                    "counterexample": bool(item.metadata.get("counterexample")),
                    "source": "alpacaeval" if item.id.startswith("alpacaeval-") else "autoj",
                },
            )


def training_pairs(config: DataConfig, catalog: Catalog, report: BuildReport) -> list[JudgeItem]:
    """The labelled pairs the pairwise adapter learns from: read, length-balanced, with
    counterexamples added (each pair in one order; examples add the swap)."""
    pairs = [i for i in _labelled(resolve_path(config.autoj_dir) / PAIRWISE_FILE) if i.label.winner]
    if config.pairwise_limit:
        pairs = pairs[: config.pairwise_limit]
    report.add("pairs_read", len(pairs))
    if config.length_balance:
        pairs = balance_lengths(pairs, config.seed, report)
    made = counterexamples(
        pairs,
        config.counterexamples,
        config.seed,
        catalog,
        report,
        config.counterexample_match,
    )
    return pairs + made + alpacaeval_training_pairs(config, report)


def alpacaeval_training_pairs(config: DataConfig, report: BuildReport) -> list[JudgeItem]:
    """`data.alpacaeval_pairs` length-balanced AlpacaEval pairs (none by default)."""
    if not config.alpacaeval_pairs:
        return []
    from training.datasets.alpacaeval import balanced_pairs

    chosen = balanced_pairs(
        resolve_path(config.alpacaeval_file), config.alpacaeval_pairs, config.seed + 6
    )
    report.add("pairs_alpacaeval", len(chosen))
    return chosen


def build_examples(config: DataConfig, catalog: Catalog | None = None) -> dict[str, Any]:
    """All examples by adapter, the held-out single rows, and counts of what was built."""
    catalog = catalog or load_catalog()
    source = resolve_path(config.autoj_dir)
    report = BuildReport()
    singles = _labelled(source / SINGLE_FILE)
    single_train, single_heldout = split_single(singles, config.single_heldout, config.seed)
    if config.single_limit:
        single_train = single_train[: config.single_limit]
    pairs = training_pairs(config, catalog, report)
    examples = {
        "single": list(single_examples(single_train, config, catalog, report)),
        "pairwise": list(pairwise_examples(pairs, config, catalog, report)),
    }
    for name in examples:
        random.Random(config.seed + 5).shuffle(examples[name])
    return {
        "examples": examples,
        "single_heldout": single_heldout,
        "report": report.as_dict(),
    }


def write_examples(path: Path, examples: Sequence[Example]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps(example.to_json(), ensure_ascii=False) + "\n")


def write_single_rows(items: Sequence[JudgeItem], path: Path) -> None:
    """Rated single answers as a pointwise JSONL file the evaluation reads (held-out rows)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for item in items:
            row = {
                "question": item.question,
                "response": item.answers[0],
                "score": item.label.score,
                "scale_max": item.label.scale_max,
                "scenario": item.scenario,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_examples(path: Path) -> list[Example]:
    with path.open(encoding="utf-8") as source:
        return [Example.from_json(json.loads(line)) for line in source if line.strip()]
