"""Training targets: the reply split into forced structure and values, and their loss weights."""

import gzip
import json
from types import SimpleNamespace

import jsonschema
import pytest
import torch

from app.catalog.criteria_resolution import CriteriaChoice, resolve
from app.catalog.scenarios import load_catalog
from app.formats.output_format import ReplyLayout, json_schema
from app.records import JudgeItem, Protocol
from tests.support.needs import SHARED_DATA, shared_file
from training.datasets.examples import Example, build_examples
from training.datasets.replies import (
    Piece,
    json_pieces,
    pairwise_reply,
    restate_weights,
    single_reply,
)
from training.lora.config import DataConfig
from training.lora.train import IGNORE, target_loss

KEYS = ("accuracy", "clarity", "conciseness")
SCORES = {"win": 8, "lose": 4, "tie": 6}


def test_pieces_rebuild_the_engine_json_exactly():
    reply = pairwise_reply(KEYS, "B", SCORES)
    pieces = json_pieces(reply)
    assert "".join(p.text for p in pieces) == json.dumps(reply, ensure_ascii=False)
    assert [p.text for p in pieces if p.value][:4] == ["4", "4", "4", "8"]


def test_only_the_first_score_keeps_full_weight_and_feedback_is_not_a_restatement():
    pieces = restate_weights(json_pieces(pairwise_reply(KEYS, "A", SCORES)), 0.1)
    values = [p for p in pieces if p.value]
    # 3 + 3 criteria, 2 overall, the verdict, the feedback
    assert len(values) == 10
    assert [p.weight for p in values] == [1.0] + [0.1] * 8 + [1.0]
    assert all(p.weight == 1.0 for p in pieces if not p.value)
    single = restate_weights(json_pieces(single_reply(KEYS, 7, "Clear but long.")), 0.25)
    assert [p.weight for p in single if p.value] == [1.0, 0.25, 0.25, 0.25, 1.0]


def test_feedback_weight_applies_to_the_feedback_text_only():
    pieces = restate_weights(json_pieces(single_reply(KEYS, 7, "Clear but long.")), 0.1, 0.2)
    assert [p.weight for p in pieces if p.value] == [1.0, 0.1, 0.1, 0.1, 0.2]
    only_feedback = restate_weights(json_pieces(single_reply(KEYS, 7, "Fine.")), 1.0, 0.5)
    assert [p.weight for p in only_feedback if p.value] == [1.0, 1.0, 1.0, 1.0, 0.5]


def test_weight_one_changes_nothing():
    pieces = json_pieces(single_reply(KEYS, 3, ""))
    assert restate_weights(pieces, 1.0) == pieces


def test_weights_survive_the_example_file_round_trip():
    pieces = tuple(restate_weights(json_pieces(pairwise_reply(KEYS, "tie", SCORES)), 0.2))
    example = Example("x", "pairwise", ({"role": "user", "content": "q"},), pieces)
    again = Example.from_json(json.loads(json.dumps(example.to_json())))
    assert again == example
    # files written before weights existed still read
    old = {**example.to_json(), "pieces": [[p.text, p.value] for p in pieces]}
    assert all(p.weight == 1.0 for p in Example.from_json(old).pieces)


