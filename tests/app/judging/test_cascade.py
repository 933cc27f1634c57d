"""The cascade (app/judging/cascade.py): unsure judgments go to a second judge.

Through the CLI on the tiny llama.cpp model the tests build (as both judges), and
the rule of which judgments go on, on judgments made by a scripted backend.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from app.judging.cascade import Cascade
from app.judging.config import JudgeConfig
from app.judging.service import JudgeService
from app.records import JudgeItem, Judgment, Protocol, Status
from tests.app.cli.test_cli_resume import command, read, rows_file
from tests.support.fake_backend import FakeBackend


@pytest.mark.parametrize(("below", "second_share"), [("0", 0), ("1.01", 3)])
def test_a_cascade_sends_the_unsure_rows_to_the_second_judge_and_says_which_decided(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    below: str, second_share: int,
) -> None:  # fmt: skip
    """Below 0 nothing goes on; below 1.01 every row does. Each row says who decided and,
    when the second did, what the first said."""
    source, out = rows_file(tmp_path / "in.jsonl", count=3), tmp_path / "out.jsonl"
    second = tmp_path / "second.gguf"
    second.symlink_to(tiny_gguf_model)
    args = command(tiny_gguf_model, source, out, "--cascade-to", str(second),
                   "--cascade-below", below)[3:]  # fmt: skip
    assert main(args) == 0
    judged = read(out)
    decided = [j.cascade["decided_by"] for j in judged]
    assert decided.count("second") == second_share and len(decided) == 3
    for judgment in judged:
        assert judgment.cascade["below"] == float(below)
        if judgment.cascade["decided_by"] == "second":
            assert judgment.model == "second.gguf"
            assert judgment.cascade["first_model"] == tiny_gguf_model.name
            assert judgment.cascade["first_verdict"] in ("A", "B", "tie")
            assert 0 <= judgment.cascade["first_confidence"] <= 1
        else:
            assert judgment.model == tiny_gguf_model.name
    assert f"the second judge decided {second_share} of 3 rows" in capsys.readouterr().err


def judged(status: Status, confidence: float | None, error: str | None = None) -> Judgment:
    verdict = "A" if status is Status.OK else None
    return Judgment(
        id="x",
        protocol=Protocol.PAIRWISE,
        status=status,
        error=error,
        winner=verdict,
        leaning=verdict,
        confidence=confidence,
    )


@pytest.mark.parametrize(
    ("judgment", "goes_on"),
    [
        (judged(Status.OK, 0.59), True),
        (judged(Status.OK, 0.6), False),
        (judged(Status.OK, None), True),
        (judged(Status.UNPARSED, None, "no verdict"), True),
        (judged(Status.ERROR, None, "backend failed: timeout"), True),
        (judged(Status.ERROR, None, "pairwise judging needs exactly 2 answers"), False),
    ],
)
def test_which_judgments_go_to_the_second_judge(judgment: Judgment, goes_on: bool) -> None:
    """Unsure, unread or backend-failed ones do; a row the second judge would fail
    for the same reason (a bad row) does not."""
    cascade = Cascade(JudgeService(FakeBackend(), "second"), JudgeConfig(), below=0.6)
    assert cascade.needs_second(judgment) is goes_on
    item = JudgeItem(id="x", question="Q?", answers=("a", "b"))
    if not goes_on:
        assert cascade.reconsider(item, judgment).cascade == {"decided_by": "first", "below": 0.6}
