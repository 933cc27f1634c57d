"""The front ends judge through the loaded judge (app.api.Judge), never through its service:
`Judge` offers what they need (one item, streamed rows, a batch, steps, a critique, reads)."""

import ast
from pathlib import Path

from app.api import Judge
from app.judging.service import JudgeService

ROOT = Path(__file__).resolve().parents[2]
FRONTS = ("app/cli", "app/ui", "app/batches", "app/reports", "training", "bench")


def reaches_service(source: str) -> list[int]:
    """Lines where `source` reads an attribute named `service` (a judge's service)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "service"
    ]


def test_no_front_end_reaches_through_a_judge_to_its_service():
    found = []
    for folder in FRONTS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "runs" in path.relative_to(ROOT).parts:
                continue
            lines = reaches_service(path.read_text(encoding="utf-8"))
            found += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    assert not found, "reaches judge.service: " + ", ".join(found)


def test_the_check_finds_a_reach_through():
    assert reaches_service("rows = judge.service.judge_rows(rows, config)") == [1]
    assert reaches_service("rows = judge.judge_rows(rows, config)") == []


def test_the_judge_offers_what_the_service_does_for_the_front_ends():
    offered = ("judge", "judge_rows", "judge_many", "judge_in_steps", "explain", "score_requests")
    for name in offered:
        assert callable(getattr(Judge, name)) and callable(getattr(JudgeService, name)), name
