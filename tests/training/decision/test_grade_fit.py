"""The rubric grade's rule: fitted by request-grouped CV on the one cache's graded rows
(training/decision/grade_fit.py, by `training.decision.fit`), read by part
(training/decision/graded.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.deciding.decision import load_decision
from app.io.reader import InputRow
from app.records import AnswerScores, JudgeItem, Judgment, Label, Protocol, Status
from training.decision.fit import main
from training.decision.grade_fit import fold_of, random_folds, report, table
from training.decision.graded import graded_row, labelled_graded, part_rows
from training.decision.record_file import record_path


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


def _graded(rows: list[InputRow], judged: dict[str, Judgment]) -> list[dict]:
    """The cache's rows of `judged`, labelled as the fit reads them."""
    found = [graded_row(r.item, judged[r.item.id]) for r in rows if r.item.id in judged]
    labels = {r.item.id: r.item.label.score for r in rows}
    return [row | {"label": labels[row["id"]]} for row in found]


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
    found = table(_graded(rows, judged))
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
    judged["r1"] = judged["r1"].model_copy(update={"answers": ()})
    found = table(_graded(rows, judged))
    assert found["skipped"] == 2 and len(found["y"]) == 10


def test_the_command_fits_the_cached_rows_and_refits_the_rubric_grade_alone(tmp_path, capsys):
    """`training.decision.fit --sections rubric_grade`: the graded rows the cache holds (by
    part, in the file's order, labels joined from the file) give the rubric grade; the
    verdict's rule is left as the record has it."""
    rows, judged = _rows_and_judgments()
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(_ours(r.item)) + "\n" for r in rows), encoding="utf-8")
    cache = tmp_path / "cache" / "graded"
    cache.mkdir(parents=True)
    lines = [json.dumps(graded_row(r.item, judged[r.item.id])) for r in rows]
    (cache / "part0.jsonl").write_text("\n".join(lines[::2]) + "\n")
    (cache / "part1.jsonl").write_text("\n".join(lines[1::2]) + '\n{"key": "torn')
    assert [r["id"] for r in labelled_graded(data, cache)] == [r.item.id for r in rows]
    out = tmp_path / "decision.yaml"
    args = ["--reads", str(tmp_path / "cache"), "--graded", str(data), "--out", str(out)]
    assert main([*args, "--sections", "rubric_grade"]) == 0
    grade = load_decision(out).rubric_grade
    assert grade is not None and grade.fitted.rows.startswith("80 rows")
    assert grade.fitted.by == "python -m training.decision.fit" and grade.cv_pearson > 0.95
    assert load_decision(out).signals == load_decision(record_path()).signals  # left as it was
    assert "(chosen)" in capsys.readouterr().out


def test_parts_share_a_file_by_request(tmp_path):
    rows = [
        {"id": f"{q}-{m}", "question": f"request {q}", "answers": ["x"]}
        for m in ("first", "second")
        for q in range(3)
    ]  # listed by answering model, as vicuna_eval is
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    every = sorted(r.item.id for r in part_rows(data, 0, 1))
    assert every == sorted(r["id"] for r in rows)
    first, second = ([r.item.id for r in part_rows(data, k, 2)] for k in (0, 1))
    assert first == ["0-first", "2-first", "0-second", "2-second"]  # whole requests
    assert second == ["1-first", "1-second"]


def _ours(item: JudgeItem) -> dict:
    """A row in PocketJudge's own layout."""
    return {
        "id": item.id,
        "question": item.question,
        "answers": list(item.answers),
        "reference": item.reference,
        "label": {"score": item.label.score, "scale_max": 5},
    }


def test_the_committed_graded_rows_give_the_records_rubric_grade_again():
    """Every row of vicuna_eval is in the one cache (training/decision/cache/graded/): the fit
    on them is the default's rubric grade as its record holds it."""
    from training.evaluation.reference_runs import DEFAULT_FILE

    if not DEFAULT_FILE.is_file():
        pytest.skip(f"{DEFAULT_FILE} is not here (../shared/data)")
    rows = labelled_graded(DEFAULT_FILE)
    assert len(rows) == 320
    found = report(table(rows))["grade"]
    assert found == load_decision(record_path()).rubric_grade
