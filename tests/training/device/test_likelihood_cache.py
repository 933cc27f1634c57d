"""The likelihood reads' cache: resumable, each request-free read once per answer, and an
evaluation served from it judging exactly as an uncached one (tiny real model); each
signal's agreement alone from saved parts."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from app.io.reader import InputRow
from app.judging.config import JudgeParts
from app.records import JudgeItem, Judgment, Label, Protocol, Status
from models.judge_settings import JudgeSettings
from training.device.reading_cache import CHUNK, CachedReads, ReadingCache
from training.evaluation.signal_parts import signal_agreement


def _fake_reads(log: list[str]):
    def read_cond(question: str, answer: str) -> tuple[np.ndarray, np.ndarray]:
        log.append(f"cond {question}|{answer}")
        return np.full(len(answer), -1.0), np.ones(4, dtype=np.float32)

    def read_uncond(answer: str) -> np.ndarray:
        log.append(f"uncond {answer}")
        return np.full(len(answer), -2.0)

    return read_cond, read_uncond


def test_the_cache_resumes_and_reads_each_answer_without_a_request_once(tmp_path):
    texts = [(f"q{n // 2}", f"answer {n}") for n in range(CHUNK + 5)]
    texts.append(("another request", "answer 0"))  # a borrowed answer: its free read is kept
    log: list[str] = []
    cache = ReadingCache(tmp_path)
    cache.fill(texts[:CHUNK], *_fake_reads(log), "part0")
    again = ReadingCache(tmp_path)  # a new process: only what is not on disk yet
    again.fill(texts, *_fake_reads(log), "part0")
    assert sorted(t for t in log if t.startswith("cond")) == sorted(
        f"cond {q}|{a}" for q, a in texts
    )
    assert len([t for t in log if t.startswith("uncond")]) == len(texts) - 1
    reading = ReadingCache(tmp_path).get("another request", "answer 0")
    assert reading.features()["pmi_mean"] == pytest.approx(1.0)
    assert reading.states.tolist() == [1.0] * 4
    assert not list(tmp_path.glob("*.tmp.npz"))
    with pytest.raises(KeyError, match="likelihood_head read"):
        again.get("never read", "answer 0")


def test_a_half_precision_cache_reads_back_what_it_wrote_in_half_the_bytes(tmp_path):
    rng = np.random.default_rng(0)
    states = rng.normal(0, 3, 3072).astype(np.float32)
    logprobs = -rng.exponential(2, 300).astype(np.float32)

    def read_cond(question: str, answer: str) -> tuple[np.ndarray, np.ndarray]:
        return logprobs, states

    def read_uncond(answer: str) -> np.ndarray:
        return logprobs - 1.0

    ReadingCache(tmp_path / "full").fill([("q", "a")], read_cond, read_uncond, "part0")
    ReadingCache(tmp_path / "half", half=True).fill([("q", "a")], read_cond, read_uncond, "part0")
    full, half = (ReadingCache(tmp_path / name).get("q", "a") for name in ("full", "half"))
    assert half.states.dtype == np.float32 and half.cond.dtype == np.float32
    assert np.allclose(half.states, full.states, rtol=1e-3, atol=1e-3)
    for name, value in full.features().items():
        assert half.features()[name] == pytest.approx(value, rel=1e-3, abs=1e-2), name
    sizes = [sum(p.stat().st_size for p in (tmp_path / n).glob("*.npz")) for n in ("full", "half")]
    assert sizes[1] < 0.55 * sizes[0]


def test_an_interrupted_fill_keeps_what_it_read(tmp_path):
    texts = [(f"q{n}", f"answer {n}") for n in range(5)]  # fewer than a chunk
    read_cond, read_uncond = _fake_reads([])
    calls = []

    def stopped_on_the_fourth(answer: str) -> np.ndarray:
        calls.append(answer)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return read_uncond(answer)

    with pytest.raises(KeyboardInterrupt):
        ReadingCache(tmp_path).fill(texts, read_cond, stopped_on_the_fourth, "part0")
    kept = ReadingCache(tmp_path)
    assert [kept.has(q, a) for q, a in texts] == [True, True, True, False, False]


def test_an_evaluation_from_the_cache_judges_as_one_without_it(tmp_path, tiny_gguf_model):
    from app.deciding.state_head import StateHead
    from app.judging.config import JudgeConfig
    from app.judging.service import JudgeService
    from models.backends.base import BackendOptions
    from models.backends.llama_cpp_backend import LlamaCppBackend
    from tests.support.head_configs import record_of

    backend = LlamaCppBackend(str(tiny_gguf_model), BackendOptions(n_ctx=1024, n_threads=1))
    try:
        head = StateHead(base_file="any", reads="reply", weights=())
        config = JudgeConfig(
            protocol=Protocol.PAIRWISE,
            judge=JudgeSettings(criterion_scores=False),
            parts=JudgeParts(head=head, decision=record_of(pmi_mean=1.0)),
        )
        item = JudgeItem(id="p", question="Name a colour.", answers=("Red.", "A fish swims."))
        service = JudgeService(backend, "tiny")
        plain = service.judge(item, config)
        calls: list[int] = []
        original = backend.read_answers

        def counted(request, answers, unconditioned=True, criteria=None):  # type: ignore[no-untyped-def]
            calls.append(len(answers))
            return original(request, answers, unconditioned, criteria)

        cached = CachedReads(counted, ReadingCache(tmp_path), "eval")
        backend.read_answers = cached  # type: ignore[method-assign]
        first = service.judge(item, config)
        cached.close()
        backend.read_answers = CachedReads(counted, ReadingCache(tmp_path), "eval")  # type: ignore[method-assign]
        second = service.judge(item, config)
        # a reference read on from the answers goes on from a live read: those reads are
        # made afresh
        weighed = replace(config.parts, decision=record_of(pmi_mean=1.0, reference_likelihood=1.0))
        referenced = item.model_copy(update={"reference": "Red."})
        scored = service.judge(referenced, replace(config, parts=weighed))
    finally:
        backend.close()
    assert calls == [2, 2]  # read once, then served from disk by a new cache; then afresh
    assert "reference_likelihood_difference" in scored.verdict_parts
    for judged in (first, second):
        assert judged.verdict_parts["score"] == pytest.approx(
            plain.verdict_parts["score"], abs=1e-3
        )
        assert judged.leaning == plain.leaning


def _row(line: int, winner: str, answers: tuple[str, str]) -> InputRow:
    item = JudgeItem(id=str(line), question="q", answers=answers, label=Label(winner=winner))
    return InputRow(line=line, item=item, error=None, raw=None)


def _judged(line: int, leaning: str, parts: dict[str, float]) -> Judgment:
    return Judgment(
        id=str(line),
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        line=line,
        leaning=leaning,
        winner=leaning,
        verdict_parts=parts,
    )


def test_each_signal_alone_from_the_saved_parts():
    rows = [_row(1, "A", ("short", "much longer")), _row(2, "B", ("longer one", "short"))]
    parts = {"states": 0.5, "fit": -0.2, "score": 0.3, "pmi_mean_difference": -1.0}
    judgments = [
        _judged(1, "A", parts),
        _judged(2, "B", {**parts, "states": -0.5, "score": -0.7}),
    ]
    found = signal_agreement(rows, judgments)
    assert found["rows"] == 2
    agreement = found["agreement"]
    assert agreement["reported verdict"] == 100.0
    assert agreement["states alone"] == 100.0
    assert agreement["fit alone"] == 50.0  # toward B on both rows
    assert agreement["PMI per token"] == 50.0
    assert agreement["the longer answer wins"] == 0.0
    assert signal_agreement(rows, [_judged(1, "A", {})]) is None


@pytest.mark.parametrize("folder", ["head-fitting", "evaluation"])
def test_the_committed_reads_are_half_precision_numbers_under_hashed_keys(folder):
    """The head's fitting set and the evaluation files' pairs, as read, are committed (a later
    session goes on from them, a head fitted again is measured on them): numbers only, under
    keys that are hashes of the texts, in small half-precision chunks."""
    import re

    from training.datasets.likelihood_data import CACHE_DIR, EVALUATION_CACHE_DIR

    where = {"head-fitting": CACHE_DIR, "evaluation": EVALUATION_CACHE_DIR}[folder]
    files = sorted(where.glob("*/*.npz"))
    assert files, f"{where}: no committed reads"
    key = re.compile(r"^(c[0-9a-f]{40}\.(lp|st)|u[0-9a-f]{40})$")
    for path in files:
        assert path.stat().st_size < 2_000_000, path
        with np.load(path) as chunk:
            assert all(key.match(name) for name in chunk.files), path
            assert all(chunk[name].dtype == np.float16 for name in chunk.files), path


def test_the_evaluation_reads_are_each_answer_of_the_measured_files_once_cut_as_the_head_reads():
    from app.deciding.state_head import ANSWER_CHARS, QUESTION_CHARS
    from training.datasets.likelihood_data import cut
    from training.datasets.state_head_data import single_rows
    from training.decision.measure import FILES, HELD_OUT, evaluation_order, labelled_items

    order = evaluation_order()
    assert len(order) == len(set(order))
    items = [item for name in [*FILES, HELD_OUT] for item in labelled_items(name).values()]
    assert len(items) == 290 + 100 + 134 + 84
    items += single_rows()[1]  # the held-out rated single answers
    assert len(items) == 290 + 100 + 134 + 84 + 160
    assert set(order) == {cut(item.question, answer) for item in items for answer in item.answers}
    assert all(len(q) <= QUESTION_CHARS and len(a) <= ANSWER_CHARS for q, a in order)
    assert max(len(a) for _, a in order) == ANSWER_CHARS  # long answers are cut


_STOPPED_READER = """
import sys, time
from pathlib import Path
import numpy as np
from training.device.reading_cache import ReadingCache

