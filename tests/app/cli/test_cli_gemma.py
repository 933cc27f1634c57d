"""The CLI with the real Gemma 3 270M GGUF (`make models` builds it) on real Auto-J pairs.

Gemma 270M base is not trained for judging, so only the form is checked: every
row comes back judged (grammar + value rules), with expected scores read from
the model's probabilities. The three shortest pairs of the dev split keep the
run well under a minute and a half on two CPU cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.records import Judgment, Protocol, Status
from models.registry import load_registry
from tests.support.needs import need_model, shared_file

N_ROWS = 3
GEMMA = "gemma3-270m-base"

pytestmark = pytest.mark.slow


def _gemma_model() -> Path | None:
    return load_registry().get(GEMMA).path()


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    path = shared_file("autoj/pairwise_dev.jsonl")
    need_model(_gemma_model(), GEMMA)
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    pairs.sort(key=lambda r: len(r["prompt"]) + len(r["response 1"]) + len(r["response 2"]))
    return pairs[:N_ROWS]


def test_gemma_judges_real_pairs_with_swap(
    rows: list[dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "pairs.jsonl"  # a temporary copy of three rows, outside the repo
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    # One thread: on two busy cores, two llama.cpp threads run several times slower.
    code = main(["judge", str(source), "--out", str(out), "--protocol", "pairwise",
                 "--model", GEMMA, "--max-tokens", "320", "--threads", "1", "--quiet"])  # fmt: skip
    assert code == 0
    stderr = capsys.readouterr().err
    entry = load_registry().get(GEMMA)
    assert ("is not trained for judging" in stderr) is not entry.trained_for_judging
    assert f"{N_ROWS} rows -> {out}: {N_ROWS} ok, 0 unparsed, 0 error" in stderr

    judgments = [Judgment.model_validate_json(line) for line in out.read_text().splitlines()]
    assert [j.id for j in judgments] == [row["id"] for row in rows]
    assert [j.scenario for j in judgments] == [row["scenario"] for row in rows]
    for judgment in judgments:
        assert judgment.status is Status.OK, judgment.error
        assert judgment.protocol is Protocol.PAIRWISE
        assert judgment.model == GEMMA
        assert judgment.swapped and judgment.raw_output and judgment.raw_output_swapped
        assert judgment.winner in ("A", "B", "tie", "uncertain")
        assert judgment.leaning in ("A", "B", "tie")
        # Confidence is the probability of the reported verdict, averaged over both
        # orders, so it exists also when they disagree; below the judge's threshold
        # the verdict is written as "uncertain" beside its leaning.
        assert judgment.template == entry.judging.template
        assert judgment.margin is not None
        assert judgment.confidence is not None and 0.0 <= judgment.confidence <= 1.0
        assert judgment.uncertain is (judgment.confidence < entry.judging.uncertain_below)
        assert (judgment.winner == "uncertain") is judgment.uncertain
