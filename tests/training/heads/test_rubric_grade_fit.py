"""The rubric grade's combination: fitted by request-grouped CV on saved judgments
(training/heads/rubric_grade_fit.py), read rows resumed by part (rubric_grade_reads.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.deciding.decision import load_decision
from app.io.reader import InputRow
from app.records import AnswerScores, JudgeItem, Judgment, Label, Protocol, Status
from training.decision.record_file import record_path
from training.heads.rubric_grade_fit import fold_of, main, random_folds, report, table
from training.heads.rubric_grade_reads import part_output, part_rows, remaining


def _rows_and_judgments(count: int = 80) -> tuple[list[InputRow], dict[str, Judgment]]:
    """Labels that the read level and the check explain together (neither alone)."""
    rng = np.random.default_rng(3)
    rows, judged = [], {}
    for n in range(count):
        level, check = rng.normal(4.0, 0.4), rng.normal(0.0, 1.0)
        label = 1.0 + 0.6 * level + 0.5 * check + rng.normal(0, 0.05)
        item = JudgeItem(
            id=f"r{n}",
            question=f"request {n // 4}",
            answers=("word " * (5 + n % 7) + ("right" if n % 3 else "wrong"),),
            reference="the right answer",
            label=Label(score=label),
        )
        rows.append(InputRow(line=n + 1, item=item, error=None, raw=None))
        scores = AnswerScores(
            criteria={"rubric": round(level, 1)},
            overall=6,
            expected_criteria={"rubric": level},
            expected_overall=float(rng.normal(6, 1)),
        )
        parts = {"reference_check": check, "reference_likelihood": float(rng.normal(-1, 0.2))}
        judged[item.id] = Judgment(
            id=item.id,
            protocol=Protocol.SINGLE,
            status=Status.OK,
            answers=(scores,),
            verdict_parts=parts,
        )
    return rows, judged


def test_the_folds_keep_every_requests_answers_together():
    folds = fold_of(["a", "a", "b", "c", "b", "d", "e", "f"], folds=5)
    assert folds[0] == folds[1] and folds[2] == folds[4]
    assert len(set(folds.tolist())) == 5
    groups = [f"q{n // 4}" for n in range(40)]
    shuffled = [random_folds(groups, seed) for seed in range(3)]
    for folds in shuffled:
        assert all(len({folds[i] for i in range(q, q + 4)}) == 1 for q in range(0, 40, 4))
    assert not np.array_equal(shuffled[0], shuffled[1])  # another split for another seed


def test_the_fit_finds_the_signals_that_explain_the_label_out_of_fold():
    rows, judged = _rows_and_judgments()
    found = table(rows, judged)
    result = report(found)
    candidates = result["candidates (request-grouped CV Pearson)"]
    assert candidates["read + check"]["pearson"] > 0.95
    assert candidates["the rubric read alone"]["pearson"] < 0.8
    assert "check" in result["grade"].weights() and "level" in result["grade"].weights()
    assert result["grade"].weights()["check"] == pytest.approx(0.5, abs=0.05)
    # the choice made inside each fold holds up out of fold too
    held_out = result["nested CV Pearson (the choice made inside each fold)"]
    assert result["grade"].cv_pearson == held_out
    assert result["grade"].cv_pearson > 0.95
    bounds = {s.name: s.bounds for s in result["grade"].signals}
    low, high = bounds["check"]  # the range the fit saw, kept to hold to
    assert low == pytest.approx(found["x"][:, 2].min(), abs=1e-4) and high > low
    assert low <= found["x"][:, 2].min() and high >= found["x"][:, 2].max()  # rounded outward
    spread = result["nested CV Pearson over random request-grouped splits"]
    assert spread["splits"] == 10 and spread["lowest"] > 0.9 and spread["sd"] < 0.05


def test_a_row_without_every_signal_is_left_out_and_counted():
    rows, judged = _rows_and_judgments(12)
    judged["r0"] = judged["r0"].model_copy(update={"verdict_parts": None})
    del judged["r1"]
    found = table(rows, judged)
    assert found["skipped"] == 2 and len(found["y"]) == 10


def test_the_command_reads_saved_parts_and_writes_the_chosen_grade(tmp_path, capsys):
    rows, judged = _rows_and_judgments()
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(_ours(r.item)) + "\n" for r in rows), encoding="utf-8")
    reads = tmp_path / "reads"
    reads.mkdir()
    lines = [j.model_dump_json() for j in judged.values()]
    (reads / "judgments-part0.jsonl").write_text("\n".join(lines[::2]) + "\n")
    (reads / "judgments-part1.jsonl").write_text("\n".join(lines[1::2]) + "\n")
    out = tmp_path / "decision.yaml"  # a judge's record: the grade is written into it
    out.write_text(record_path().read_text(encoding="utf-8"), encoding="utf-8")
    assert main([str(data), "--reads", str(reads), "--write", str(out)]) == 0
    grade = load_decision(out).rubric_grade
    assert grade is not None and grade.fitted.rows.startswith("80 rows")
    assert (
        grade.cv_pearson > 0.95
        and load_decision(out).signals == load_decision(record_path()).signals
    )  # the verdict's rule is left as it was
    assert "(chosen)" in capsys.readouterr().out


def test_parts_share_a_file_by_request_and_a_run_goes_on_where_it_stopped(tmp_path):
    rows = [
        {"id": f"{q}-{m}", "question": f"request {q}", "answers": ["x"]}
        for m in ("first", "second")
        for q in range(3)
    ]  # listed by answering model, as vicuna_eval is
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    both = [r.item.id for r in part_rows(data, 0, 1)]
    assert both == ["0-first", "0-second", "1-first", "1-second", "2-first", "2-second"]
    assert [r.item.id for r in part_rows(data, 1, 2)] == ["0-second", "1-second", "2-second"]
    # a run killed while writing its second row: that row is cut off and judged again
    output = part_output(tmp_path, 0, 2)
    first = Judgment(id="0-first", protocol=Protocol.SINGLE, status=Status.ERROR, error="x")
    output.partial.write_text(first.model_dump_json() + '\n{"id": "1-fi', encoding="utf-8")
    zeroth = part_rows(data, 0, 2)
    assert [r.item.id for r in remaining(zeroth, output)] == ["1-first", "2-first"]
    assert output.partial.read_text(encoding="utf-8").count("\n") == 1  # the torn line is gone
    assert not output.out.exists()  # the part's file is written once it is finished


def _ours(item: JudgeItem) -> dict:
    """A row in PocketJudge's own layout."""
    return {
        "id": item.id,
        "question": item.question,
        "answers": list(item.answers),
        "reference": item.reference,
        "label": {"score": item.label.score, "scale_max": 5},
    }
