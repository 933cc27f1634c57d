"""Judge one item typed by hand: a question, 1-6 answers and an optional reference."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from app.catalog.scenarios import load_catalog
from app.judging.followup import ask
from app.judging.head_decider import reference_note
from app.records import JudgeItem, Judgment, Protocol
from app.ui import state
from app.ui.options import answer_label, answer_range
from app.ui.run_setup import prepare_run
from app.ui.settings import PROTOCOL_LABELS, Settings, measured_rows, model_label
from app.ui.tables import criterion_names, overall_top, rubric_scale
from app.ui.views import engine_stopped_message, show_judgment, show_measured, show_preview
from models.backends.base import Message
from models.foundation.errors import EngineStopped, PocketJudgeError, validation_message

RESULT = "single.result"
CHAT = "single.chat"  # the follow-up conversation about the shown judgment


def form(settings: Settings) -> tuple[str, list[str], str]:
    question = st.text_area(
        "Question", value=state.stored("question", ""), height=100, **state.persisted("question")
    )
    low, high = answer_range(settings.protocol)
    if low == high:
        count = low
    else:
        key = f"answer_count_{settings.protocol}"
        default = min(max(int(state.stored(key, low)), low), high)
        count = int(
            st.number_input(
                "Number of answers",
                min_value=low,
                max_value=high,
                value=default,
                step=1,
                **state.persisted(key),
            )
        )
    answers = []
    columns = st.columns(min(count, 3))
    for number in range(1, count + 1):
        key = f"answer_{number}"
        with columns[(number - 1) % len(columns)]:
            answers.append(
                st.text_area(
                    answer_label(settings.protocol, number),
                    value=state.stored(key, ""),
                    height=160,
                    **state.persisted(key),
                )
            )
    needs_reference = settings.protocol == Protocol.ANCHORED.value
    reference = st.text_area(
        "Reference answer"
        + (" (required for anchored grading)" if needs_reference else " (optional)"),
        value=state.stored("reference", ""),
        height=100,
        **state.persisted("reference"),
    )
    return question, answers, reference


def judge(settings: Settings, question: str, answers: list[str], reference: str) -> None:
    try:
        item = JudgeItem(
            id="manual", question=question, answers=tuple(answers), reference=reference or None
        )
    except ValidationError as exc:
        problems = "; ".join(validation_message(e) for e in exc.errors())
        st.error(f"Check the form: {problems}.")
        return
    prepared = prepare_run(settings, bool(item.reference), "judgment")
    if prepared is None:
        return
    shared, loaded, config = prepared
    if shared.lock.locked():
        st.info("Another tab is judging with this model; this item waits for its turn.")
    preview = st.empty()
    try:
        with shared.use():
            steps = loaded.judge_in_steps(item, config)
            with st.spinner("Judging...", show_time=True):
                judgment = next(steps)
            with preview.container():
                show_preview(judgment, overall_top(settings.rubric, judgment), _coming(item))
            with st.spinner("Scoring each criterion...", show_time=True):
                judgment = next(steps, judgment)  # the whole judgment, where it comes later
        preview.empty()
    except EngineStopped as exc:
        st.error(engine_stopped_message(exc, "judge again to start a fresh engine."))
        return
    except PocketJudgeError as exc:
        st.error(str(exc))
        return
    st.session_state[RESULT] = (judgment, settings.rubric, item)
    st.session_state[CHAT] = []  # a new judgment, a new conversation


def _coming(item: JudgeItem) -> str:
    what = (
        "the criterion scores and the reference's part of the verdict"
        if item.reference
        else "the criterion scores"
    )
    return f"The verdict so far: {what} are being read, and the whole result follows."


def explain(settings: Settings) -> None:
    """Button callback: ask the judge for a critique of the shown judgment."""
    judgment, rubric, item = st.session_state[RESULT]
    prepared = prepare_run(settings, False, "critique")
    if prepared is None:
        return
    shared, loaded, config = prepared
    try:
        with st.spinner("Writing the critique..."), shared.use():
            judgment = loaded.explain(item, judgment, config)
    except PocketJudgeError as exc:
        st.error(str(exc))
        return
    st.session_state[RESULT] = (judgment, rubric, item)


def show_result(result: tuple[Judgment, object, JudgeItem], settings: Settings) -> None:
    judgment, rubric, item = result
    st.divider()
    if item.reference and (note := reference_note(settings.judge_config())) is not None:
        st.caption(f"This judge {note}.")
    show_judgment(
        judgment,
        names=criterion_names(judgment, load_catalog(), rubric),
        scale=rubric_scale(rubric, judgment),
        top=overall_top(rubric, judgment),
        key="single",
        on_explain=lambda: explain(settings),
    )


def followup(settings: Settings) -> None:
    """Questions about the shown judgment, answered by the same loaded model."""
    judgment, _, item = st.session_state[RESULT]
    st.subheader("Ask about this judgment")
    st.caption(
        "Ask why it decided so, or for an example. The judge's reply is its own free text "
        "(plain text here): it may be wrong, and it does not change the verdict."
    )
    history: list[Message] = st.session_state.setdefault(CHAT, [])
    for message in history:
        with st.chat_message(message.role):
            st.text(message.content)
    question = st.chat_input("Why did it decide so? Give an example...", key="followup")
    if not question:
        return
    prepared = prepare_run(settings, False, "follow-up")
    if prepared is None:
        return
    shared, _, _ = prepared
    with st.chat_message("user"):
        st.text(question)
    try:
        with st.spinner("The judge is answering..."), shared.use():
            reply = ask(shared.judge.backend, item, judgment, history, question)
    except (PocketJudgeError, ValueError) as exc:
        st.error(str(exc))
        return
    history += [Message("user", question), Message("assistant", reply)]
    with st.chat_message("assistant"):
        st.text(reply or "(the judge wrote nothing)")


def page() -> None:
    settings = state.current_settings()
    st.title("Judge one item")
    st.caption(
        f"{PROTOCOL_LABELS[settings.protocol]} · scenario `{settings.scenario}` · "
        f"model `{model_label(settings.model)}`. Change these in the sidebar and on the "
        "Scenario and criteria page. Nothing leaves this machine."
    )
    measured = measured_rows(settings.model)
    weak = any(row.no_better_than_length or row.below_coin_flip for row in measured)
    with st.expander("How far to trust this judge", expanded=weak):
        show_measured(measured, model_label(settings.model))
    question, answers, reference = form(settings)
    if st.button("Judge", type="primary", key="judge"):
        judge(settings, question, answers, reference)
    result = st.session_state.get(RESULT)
    if result is not None and len(result) == 3:
        show_result(result, settings)
        followup(settings)


page()
