"""The dev pairs read again where the judge's own answer is in use
(training/evaluation/own_answer_reads.py): only the pairs a program computed an answer for are
judged again; they and the bare held-out pairs become measure's last saved rows, which
replace the rows saved before."""

from __future__ import annotations

import json
from pathlib import Path

from app.records import Judgment, Protocol, Status
from training.decision.measure import saved_rows
from training.evaluation.own_answer_reads import done_rows, write


def _judgment(line: int, score: float) -> Judgment:
    return Judgment(
        id=f"r{line}",
        line=line,
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        leaning="A",
        confidence=0.7,
        verdict_parts={"score": score, "self_reference_words_computed_difference": 1.0},
        verdict_probs={"A": 0.7, "B": 0.3, "tie": 0.0},
    )


def test_the_pairs_judged_again_and_the_bare_pairs_replace_their_saved_rows(tmp_path: Path):
    probed = [
        {"file": "natural.json", "line": 3, "computed": False, "probe_s": 1.5},
        {"file": "natural.json", "line": 4, "computed": True, "probe_s": 2.5}
        | {"judgment": _judgment(4, 1.2).model_dump(mode="json")},
    ]
    folder = tmp_path / "runs"
    folder.mkdir()
    text = "".join(json.dumps(row) + "\n" for row in probed) + '{"file": "cut sh'
    (folder / "part0.jsonl").write_text(text, encoding="utf-8")
    assert set(done_rows(folder)) == {("natural.json", 3), ("natural.json", 4)}
    bare = tmp_path / "test.jsonl"
    bare.write_text(_judgment(7, -0.4).model_dump_json() + "\n", encoding="utf-8")
    out = tmp_path / "saved.jsonl.gz"
    said = write(folder, bare, out)
    assert said.startswith("2 of 524 dev pairs probed, 1 computed (the program's ask 2.0 s a pair")
    rows = {(r["file"], r["line"]): r for r in saved_rows([out])}
    assert set(rows) == {("natural.json", 4), ("reference-page-bare", 7)}
    again = rows["natural.json", 4]
    assert again["parts"]["score"] == 1.2 and again["p_a"] == 0.7
