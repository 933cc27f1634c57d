"""training.evaluation.evaluate end to end, with a scripted backend that judges by markers in
the answers.

The backend ("meta-fake") reads the JSON schema it is asked for, so its replies
fit any scenario's criteria. Pairwise: an answer holding GOOD wins; with no
GOOD, an answer holding FIRST makes the answer in slot A win (position bias);
GARBLE gives unparsable text; otherwise a tie. Single: `score:N` gives N on
every criterion.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from app.catalog.scenarios import load_catalog
from app.catalog.scoring import ScoringRule, verdict_from_overall
from app.io.judgments import read_judgments
from app.io.reader import read_rows
from app.io.writer import write_jsonl
from app.judging.settings import SettingsLayer
from app.records import Judgment, Status
from models.backends import register_backend
from models.backends.base import BackendOptions, Generation, Message, OutputSpec, SamplingParams
from tests.support.fake_backend import FakeBackend
from training.evaluation.evaluate import EvaluationError, Overrides, evaluate_files, main

CATALOG = load_catalog()
BACKEND = "meta-fake"


class MarkerJudge(FakeBackend):
    def generate(
        self, messages: Sequence[Message], params: SamplingParams, output: OutputSpec | None = None
    ) -> Generation:
        self.queue(lambda sent: _reply(sent, output))
        return super().generate(messages, params, output)


def _reply(messages: Sequence[Message], output: OutputSpec | None) -> str:
    assert output is not None and output.json_schema is not None
    user = next(m.content for m in messages if m.role == "user")
    schema = output.json_schema["properties"]
    if "verdict" not in schema:
        keys = list(schema["scores"]["properties"])
        score = int(re.search(r"score:(\d+)", user).group(1))
        return json.dumps({"scores": dict.fromkeys(keys, score), "overall": score, "feedback": ""})
    keys = list(schema["scores"]["properties"]["A"]["properties"])
    first, second = (_slot(user, slot) for slot in ("A", "B"))
    if "GARBLE" in first + second:
        return "I cannot decide."
    if ("GOOD" in first) != ("GOOD" in second):
        winner = "A" if "GOOD" in first else "B"
    elif "FIRST" in first + second:
        winner = "A"
    else:
        winner = "tie"
    points = {"A": (8, 4), "B": (4, 8), "tie": (6, 6)}[winner]
    rule = ScoringRule(CATALOG.specs_for(None, keys))
    blocks = {slot: dict.fromkeys(keys, p) for slot, p in zip("AB", points)}
    overall = {slot: rule.rounded_overall(block) for slot, block in blocks.items()}
    verdict = verdict_from_overall(overall["A"], overall["B"])
    return json.dumps({"scores": blocks, "overall": overall, "verdict": verdict, "feedback": ""})


def _slot(user: str, slot: str) -> str:
    return re.search(rf"\[\[ANSWER {slot} \S+\]\](.*?)\[\[/ANSWER {slot}", user, re.S).group(1)


register_backend(BACKEND, lambda model, options: MarkerJudge(model=model))

# Auto-J pairwise: label 0 = response 1 better, 1 = response 2 better, 2 = tie.
AUTOJ_ROWS = [
    # 1: GOOD in the shorter answer 1: judge A both orders; heuristic B (wrong)
    {
        "id": "p1",
        "scenario": "code_generation",
        "prompt": "Write a loop.",
        "response 1": "GOOD loop",
        "response 2": "a much longer answer that misses the point",
        "label": 0,
    },
    # 2: GOOD in the longer answer 2: judge B, heuristic B
    {
        "id": "p2",
        "scenario": "code_generation",
        "prompt": "Fix the bug.",
        "response 1": "no",
        "response 2": "GOOD fix with an explanation",
        "label": 1,
    },
    # 3: FIRST: slot A wins in each order -> orders (A, B), combined tie; label tie;
    #    answer 1 is longer, so the heuristic says A (wrong)
    {
        "id": "p3",
        "scenario": "chitchat",
        "prompt": "Hello!",
        "response 1": "FIRST hello there friend",
        "response 2": "hi",
        "label": 2,
    },
    # 4: unparsable reply; label A, answer 1 longer (heuristic right)
    {
        "id": "p4",
        "prompt": "Say something.",
        "response 1": "GARBLE GARBLE",
        "response 2": "ok",
        "label": 0,
    },
]

# LLMBar: label 1 or 2, no scenario (group "other").
LLMBAR_ROWS = [
    {
        "input": "Name a colour.",
        "output_1": "GOOD red",
        "output_2": "a long fruit list",
        "label": 1,
    },
    {"input": "Name a fruit.", "output_1": "GOOD apple, a fruit", "output_2": "red", "label": 1},
]

# Pointwise, scale 1-5; the judge answers on 1-10.
POINTWISE_ROWS = [
    {"question": "q1", "response": "score:1", "score": 1, "scale": "1-5"},
    {"question": "q2", "response": "score:5 and more", "score": 3, "scale": "1-5"},
    {"question": "q3", "response": "score:10", "score": 5, "scale": "1-5"},
]


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    autoj = tmp_path / "autoj_pairs.jsonl"
    autoj.write_text("".join(json.dumps(row) + "\n" for row in AUTOJ_ROWS), encoding="utf-8")
    llmbar = tmp_path / "llmbar.json"
    llmbar.write_text(json.dumps(LLMBAR_ROWS), encoding="utf-8")
    pointwise = tmp_path / "graded.jsonl"
    pointwise.write_text("".join(json.dumps(r) + "\n" for r in POINTWISE_ROWS), encoding="utf-8")
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"")
    return {"autoj": autoj, "llmbar": llmbar, "pointwise": pointwise, "model": model}


def _evaluate(inputs: dict[str, Path], out: Path, *names: str) -> dict:
    return evaluate_files(
        [inputs[name] for name in names],
        str(inputs["model"]),
        out_dir=out,
        backend=BACKEND,
        quiet=True,
    )


def test_autoj_and_llmbar_end_to_end(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    report = _evaluate(inputs, out, "autoj", "llmbar")
    assert report == json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["model"] == "judge.gguf"
    assert report["template"] == "pocketjudge"

    autoj = report["files"]["autoj_pairs.jsonl"]
    judge, heuristic = autoj["judge"], autoj["heuristic"]
    assert autoj["kind"] == "pairwise"
    assert judge["n"] == 4
    assert judge["status"] == {"ok": 3, "unparsed": 1, "error": 0}
    # single order (A, B, A, -) vs labels (A, B, tie, A): rows 1, 2 -> 2/4
    assert judge["agreement_single"] == 50.0
    # both orders: rows 1, 2 (row 3 is A then B) -> 2/4
    assert judge["agreement_both"] == 50.0
    # combined (A, B, tie, -): rows 1, 2, 3 -> 3/4
    assert judge["agreement_combined"] == 75.0
    # consistent: rows 1, 2 -> 2/4; first position won both orders: row 3 -> 1/4
    assert judge["consistency"] == 50.0
    assert judge["bias_first"] == 25.0
    assert judge["bias_second"] == 0.0
    assert judge["delta_bias"] == 25.0
    # label not the longer answer: row 1 (A, shorter), row 3 (tie); judge picks neither longer
    assert judge["verbosity_n"] == 2
    assert judge["verbosity_bias"] == 0.0
    assert judge["verdicts"] == {"A": 25.0, "B": 25.0, "tie": 25.0, "none": 25.0}
    # longer answers B, B, A, A vs labels A, B, tie, A: rows 2, 4 -> 2/4
    assert heuristic["agreement_both"] == 50.0

    llmbar = report["files"]["llmbar.json"]
    # judge A, A vs labels A, A; longer answers B, A -> heuristic 1/2
    assert llmbar["judge"]["agreement_both"] == 100.0
    assert llmbar["heuristic"]["agreement_both"] == 50.0

    # groups over both files: Code rows p1, p2; General Communication p3; other p4 + LLMBar
    assert report["groups"] == {
        "Code": {"n": 2, "agreement_both": 100.0, "heuristic": 50.0},
        "General Communication": {"n": 1, "agreement_both": 0.0, "heuristic": 0.0},
        "other": {"n": 3, "agreement_both": 200 / 3, "heuristic": 200 / 3},
    }

    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "## autoj_pairs.jsonl" in markdown
    assert "## llmbar.json" in markdown
    assert "Judge 50.0 vs longer answer wins 50.0 (agreement, both orders)" in markdown
    assert "| agreement, both orders | 100.0 | 50.0 |" in markdown
    assert "| General Communication | 1 | 0.0 | 0.0 |" in markdown
    assert "| autoj_pairs.jsonl | 4 | 3 | 1 | 0 | 0 | 0 | 0 |" in markdown
    # every ok verdict has a confidence: a bucket table per pairwise file, and the ECE
    assert markdown.count("| bucket | rows | confidence range | mean confidence |") == 2
    assert sum(b["n"] for b in report["files"]["autoj_pairs.jsonl"]["judge"][
        "confidence_buckets"]) == 3  # fmt: skip

    saved = [
        Judgment.model_validate_json(line)
        for line in (out / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [j.metadata["eval_file"] for j in saved] == ["autoj_pairs.jsonl"] * 4 + [
        "llmbar.json"
    ] * 2
    assert saved[0].swapped and saved[3].status is Status.UNPARSED


def test_single_score_file(inputs: dict[str, Path], tmp_path: Path) -> None:
    report = _evaluate(inputs, tmp_path / "run", "pointwise")
    entry = report["files"]["graded.jsonl"]
    assert entry["kind"] == "single"
    judge = entry["judge"]
    assert judge["n"] == 3
    # labels 1, 3, 5 and judge 1, 5, 10 rise together: Spearman and Kendall 1
    assert judge["spearman"] == pytest.approx(1.0)
    assert judge["kendall"] == pytest.approx(1.0)
    # 0-1: labels 0, 0.5, 1; judge 0, 4/9, 1 -> MAE (1/18) / 3
    assert judge["mae"] == pytest.approx(1 / 54)
    markdown = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "| mean absolute error (0-1) | 0.019 | – |" in markdown


def test_limit_takes_the_first_rows(inputs: dict[str, Path], tmp_path: Path) -> None:
    report = evaluate_files(
        [inputs["autoj"]],
        str(inputs["model"]),
        limit=2,
        out_dir=tmp_path / "run",
        backend=BACKEND,
        quiet=True,
    )
    assert report["files"]["autoj_pairs.jsonl"]["judge"]["n"] == 2
    assert report["limit"] == 2


def test_rescore_saved_judgments_without_a_model(
    inputs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = _evaluate(inputs, tmp_path / "run", "autoj", "llmbar")
    saved = tmp_path / "run" / "judgments.jsonl"
    again = evaluate_files(
        [inputs["autoj"], inputs["llmbar"]], judgments=saved, out_dir=tmp_path / "again"
    )
    assert again["rescored"] is True
    assert again["model"] == "judge.gguf"
    assert again["files"] == first["files"]
    assert again["groups"] == first["groups"]

    code = main([str(inputs["autoj"]), "--judgments", str(saved), "--out", str(tmp_path / "cli")])
    assert code == 0
    printed = capsys.readouterr().out
    assert "longer answer wins" in printed
    written = (tmp_path / "cli" / "report.md").read_text(encoding="utf-8")
    assert printed == written + "\n"  # print() adds one newline


def test_rescore_with_a_tie_margin_redecides_calibrated_verdicts(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    _evaluate(inputs, tmp_path / "run", "llmbar")
    rows = [
        json.loads(line)
        for line in (tmp_path / "run" / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    for row in rows:  # as the calibrated combine saves them: a winner and the score gap
        row["margin"], row["winner"], row["leaning"] = 0.02, "tie", "tie"
    calibrated = tmp_path / "calibrated.jsonl"
    calibrated.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    as_saved = evaluate_files([inputs["llmbar"]], judgments=calibrated, out_dir=tmp_path / "a")
    redecided = evaluate_files(
        [inputs["llmbar"]],
        judgments=calibrated,
        out_dir=tmp_path / "b",
        overrides=Overrides(SettingsLayer(tie_margin=0.0)),  # no --combine needed
    )
    judge = redecided["files"]["llmbar.json"]["judge"]
    assert as_saved["files"]["llmbar.json"]["judge"]["agreement_combined"] == 0.0  # all ties
    labels = [row.item.label.winner for row in read_rows(inputs["llmbar"])]
    # margin 0.02 > 0 everywhere: every verdict is now A
    assert judge["agreement_combined"] == pytest.approx(100 * labels.count("A") / len(labels))
    assert labels.count("A") > 0
    assert redecided["tie_margin"] == 0.0 and redecided["pair_combine"] == "calibrated"
    with pytest.raises(EvaluationError, match="drop --combine agree"):
        evaluate_files(
            [inputs["llmbar"]],
            judgments=calibrated,
            out_dir=tmp_path / "c",
            overrides=Overrides(SettingsLayer(pair_combine="agree", tie_margin=0.1)),
        )


def test_rescore_with_missing_and_foreign_rows(inputs: dict[str, Path], tmp_path: Path) -> None:
    _evaluate(inputs, tmp_path / "run", "autoj")
    saved = tmp_path / "run" / "judgments.jsonl"
    lines = saved.read_text(encoding="utf-8").splitlines()
    partial = tmp_path / "partial.jsonl"
    partial.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")
    report = evaluate_files([inputs["autoj"]], judgments=partial, out_dir=tmp_path / "p")
    entry = report["files"]["autoj_pairs.jsonl"]
    assert entry["missing"] == 1
    assert entry["judge"]["n"] == 3

    with pytest.raises(EvaluationError, match=r"hold no row of llmbar\.json"):
        evaluate_files([inputs["llmbar"]], judgments=saved, out_dir=tmp_path / "x")


def test_rescore_judgments_of_the_judge_command(inputs: dict[str, Path], tmp_path: Path) -> None:
    # `python -m app judge` writes no file name; with one input file, lines are enough
    first = _evaluate(inputs, tmp_path / "run", "llmbar")
    untagged = tmp_path / "judged.jsonl"
    with open(tmp_path / "run" / "judgments.jsonl", encoding="utf-8") as saved:
        rows = [json.loads(line) for line in saved]
    for row in rows:
        del row["metadata"]["eval_file"]
    untagged.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    again = evaluate_files([inputs["llmbar"]], judgments=untagged)
    assert again["files"] == first["files"]
    assert (tmp_path / "report.md").exists()  # next to the judgments


def test_a_file_without_labels_is_an_error(tmp_path: Path) -> None:
    unlabelled = tmp_path / "plain.jsonl"
    unlabelled.write_text(json.dumps({"question": "q", "answers": ["a", "b"]}) + "\n")
    with pytest.raises(EvaluationError, match="no labelled rows"):
        evaluate_files([unlabelled], judgments=tmp_path / "none.jsonl")
    assert main([str(unlabelled), "--judgments", str(tmp_path / "none.jsonl")]) == 2


def test_backend_options_reach_the_backend(inputs: dict[str, Path], tmp_path: Path) -> None:
    seen: list[BackendOptions] = []

    def create(model: str, options: BackendOptions) -> MarkerJudge:
        seen.append(options)
        return MarkerJudge(model=model)

    register_backend("meta-fake-options", create)
    evaluate_files(
        [inputs["llmbar"]],
        str(inputs["model"]),
        out_dir=tmp_path / "run",
        threads=2,
        n_ctx=2048,
        backend="meta-fake-options",
        quiet=True,
    )
    assert (seen[0].n_threads, seen[0].n_ctx) == (2, 2048)


def test_a_cut_off_run_goes_on_where_it_stopped(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    whole = _evaluate(inputs, out, "autoj", "llmbar")
    saved = out / "judgments.jsonl"
    lines = saved.read_text(encoding="utf-8").splitlines(keepends=True)
    # Cut off after three judgments, the fourth half written.
    saved.write_text("".join(lines[:3]) + lines[3][:40], encoding="utf-8")
    judged: list[str] = []

    class CountingJudge(MarkerJudge):
        def generate(self, messages, params, output=None):  # type: ignore[no-untyped-def]
            judged.append(next(m.content for m in messages if m.role == "user"))
            return super().generate(messages, params, output)

    register_backend("meta-fake-count", lambda model, options: CountingJudge(model=model))
    again = evaluate_files(
        [inputs["autoj"], inputs["llmbar"]],
        str(inputs["model"]),
        out_dir=out,
        backend="meta-fake-count",
        quiet=True,
    )
    assert again["resumed"] == 3
    assert len(judged) == 2 * (len(AUTOJ_ROWS) + len(LLMBAR_ROWS) - 3)  # both orders
    assert again["files"] == whole["files"]
    rows = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(AUTOJ_ROWS) + len(LLMBAR_ROWS)

    judged.clear()
    fresh = evaluate_files(
        [inputs["llmbar"]],
        str(inputs["model"]),
        out_dir=out,
        backend="meta-fake-count",
        quiet=True,
        fresh=True,
    )
    assert fresh["resumed"] == 0 and len(judged) == 2 * len(LLMBAR_ROWS)


def test_resuming_another_judges_run_is_an_error(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "run"
    _evaluate(inputs, out, "llmbar")
    other = tmp_path / "other.gguf"
    other.write_bytes(b"")
    with pytest.raises(EvaluationError, match=r"holds judgments of model judge\.gguf.*--fresh"):
        evaluate_files([inputs["llmbar"]], str(other), out_dir=out, backend=BACKEND, quiet=True)


def test_two_parts_judged_apart_rescore_to_the_whole(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    whole = _evaluate(inputs, tmp_path / "whole", "autoj")
    cut = 2
    first = evaluate_files(
        [inputs["autoj"]], str(inputs["model"]), cut, tmp_path / "a", backend=BACKEND, quiet=True
    )
    second = evaluate_files(
        [inputs["autoj"]],
        str(inputs["model"]),
        None,
        tmp_path / "b",
        backend=BACKEND,
        quiet=True,
        skip=cut,
    )
    assert first["files"]["autoj_pairs.jsonl"]["labelled"] == cut
    assert second["files"]["autoj_pairs.jsonl"]["labelled"] == len(AUTOJ_ROWS) - cut
    assert "after the first 2 of each file" in (tmp_path / "b" / "report.md").read_text()
    both = tmp_path / "both.jsonl"
    both.write_text(
        "".join((tmp_path / p / "judgments.jsonl").read_text() for p in ("a", "b")),
        encoding="utf-8",
    )
    again = evaluate_files([inputs["autoj"]], judgments=both, out_dir=tmp_path / "c")
    name = "autoj_pairs.jsonl"
    assert again["files"][name]["judge"] == whole["files"][name]["judge"]


def test_a_second_judges_saved_run_gives_the_cascade_curve(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    """A second judge that always says the label: sending it every row gives 100 %."""
    first = _evaluate(inputs, tmp_path / "run", "autoj")
    saved = read_judgments(tmp_path / "run" / "judgments.jsonl")
    labels = {
        row.line: row.item.label.winner
        for row in read_rows(inputs["autoj"])
        if row.item is not None and row.item.label is not None
    }
    oracle = [
        j.model_copy(update={"status": Status.OK, "winner": labels[j.line],
                             "leaning": labels[j.line], "model": "oracle", "error": None})
        for j in saved
        if j.line in labels
    ]  # fmt: skip
    second = tmp_path / "oracle.jsonl"
    write_jsonl(oracle, second)
    report = evaluate_files(
        [inputs["autoj"]],
        judgments=tmp_path / "run" / "judgments.jsonl",
        out_dir=tmp_path / "cascade",
        second_judgments=second,
    )
    entry = report["files"]["autoj_pairs.jsonl"]
    points = entry["cascade"]
    assert [p["share"] for p in points] == [0.0, 0.1, 0.3, 0.5, 1.0]
    assert points[0]["agreement"] == first["files"]["autoj_pairs.jsonl"]["judge"][
        "agreement_combined"]  # fmt: skip
    assert points[-1] == {"share": 1.0, "sent": 4, "agreement": 100.0}
    assert entry["cascade_model"] == "oracle"
    assert "| 100% | 4 | 100.0 |" in (tmp_path / "cascade" / "report.md").read_text()


def test_a_base_models_saved_run_adds_entropy_minus_base(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    """Judgments with entropies, and a base run on the same rows: the report compares the
    three indicators on the surer half, by hand on four rows."""
    _evaluate(inputs, tmp_path / "run", "autoj")
    saved = read_judgments(tmp_path / "run" / "judgments.jsonl")
    labels = {
        row.line: row.item.label.winner
        for row in read_rows(inputs["autoj"])
        if row.item is not None and row.item.label is not None
    }
    judged = [j for j in saved if j.line in labels][:4]
    wrong = {"A": "B", "B": "A", "tie": "A"}
    # rows 1-2 right and low entropy, rows 3-4 wrong and high entropy; the base is
    # unsure of row 1 only, so minus base makes row 1 the surest
    made = []
    for n, (judgment, entropy, base) in enumerate(
        zip(judged, (0.5, 1.0, 2.0, 3.0), (4.0, 0.5, 2.5, 0.5))
    ):
        verdict = labels[judgment.line] if n < 2 else wrong[labels[judgment.line]]
        update = {"status": Status.OK, "winner": verdict, "leaning": verdict, "error": None,
                  "confidence": 0.6, "entropy": entropy}  # fmt: skip
        made.append((judgment.model_copy(update=update), judgment.model_copy(
            update={**update, "entropy": base, "model": "base"})))  # fmt: skip
    write_jsonl([m for m, _ in made], tmp_path / "judge.jsonl")
    write_jsonl([b for _, b in made], tmp_path / "base.jsonl")
    report = evaluate_files(
        [inputs["autoj"]],
        judgments=tmp_path / "judge.jsonl",
        out_dir=tmp_path / "indicators",
        base_judgments=tmp_path / "base.jsonl",
    )
    entry = report["files"]["autoj_pairs.jsonl"]
    assert entry["base_model"] == "base"
    table = {row["indicator"]: row for row in entry["indicators"]}
    assert table["all rows"]["agreement"] == 50.0
    assert table["entropy"] == {"indicator": "entropy", "n": 2, "agreement": 100.0}
    # minus base: -3.5, 0.5, -0.5, 2.5: surer half is rows 1 and 3
    assert table["entropy minus base"]["agreement"] == 50.0
    markdown = (tmp_path / "indicators" / "report.md").read_text()
    assert "| entropy minus base | 2 | 50.0 |" in markdown


def test_a_calibration_file_applies_to_saved_judgments(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    """--calibration re-scores with a map fitted after the run: the calibrated ECE appears."""
    import json as json_module

    _evaluate(inputs, tmp_path / "run", "autoj")
    path = tmp_path / "calibration.json"
    path.write_text(json_module.dumps({"at": [0.0, 1.0], "right": [0.5, 0.5]}))
    report = evaluate_files(
        [inputs["autoj"]],
        judgments=tmp_path / "run" / "judgments.jsonl",
        out_dir=tmp_path / "calibrated",
        calibration=path,
    )
    saved = read_judgments(tmp_path / "run" / "judgments.jsonl")
    assert any(j.confidence is not None for j in saved)
    judge = report["files"]["autoj_pairs.jsonl"]["judge"]
    assert judge["ece_calibrated"] is not None and judge["ece"] is not None
    with pytest.raises(EvaluationError, match="give --judgments"):
        evaluate_files([inputs["autoj"]], out_dir=tmp_path / "x", calibration=path)
