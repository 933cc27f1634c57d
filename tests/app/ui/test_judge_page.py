"""Judging one item on the tiny real model: the form, the verdict, the charts, the feedback,
and an engine that died under the page."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import app.metrics
from app.catalog.rubrics import RUBRICS_DIR, load_rubric
from app.records import Judgment, Protocol, Status
from app.ui import model_cache
from app.ui.state import settings_from

QUESTION = "What is the capital of France?"
REFERENCE = "Paris is the capital of France."


def fill(at: AppTest, answers: Sequence[str], reference: str = "") -> AppTest:
    at.text_area(key="question").input(QUESTION)
    for number, answer in enumerate(answers, start=1):
        at.text_area(key=f"answer_{number}").input(answer)
    at.text_area(key="reference").input(reference)
    return at.run()


def judge(at: AppTest) -> Judgment:
    at.button(key="judge").click().run()
    assert not at.exception, at.exception
    judgment, *_ = at.session_state["single.result"]
    return judgment


@pytest.fixture
def fake_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip loading BERTScore (seconds); the real metrics run in the slow test below."""

    def metrics(answers: Sequence[str], reference: str) -> list[dict[str, float]]:
        return [
            {"rouge1": 0.5, "rouge2": 0.2, "rougeL": 0.5, "bleu": 0.1, "bertscore_f1": 0.8}
            for _ in answers
        ]

    monkeypatch.setattr(app.metrics, "reference_metrics", metrics)
    monkeypatch.setattr(app.metrics, "preload", lambda **_: None)