folder, started = Path(sys.argv[1]), Path(sys.argv[2])

def read_cond(question, answer):
    return np.full(3, -1.0), np.ones(4, dtype=np.float32)

def read_uncond(answer):
    started.touch()  # the first answer is (nearly) read: time to stop it
    time.sleep(0.2)
    return np.full(3, -2.0)

texts = [(f"q{n}", f"answer {n}") for n in range(200)]
ReadingCache(folder, half=True).fill(texts, read_cond, read_uncond, "part0")
"""


def test_a_reader_stopped_by_kill_keeps_what_it_read(tmp_path):
    """`kill PID` (SIGTERM) stops a reader as Ctrl-C does: what it read is saved. A shell
    without job control starts a background reader with SIGINT ignored, so `kill` is how
    one is stopped."""
    import signal
    import subprocess
    import sys
    import time

    started = tmp_path / "started"
    reader = subprocess.Popen(
        [sys.executable, "-c", _STOPPED_READER, str(tmp_path / "cache"), str(started)],
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # a few answers more, fewer than a chunk
    reader.send_signal(signal.SIGTERM)
    _, err = reader.communicate(timeout=60)
    assert reader.returncode != 0, err.decode()
    kept = ReadingCache(tmp_path / "cache")
    read = [kept.has(f"q{n}", f"answer {n}") for n in range(200)]
    assert 1 <= sum(read) < CHUNK and read[: sum(read)] == [True] * sum(read)
    assert kept.get("q0", "answer 0").states.tolist() == [1.0] * 4
