"""The judgment view on its own: failures show the raw output, model text is never HTML."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def unparsed_view() -> None:
    from app.records import Judgment, Protocol, Status
    from app.ui.views import show_judgment

    show_judgment(
        Judgment(
            id="x",
            protocol=Protocol.SINGLE,
            status=Status.UNPARSED,
            error="no overall score",
            raw_output="{oops",
        )
    )


def feedback_view() -> None:
    from app.records import AnswerScores, Judgment, Protocol, Status
    from app.ui.views import show_judgment

    show_judgment(
        Judgment(
            id="x",
            protocol=Protocol.SINGLE,
            status=Status.OK,
            answers=(AnswerScores(criteria={"accuracy": 7.0}, overall=7.0),),
            criteria=("accuracy",),
            feedback="<script>alert(1)</script> **fine** ![t](http://example.com/x.png)",
        ),
        top=10,
        key="v",
    )


def test_unparsed_judgment_shows_why_and_the_raw_output() -> None:
    at = AppTest.from_function(unparsed_view).run()
    assert not at.exception
    assert "could not be read" in at.warning[0].value and "no overall score" in at.warning[0].value
    assert at.code[0].value == "{oops"
    assert not at.get("plotly_chart")


def test_feedback_is_plain_text_or_markdown_without_html() -> None:
    at = AppTest.from_function(feedback_view).run()
    assert at.subheader[0].value == "Grade" and at.metric[0].value == "7 / 10"
    assert at.text[0].value.startswith("<script>")  # shown as text, not run
    at.toggle(key="v_feedback_markdown").set_value(True).run()
    feedback = next(m for m in at.markdown if "fine" in m.value)
    assert not feedback.allow_html
    assert "[image: t]" in feedback.value and "http://example.com" not in feedback.value


def test_scenario_note_names_the_pick_or_says_it_is_unsure() -> None:
    from app.ui.views import scenario_note

    names = {"code_generation": "Code generation", "default": "General"}
    guesses = {"code_generation": 0.62, "code_correction": 0.2, "math_reasoning": 0.05}
    sure = scenario_note("code_generation", guesses, names)
    assert sure.startswith("Scenario detected: **Code generation (62%)**; also possible: ")
    assert "code_correction (20%)" in sure  # an id without a name is shown as the id
    unsure = scenario_note("default", {"code_generation": 0.15, "math_reasoning": 0.1}, names)
    assert unsure.startswith("Scenario: not sure (best guess Code generation (15%)")
    assert "criteria of **General** were used" in unsure


def reference_only_view() -> None:
    from app.records import Judgment, Protocol, Status
    from app.ui.views import show_judgment

    show_judgment(
        Judgment(
            id="x",
            protocol=Protocol.PAIRWISE,
            status=Status.OK,
            winner="A",
            leaning="A",
            reference_metrics=({"rougeL": 0.5, "bleu": 0.2}, {"rougeL": 0.1, "bleu": 0.0}),
        ),
        key="r",
    )


def test_the_reference_metrics_chart_is_drawn_without_criterion_scores() -> None:
    at = AppTest.from_function(reference_only_view).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and "reference" in charts[0].proto.spec.lower()


def test_the_criteria_note_says_whether_they_agree_with_the_verdict() -> None:
    from app.records import Judgment, Protocol, Status
    from app.ui.views import DISAGREEMENT, criteria_agreement_note

    base = Judgment(id="x", protocol=Protocol.PAIRWISE, status=Status.OK, winner="A", leaning="A")
    agree = criteria_agreement_note(base.model_copy(update={"criteria_verdict": "A"}))
    assert agree.endswith("they favour A too.")
    disagree = criteria_agreement_note(base.model_copy(update={"criteria_verdict": "B"}))
    assert "they favour B while the verdict leans to A" in disagree and DISAGREEMENT in disagree
    failed = criteria_agreement_note(base.model_copy(update={"criteria_note": "no probabilities"}))
    assert failed == "No criterion scores: no probabilities."
    assert criteria_agreement_note(base) is None  # a judge whose reply holds the scores
    anchored = base.model_copy(
        update={"criteria_verdict": "A", "verdict_parts": {"reference": 0.4, "score": 0.9}}
    )
    # saved before the reference's share was split by signal: no signal is named
    assert "the verdict adds" not in criteria_agreement_note(anchored)

    def with_parts(**parts: float) -> Judgment:
        return anchored.model_copy(update={"verdict_parts": parts})

    likelier = with_parts(reference_likelihood=0.2, reference=0.4, score=0.9)
    assert "adds how likely the reference is after each answer" in criteria_agreement_note(likelier)
    checked = with_parts(
        reference_likelihood=0.2, reference_words=0.1, reference_check=0.3, reference=0.6, score=0.9
    )
    said = criteria_agreement_note(checked)
    assert "against the reference and how much of what the reference states each" in said
    assert "after each answer, the judge's check" in said
    assert "apart from the verdict's head" in agree  # no reference read into the verdict
    assert "how likely the reference" not in agree


def test_the_rubric_grade_note_names_what_the_grade_combines_and_its_record() -> None:
    from app.records import AnswerScores, Judgment, Protocol, Status
    from app.ui.rubric_grade_note import rubric_grade_note

    scores = AnswerScores(criteria={"rubric": 3.6}, overall=6, expected_criteria={"rubric": 3.6})
    judged = Judgment(id="x", protocol=Protocol.SINGLE, status=Status.OK, answers=(scores,))
    assert rubric_grade_note(judged) is None  # the rubric read alone: nothing to say
    parts = {
        "rubric_read": 4.1,
        "rubric_grade_pearson": 0.436,
        "rubric_grade_level": 2.2,
        "rubric_grade_check": 0.4,
        "rubric_grade_length": 1.5,
        "rubric_grade_reference_words": 0.6,
    }
    note = rubric_grade_note(judged.model_copy(update={"verdict_parts": parts}))
    assert "read of the rubric (4.10)" in note
    assert "check of the answer against the reference, the answer's length" in note
    assert "and how much of what the reference states the answer states." in note
    assert "own grade" not in note  # a signal the combination does not weigh is not named
    assert "0.44 (Pearson)" in note
    assert "outside the range" not in note
    held = rubric_grade_note(
        judged.model_copy(update={"verdict_parts": {**parts, "rubric_grade_held": 2.0}})
    )
    assert "Here 2 of its signals lie outside the range the grade was fitted on" in held
    assert "were held at their edges: trust it less." in held


def test_the_judges_own_answer_is_shown_with_what_it_did_to_the_verdict() -> None:
    from app.ui.views import head_note, own_answer_note

    own = {"text": "7 times 8 equals 56.", "mean_logprob": -0.06, "tokens": 9, "finished": True}
    shown = own_answer_note(own, {"states": 0.4, "score": 0.4})
    assert '"7 times 8 equals 56."' in shown and "-0.06" in shown
    assert "does not weigh this answer: shown, not counted" in shown
    weighed = own_answer_note(own, {"self_reference_words_computed_difference": 0.0, "score": 0.4})
    assert "moved nothing" in weighed
    turned = {"states": 0.5, "self_reference_check": -1.5, "own_answer": -1.5, "score": -1.0}
    said = own_answer_note(own, turned)
    assert "moved the score 1.50 toward B" in said
    assert "**The judge's own answer decided this verdict**: without it, A." in said
    cut = own_answer_note(own | {"finished": False}, {"own_answer": 0.2, "score": 0.9})
    assert "cut at its length cap" in cut and "decided" not in cut
    computed = own_answer_note(own | {"text": "56", "computed": True}, turned)
    assert 'program it wrote, run in the jail, and read each answer against its result: "56"' in (
        computed
    )
    assert "moved the score 1.50 toward B" in computed
    # the head's note names it once, by its sum
    note = head_note(turned)
    assert "agrees with the judge's own answer (no reference given): 1.50 toward B" in note
    assert "self_reference" not in note