def test_empty_answers_are_refused_before_loading_a_model(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app()
    at.button(key="judge").click().run()
    assert not at.exception
    assert "question is empty" in at.error[0].value or "answer 1 is empty" in at.error[0].value
    assert "single.result" not in at.session_state


def test_pairwise_with_reference_shows_verdict_confidence_and_three_charts(
    make_app: Callable[..., AppTest], fake_metrics: None
) -> None:
    at = make_app()
    at.sidebar.radio(key="protocol").set_value("pairwise").run()
    assert at.text_area(key="answer_2").label == "Answer B"
    fill(at, ["Paris.", "Lyon."], REFERENCE)
    judgment = judge(at)
    assert judgment.status is Status.OK  # the grammar makes the tiny model's output parse
    assert judgment.protocol is Protocol.PAIRWISE and judgment.swapped
    assert judgment.criteria == ("accuracy", "clarity")
    assert at.subheader[0].value.startswith("Verdict: ")
    labels = [metric.label for metric in at.metric]
    assert labels[:3] == ["Answer A", "Answer B", "Confidence"]
    assert "Position consistency" in labels
    charts = at.get("plotly_chart")
    assert len(charts) == 3  # bars, radar, reference metrics
    # Score mode writes no critique; "Explain" asks for one, with the verdict fixed.
    assert judgment.mode == "score" and judgment.feedback is None
    at.button(key="single_explain").click().run()
    assert not at.exception, at.exception
    explained, *_ = at.session_state["single.result"]
    assert explained.winner == judgment.winner and explained.leaning == judgment.leaning
    if explained.feedback:
        assert at.text[0].value == explained.feedback
        at.toggle(key="single_feedback_markdown").set_value(True).run()
        assert not at.exception and not at.text
    else:  # the tiny model may write an empty string: said so, never shown as a critique
        assert "wrote no critique" in explained.feedback_note
        assert any("wrote no critique" in info.value for info in at.info)


def test_no_reference_no_metrics_chart(
    make_app: Callable[..., AppTest], fake_metrics: None
) -> None:
    at = make_app()
    fill(at, ["Paris."])
    judgment = judge(at)
    assert judgment.protocol is Protocol.SINGLE and judgment.reference_metrics is None
    assert at.subheader[0].value == "Grade"
    assert at.metric[0].label == "Answer 1" and at.metric[0].value.endswith("/ 10")
    assert len(at.get("plotly_chart")) == 2


def test_multi_answer_ranking(make_app: Callable[..., AppTest]) -> None:
    at = make_app()
    at.sidebar.radio(key="protocol").set_value("multi").run()
    at.number_input(key="answer_count_multi").set_value(3).run()
    fill(at, ["Paris.", "Lyon.", "Nice."])
    judgment = judge(at)
    assert judgment.protocol is Protocol.MULTI and judgment.ranking is not None
    assert at.subheader[0].value.startswith("Ranking: Answer ")


def test_anchored_needs_a_reference(make_app: Callable[..., AppTest]) -> None:
    at = make_app()
    at.sidebar.radio(key="protocol").set_value("anchored").run()
    fill(at, ["Paris."])
    judgment = judge(at)
    assert judgment.status is Status.ERROR
    assert "needs a 'reference'" in at.error[0].value


def test_the_form_survives_a_change_of_page(make_app: Callable[..., AppTest]) -> None:
    at = make_app()
    fill(at, ["Paris."], REFERENCE)
    at.switch_page("app_pages/about.py").run()
    at.switch_page("app_pages/judge.py").run()
    assert at.text_area(key="question").value == QUESTION
    assert at.text_area(key="answer_1").value == "Paris."
    assert at.text_area(key="reference").value == REFERENCE


@pytest.mark.slow
def test_real_reference_metrics(make_app: Callable[..., AppTest]) -> None:
    """Loads BERTScore's model (about 10 s on 2 CPU cores)."""
    at = make_app()
    at.sidebar.radio(key="protocol").set_value("pairwise").run()
    fill(at, ["Paris is the capital of France.", "Lyon."], REFERENCE)
    judgment = judge(at)
    assert judgment.reference_metrics is not None
    assert judgment.reference_metrics[0]["rouge1"] == pytest.approx(1.0)
    assert (
        judgment.reference_metrics[0]["bertscore_f1"]
        > judgment.reference_metrics[1]["bertscore_f1"]
    )
    assert len(at.get("plotly_chart")) == 3


def test_a_rubric_judgment_uses_its_names_and_scale(
    make_app: Callable[..., AppTest], fake_metrics: None
) -> None:
    rubric = load_rubric(RUBRICS_DIR / "vqa_animal_identification.yaml")
    at = make_app()
    at.session_state["cfg.criteria_mode"] = "rubric"
    at.session_state["cfg.rubric"] = rubric
    fill(at, ["A red fox in the snow."], "A red fox (Vulpes vulpes) standing in snow.")
    judgment = judge(at)
    assert judgment.status is Status.OK, judgment.error
    assert judgment.scenario == f"rubric:{rubric.id}"
    assert at.metric[0].value.endswith("/ 15")  # a sum rubric: 2 + 3 + 5 + 2 + 3 points
    bars = at.get("plotly_chart")[0].proto.spec
    assert rubric.criteria[0].name in bars


def test_an_uncertain_verdict_is_shown_as_uncertain_with_its_leaning(
    make_app: Callable[..., AppTest],
) -> None:
    at = make_app()
    at.sidebar.radio(key="protocol").set_value("pairwise")
    at.sidebar.number_input(key="uncertain_below").set_value(0.99).run()  # never that sure
    fill(at, ["Paris.", "Lyon."])
    judgment = judge(at)
    assert judgment.winner == "uncertain" and judgment.leaning in ("A", "B", "tie")
    headline = at.subheader[0].value
    assert headline.startswith("Verdict: Uncertain (leans to ")
    assert "is better" not in headline
    assert any("not a decision" in caption.value for caption in at.caption)


def test_a_detected_scenario_is_shown_with_its_top_guesses(
    make_app: Callable[..., AppTest],
) -> None:
    """Scenario "auto" and no scenario in the item: the classifier's pick and two more
    guesses, with probabilities, and where to override it."""
    at = make_app()
    at.text_area(key="question").input("Write a Python function that reverses a linked list.")
    at.text_area(key="answer_1").input("def reverse(head): ...")
    judgment = judge(at.run())
    assert judgment.scenario == "code_generation"
    assert len(judgment.scenario_guesses) == 3
    note = next(c.value for c in at.caption if c.value.startswith("Scenario detected:"))
    assert "**Code generation (" in note and "also possible:" in note
    assert "Scenario and criteria page to override" in note


def test_a_follow_up_question_is_answered_by_the_same_model(
    make_app: Callable[..., AppTest],
) -> None:
    """After a judgment, a question in the chat box gets the loaded model's reply, shown as
    plain text; the conversation starts again with the next judgment."""
    at = make_app()
    fill(at, ["Paris."])
    judge(at)
    assert at.subheader[-1].value == "Ask about this judgment"
    at.chat_input(key="followup").set_value("Why this grade?").run()
    assert not at.exception, at.exception
    history = at.session_state["single.chat"]
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[0].content == "Why this grade?"
    assert [m.name for m in at.chat_message] == ["user", "assistant"]
    at.chat_input(key="followup").set_value("Give an example.").run()
    assert len(at.session_state["single.chat"]) == 4
    judge(at)
    assert at.session_state["single.chat"] == []


def test_a_second_judge_decides_the_unsure_verdicts_and_the_result_says_so(
    make_app: Callable[..., AppTest], app_env: Path, tmp_path: Path
) -> None:
    """A second judge (another load of the tiny model) with a threshold above every
    confidence: it decides, the first judge stays loaded, and the result names both."""
    second = tmp_path / "second.gguf"
    second.symlink_to(app_env)
    at = make_app()
    at.session_state["cfg.added_models"] = (str(second),)  # as "Add a GGUF file" does
    at.run()
    at.sidebar.selectbox(key="cascade_model").set_value(str(second)).run()
    at.sidebar.slider(key="cascade_below").set_value(1.0).run()
    at.sidebar.radio(key="protocol").set_value("pairwise").run()
    fill(at, ["Paris.", "Lyon."])
    judgment = judge(at)
    assert judgment.cascade["decided_by"] == "second"
    assert judgment.model == "second.gguf"
    note = next(c.value for c in at.caption if c.value.startswith("Decided by the second judge"))
    assert f"`{app_env.name}`, was unsure" in note
    at.sidebar.slider(key="cascade_below").set_value(0.0).run()
    kept = judge(at)
    assert kept.cascade == {"decided_by": "first", "below": 0.0}
    assert kept.model == app_env.name


def test_a_judgment_whose_engine_died_says_so_and_the_next_one_starts_a_fresh_engine(
    make_app: Callable[..., AppTest],
) -> None:
    """The model runs in an engine worker: its death (SIGSEGV, as a native crash) leaves
    the page up with the signal named, and judging again works on a fresh worker."""
    at = make_app()
    at.sidebar.radio(key="protocol").set_value("pairwise").run()
    fill(at, ["Paris.", "Lyon."])
    engine = model_cache.shared_judge(settings_from(at.session_state)).judge.backend
    first = engine.pid
    assert first is not None
    os.kill(first, signal.SIGSEGV)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{first}") and time.monotonic() < deadline:
        with open(f"/proc/{first}/stat") as stat:  # a zombie until the app reaps it
            if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                break
        time.sleep(0.05)
    at.button(key="judge").click().run()
    assert not at.exception, at.exception
    message = at.error[0].value
    assert message.startswith("The judge engine stopped: it was stopped by SIGSEGV"), message
    assert "The app is still running: judge again to start a fresh engine." in message
    assert "single.result" not in at.session_state
    judgment = judge(at)
    assert judgment.status is Status.OK and engine.pid not in (None, first)
