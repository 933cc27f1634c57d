"""A run's configuration is settled once (app/judging/settled_run.py): the per-item path
reads no JudgeConfig, and each decider receives only the settings it reads."""

from __future__ import annotations

import ast
import json
from dataclasses import fields
from functools import partial
from pathlib import Path

import pytest

import app.judging.head_decider as head_decider
import app.judging.item_checks as item_checks
import app.judging.settled_run as settled_run
from app.catalog.criteria_resolution import CriteriaChoice
from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule
from app.io.reader import InputRow
from app.judging.plans import Plan
from app.judging.service import JudgeService
from app.judging.settings import config_of
from app.records import JudgeItem, Status
from tests.support.fake_backend import FakeBackend

ROOT = Path(__file__).resolve().parents[3]
JUDGING = ROOT / "app" / "judging"
CATALOG = load_catalog()
TWO = ("accuracy", "clarity")
RULE = ScoringRule(CATALOG.specs_for(None, list(TWO)))
Config = partial(config_of, mode="generate", detect_scenario=False, uncertain_below=0.0)

# the modules an item passes through once its run is settled
PER_ITEM = ("service.py", "head_decider.py", "reply_decider.py", "prompt_fitting.py")
PER_ITEM += ("finishing.py", "plans.py")
# where a JudgeConfig may be read: settling it (`of`), and a front end's one-line note
SETTLING = {"of", "reference_note", "own_answer_note"}  # and the notes a front end says once


def _config_reads(path: Path) -> dict[str, int]:
    """Function name -> how many `config.<x>` reads its body makes, in one module."""
    reads: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            count = sum(
                isinstance(inner, ast.Attribute)
                and isinstance(inner.value, ast.Name)
                and inner.value.id == "config"
                for inner in ast.walk(node)
            )
            if count:
                reads[node.name] = reads.get(node.name, 0) + count
    return reads


def test_the_per_item_path_reads_no_judge_config():
    """Only the settings' `of` constructors read a JudgeConfig in the modules an item
    passes through; the service hands it to `settle` and reads none of it."""
    found = {name: _config_reads(JUDGING / name) for name in PER_ITEM}
    assert found["service.py"] == {}
    assert sum(found["head_decider.py"].values()) and sum(found["reply_decider.py"].values())
    for module, reads in found.items():
        assert set(reads) <= SETTLING, (module, reads)
    assert "config" not in {f.name for f in fields(Plan)}


def test_a_planted_config_read_is_found(tmp_path: Path):
    planted = tmp_path / "planted.py"
    planted.write_text("def _plan(item, config):\n    return config.protocol\n", encoding="utf-8")
    assert _config_reads(planted) == {"_plan": 1}


def _pair(index: int) -> JudgeItem:
    return JudgeItem(id=f"p{index}", question="Capital of France?", answers=("Paris.", "Lyon."))


def _pair_reply() -> str:
    scores = {"A": dict.fromkeys(RULE.keys, 9), "B": dict.fromkeys(RULE.keys, 3)}
    overall = {key: RULE.rounded_overall(block) for key, block in scores.items()}
    return json.dumps({"scores": scores, "overall": overall, "verdict": "A", "feedback": "A."})


@pytest.mark.parametrize("rows", [1, 4])
def test_a_run_is_settled_once_whatever_its_rows(monkeypatch, rows):
    """Settling and template lookups happen once per run, not once per row."""
    settles, lookups = [], []
    real_settle, real_lookup = settled_run.settle, item_checks.get_template

    def counted_settle(*args, **kwargs):
        settles.append(1)
        return real_settle(*args, **kwargs)

    def counted_lookup(name):
        lookups.append(name)
        return real_lookup(name)

    monkeypatch.setattr("app.judging.service.settle", counted_settle)
    for module in (item_checks, head_decider):
        monkeypatch.setattr(module, "get_template", counted_lookup)
    config = Config(choice=CriteriaChoice(criteria=TWO), swap=False)
    backend = FakeBackend([_pair_reply() for _ in range(rows)])
    judgments = JudgeService(backend, "fake-model", CATALOG).judge_many(
        [_row(i) for i in range(rows)], config
    )
    assert [j.status for j in judgments] == [Status.OK] * rows
    assert [j.winner for j in judgments] == ["A"] * rows
    # one settle per run; the template is looked up once, by ItemRules (native_generate and
    # the critiques' replies reuse it), whatever the number of rows
    assert len(settles) == 1 and lookups == [config.judge.template]


def _row(index: int) -> InputRow:
    return InputRow(line=index + 1, item=_pair(index), error=None, raw=None)


def test_each_decider_gets_only_the_settings_it_reads():
    """The reply decider's settings hold no head; the head's hold no reply layout; the
    critiques are generated, in one answer order."""
    config = Config(choice=CriteriaChoice(criteria=TWO), swap=False)
    run = settled_run.settle(config, FakeBackend([]), "fake-model")
    assert run.heads is None and run.replies is not None
    reply = run.replies.settings
    assert reply.swap is False and reply.layout.feedback  # generate mode: feedback in it
    assert reply.prompt_template.name == config.judge.template
    assert {f.name for f in fields(reply)} == {
        "prompt_template",
        "layout",
        "fit",
        "swap",
        "combine",
        "tie_within",
        "max_tokens",
    }
    critiques = run.critic.replies
    assert critiques is not None and critiques.settings.layout.feedback
    assert critiques.settings.swap is False
    silent = config_of(writes_critiques=False)
    assert settled_run.settle(silent, FakeBackend([]), "fake-model").critic.replies is None