class _TinyLM(torch.nn.Module):
    """Embedding + head: enough to check the loss arithmetic on real tensors."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(11, 5)
        self.lm_head = torch.nn.Linear(5, 11, bias=False)
        self.config = SimpleNamespace(final_logit_softcapping=None)

    def model(self, input_ids):
        return SimpleNamespace(last_hidden_state=self.embed(input_ids))


def _per_token(model, ids, labels):
    logits = model.lm_head(model.embed(ids[:, :-1]))
    return torch.nn.functional.cross_entropy(
        logits[0], labels[0, 1:], ignore_index=IGNORE, reduction="none"
    )


def test_weighted_loss_is_the_weighted_mean_over_loss_positions():
    model = _TinyLM()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    labels = torch.tensor([[IGNORE, IGNORE, 3, 4, 5, 6]])
    per_token = _per_token(model, ids, labels)[1:]
    plain = target_loss(model, ids, labels, autocast=False)
    assert plain.item() == pytest.approx(per_token.mean().item(), rel=1e-5)
    ones = torch.ones(1, 6)
    assert target_loss(model, ids, labels, False, ones).item() == pytest.approx(plain.item())
    weights = torch.tensor([[0.0, 0.0, 1.0, 0.5, 0.0, 0.5]])
    expected = (per_token * torch.tensor([1.0, 0.5, 0.0, 0.5])).sum() / 2.0
    weighted = target_loss(model, ids, labels, False, weights)
    assert weighted.item() == pytest.approx(expected.item(), rel=1e-5)


# -- decision-first targets: the decision is the first value, as score mode reads it --------
AUTOJ = SHARED_DATA / "autoj"


@pytest.fixture
def autoj_data() -> None:
    shared_file("autoj")


needs_autoj = pytest.mark.usefixtures("autoj_data")


def _decision_examples(criteria: bool, **data) -> dict:
    config = DataConfig(
        autoj_dir=str(AUTOJ),
        template="pocketjudge-decision-compact",
        criteria=criteria,
        single_limit=4,
        pairwise_limit=6,
        counterexamples=0,
        **data,
    )
    return build_examples(config)


@needs_autoj
def test_decision_first_pair_target_is_the_verdict_token_alone():
    built = _decision_examples(criteria=False)
    layout = ReplyLayout(decision_first=True, criteria=False, feedback=False)
    for example in built["examples"]["pairwise"]:
        values = [p for p in example.pieces if p.value]
        assert [p.text for p in values] == [json.dumps(example.meta["label"])]
        assert example.pieces[0] == Piece('{"verdict": ', False)
        item = JudgeItem(
            id="x", question="q", answers=("a", "b"), scenario=example.meta["scenario"]
        )
        rule = resolve(CriteriaChoice(), item, load_catalog()).rule
        jsonschema.validate(
            json.loads(example.target), json_schema(Protocol.PAIRWISE, rule, 2, layout)
        )


@needs_autoj
def test_decision_first_single_target_is_grade_then_critique():
    built = _decision_examples(criteria=False)
    for example in built["examples"]["single"]:
        reply = json.loads(example.target)
        assert list(reply) == ["overall", "feedback"]
        assert reply["overall"] == example.meta["score"]
        assert reply["feedback"]  # the teacher's critique, so "explain" has something to say
        assert example.pieces[0] == Piece('{"overall": ', False)


@needs_autoj
def test_decision_first_with_criteria_keeps_them_after_the_decision():
    built = _decision_examples(criteria=True)
    pair = json.loads(built["examples"]["pairwise"][0].target)
    assert list(pair) == ["verdict", "scores"]
    a, b = (set(pair["scores"][k].values()) for k in ("A", "B"))
    assert {"A": a > b, "B": b > a, "tie": a == b}[pair["verdict"]]
    single = json.loads(built["examples"]["single"][0].target)
    assert list(single) == ["overall", "scores", "feedback"]


@needs_autoj
def test_alpacaeval_pairs_join_the_pairwise_examples(tmp_path):
    rows = [
        {
            "instruction": f"Request {n}?",
            "output_1": "x" * (10 + n),
            "output_2": "y" * 20,
            "preference": 1.0 if n % 2 else 2.0,
        }
        for n in range(1, 21)
    ]
    path = tmp_path / "pairs.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        stream.writelines(json.dumps(row) + "\n" for row in rows)
    built = _decision_examples(criteria=False, alpacaeval_pairs=8, alpacaeval_file=str(path))
    added = built["report"]["pairs_alpacaeval"]
    assert 0 < added <= 8
    sources = [e.meta["source"] for e in built["examples"]["pairwise"]]
    assert sources.count("alpacaeval") == 2 * added  # both orders
    assert sources.count("autoj") > 0
