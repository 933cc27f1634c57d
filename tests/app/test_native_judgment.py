"""Judging with native templates (JudgeLM, PandaLM, Auto-J, Prometheus, EasyJudge).

Through the service with the scripted backend: score mode falls back to generate
mode (CLI, app and API alike, since they all call the service), both orders of a
pair map back to the input's labels, grades keep the format's scale, a reply
that cannot be read is unparsed with its raw text. Then end to end through the
real llama.cpp backend on the tiny model, and through the CLI.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from app.catalog.criteria_resolution import CriteriaChoice, resolve
from app.catalog.scenarios import load_catalog
from app.formats.native_parsers import judgelm_pairwise, pandalm_pairwise
from app.formats.prompts import get_template
from app.judging.item_checks import row_problem
from app.judging.prompt_fitting import prompt_input
from app.judging.service import JudgeService
from app.judging.settings import config_of
from app.records import JudgeItem, Judgment, Protocol, Status
from app.reports.leaderboard import grade_scale
from models.backends.base import Generation, SamplingParams
from tests.support.fake_backend import FakeBackend
from tests.support.replies import parses

CATALOG = load_catalog()
# Score mode is what the CLI and the app ask for by default; scenario detection is
# tested on its own (here a row without a scenario is judged on the default one).
Config = partial(config_of, mode="score", detect_scenario=False, uncertain_below=0.0)

QUESTION = "How do I reverse a list in Python?"
GOOD = "Use items.reverse() in place, or items[::-1] for a reversed copy."
BAD = "Call reversed(items); it returns a new list."
PAIR = JudgeItem(id="p1", question=QUESTION, answers=(GOOD, BAD))
ONE = JudgeItem(id="s1", question=QUESTION, answers=(GOOD,))
ANCHORED = JudgeItem(id="a1", question=QUESTION, answers=(BAD,), reference=GOOD)
THREE = JudgeItem(id="m1", question=QUESTION, answers=(BAD, GOOD, "Sort it backwards."))


def judge(item: JudgeItem, *replies: str | Generation, **config) -> tuple[Judgment, FakeBackend]:
    backend = FakeBackend(replies)
    judgment = JudgeService(backend, "fake-judge", CATALOG).judge(item, Config(**config))
    assert not backend.replies, "every queued reply is used"
    return judgment, backend


# --------------------------------------------------------------------------- score mode


@pytest.mark.parametrize("mode", ["score", "generate"])
def test_a_native_template_judges_in_generate_mode_whatever_mode_was_asked(mode: str) -> None:
    judgment, backend = judge(PAIR, "8 6\nThe first is right.", "5 9\nThe second is right.",
                              template="judgelm", mode=mode)  # fmt: skip
    assert judgment.status is Status.OK, judgment.error
    assert judgment.mode == "generate"
    assert judgment.winner == "A" and judgment.consistent  # swapped, answer 1 got the 9
    for call in backend.calls:
        assert call.output is not None and call.output.json_schema is None  # free text
        assert call.output.value_rules is None
    assert judgment.feedback == "The first is right."


def test_score_and_generate_give_the_same_judgment() -> None:
    replies = ("1\n\n### Reason: Response 1 is right.", "2\n\n### Reason: Response 2 is right.")
    scored = judge(PAIR, *replies, template="pandalm", mode="score")[0]
    generated = judge(PAIR, *replies, template="pandalm", mode="generate")[0]
    assert scored == generated


def test_the_templates_stop_strings_reach_the_backend() -> None:
    sampling = SamplingParams(max_tokens=300, stop=("</s>",))
    _, backend = judge(PAIR, "1\n\n### Reason: ok", "2\n\n### Reason: ok", template="pandalm",
                       sampling=sampling)  # fmt: skip
    for call in backend.calls:
        assert call.params.stop == ("</s>", "### Reference")
        assert call.params.max_tokens == 300


def test_json_templates_keep_score_mode() -> None:
    config = Config(template="pocketjudge")
    from app.formats.prompts import get_template
    from app.judging.settled_run import native_generate

    assert native_generate(config, get_template("pocketjudge")) is config
    assert native_generate(config, None) is config  # unknown: each row's error says so


# --------------------------------------------------------------------------- pairs and swap


def test_both_orders_agree_after_mapping_the_labels_back() -> None:
    """Original order A=GOOD, B=BAD; swapped, A=BAD, B=GOOD. A judge that prefers GOOD
    writes "8 6" then "6 8": A both times, in the input's labels."""
    judgment, backend = judge(PAIR, "8 6\nfirst", "6 8\nsecond", template="judgelm")
    assert judgment.winner == "A" and judgment.consistent is True
    assert judgment.order_winners == ("A", "A")
    assert [a.overall for a in judgment.answers] == [8.0, 6.0]
    assert judgment.overall_scale == (1, 10)
    assert judgment.confidence == 1.0 and judgment.verdict_probs == {"A": 1, "B": 0, "tie": 0}
    assert judgment.swapped and judgment.raw_output == "8 6\nfirst"
    assert judgment.raw_output_swapped == "6 8\nsecond"
    first, second = (call.user for call in backend.calls)
    assert first.index(GOOD) < first.index(BAD) and second.index(BAD) < second.index(GOOD)


def test_a_position_biased_judge_gets_a_flagged_tie() -> None:
    judgment, _ = judge(PAIR, "8 6\nfirst wins", "8 6\nfirst wins again", template="judgelm")
    assert judgment.order_winners == ("A", "B")
    assert judgment.consistent is False
    assert judgment.winner == "tie" and judgment.leaning == "tie"
    assert [a.overall for a in judgment.answers] == [7.0, 7.0]  # each answer's mean


def test_position_bias_is_uncertain_with_a_threshold() -> None:
    judgment, _ = judge(PAIR, "1", "1", template="pandalm", uncertain_below=0.5)
    assert judgment.winner == "uncertain" and judgment.uncertain is True
    assert judgment.verdict_probs == {"A": 0.5, "B": 0.5, "tie": 0.0}


@pytest.mark.parametrize(
    ("template", "first", "second", "winner"),
    [
        ("pandalm", "2\n\n### Reason: r", "1\n\n### Reason: r", "B"),
        ("autoj", "So, the final decision is Response 2.", "So, the final decision is Response 1.",
         "B"),
        ("prometheus", "Feedback: B is right. [RESULT] B", "Feedback: A is right. [RESULT] A", "B"),
        ("autoj", "So, the final decision is Tie.", "So, the final decision is Tie.", "tie"),
    ],
)  # fmt: skip
def test_verdict_formats_map_the_swapped_order_back(
    template: str, first: str, second: str, winner: str
) -> None:
    judgment, _ = judge(PAIR, first, second, template=template)
    assert judgment.status is Status.OK, judgment.error
    assert judgment.winner == winner and judgment.consistent is True
    assert judgment.answers == ()  # verdict-only formats grade no answer
    assert judgment.overall_scale is None


def test_no_swap_judges_one_order() -> None:
    judgment, backend = judge(PAIR, "So, the final decision is Response 1.", template="autoj",
                              swap=False)  # fmt: skip
    assert len(backend.calls) == 1
    assert judgment.winner == "A" and not judgment.swapped and judgment.consistent is None


def test_easyjudge_dimensions_become_the_criterion_scores() -> None:
    reply = (
        "@@@{response A: Scores per dimension: ['Accuracy': 9, 'Clarity': 7, "
        "'Overall Score': 8]}@@@{response B: Scores per dimension: ['Accuracy': 3, "
        "'Clarity': 8, 'Overall Score': 5]}###Final Result: {A}&&&Detailed Evaluation "
        "Feedback: {A is right.}***"
    )
    judgment, backend = judge(PAIR, reply, template="easyjudge", swap=False,
                              choice=CriteriaChoice(criteria=("accuracy", "clarity")))  # fmt: skip
    assert judgment.winner == "A"
    assert judgment.answers[0].criteria == {"accuracy": 9, "clarity": 7}
    assert judgment.answers[1].overall == 5
    assert judgment.criteria == ("accuracy", "clarity")
    assert judgment.feedback == "A is right."
    assert "[Criteria start]\n1. Accuracy: " in backend.calls[0].system


def test_easyjudge_dimensions_that_name_other_criteria_are_not_kept() -> None:
    reply = (
        "@@@Dimension Scores: {'Style': 8, 'Overall Score': 8}###Overall Score: 8"
        "&&&Detailed Evaluation Feedback: Fine.***"
    )
    judgment, _ = judge(ONE, reply, template="easyjudge",
                        choice=CriteriaChoice(criteria=("accuracy", "clarity")))  # fmt: skip
    assert judgment.answers[0].criteria == {} and judgment.answers[0].overall == 8


# --------------------------------------------------------------------------- grades and scales


def test_prometheus_grades_stay_on_one_to_five() -> None:
    judgment, backend = judge(ONE, "Feedback: Correct and short. [RESULT] 4", template="prometheus")
    assert judgment.status is Status.OK
    assert judgment.answers[0].overall == 4.0 and judgment.answers[0].criteria == {}
    assert judgment.overall_scale == (1, 5)
    assert grade_scale([judgment]) == (1, 5)
    assert judgment.feedback == "Correct and short."
    assert judgment.confidence is None  # free text: no probabilities
    assert judgment.scenario == "default" and judgment.criteria  # the rubric came from them
    assert "###Score Rubrics:\n[Accuracy: " in backend.calls[0].user


def test_autoj_single_grades_on_one_to_ten_by_its_own_criteria() -> None:
    judgment, backend = judge(ONE, "Clear and correct.\nRating: [[9]]", template="autoj")
    assert judgment.answers[0].overall == 9.0 and judgment.overall_scale == (1, 10)
    assert judgment.scenario is None and judgment.criteria == ()
    assert [m.role for m in backend.calls[0].messages] == ["user"]  # no system message


def test_judgelm_anchored_grades_the_answer_against_the_reference() -> None:
    judgment, backend = judge(ANCHORED, "10 4\nIt is wrong about reversed().", template="judgelm",
                              protocol=Protocol.ANCHORED)  # fmt: skip
    assert judgment.protocol is Protocol.ANCHORED
    assert judgment.answers[0].overall == 4.0
    user = backend.calls[0].user
    assert user.index(GOOD) < user.index("[The End of Assistant 1's Answer]") < user.index(BAD)


def test_judgelm_ranks_several_answers_from_their_scores() -> None:
    judgment, _ = judge(THREE, "4 9 6\nThe second is best.", template="judgelm")
    assert judgment.ranking == (2, 3, 1)
    assert [a.overall for a in judgment.answers] == [4.0, 9.0, 6.0]
    assert judgment.confidence is None


# --------------------------------------------------------------------------- failures


def test_an_unreadable_order_leaves_the_pair_unparsed_with_both_raw_texts() -> None:
    judgment, _ = judge(PAIR, "So, the final decision is Response 1.", "Both are fine.",
                        template="autoj")  # fmt: skip
    assert judgment.status is Status.UNPARSED
    assert judgment.error.startswith("swapped order: no final decision")
    assert judgment.winner is None and judgment.answers == ()
    assert judgment.raw_output_swapped == "Both are fine."


def test_an_out_of_range_grade_is_unparsed() -> None:
    judgment, _ = judge(ONE, "Feedback: Great. [RESULT] 7", template="prometheus")
    assert judgment.status is Status.UNPARSED
    assert "outside 1-5" in judgment.error
    assert judgment.raw_output == "Feedback: Great. [RESULT] 7"


def test_a_reply_cut_by_max_tokens_says_so() -> None:
    cut = Generation(text="Feedback: The response is", finish_reason="length")
    judgment, _ = judge(ONE, cut, template="prometheus")
    assert judgment.status is Status.UNPARSED
    assert "raise max_tokens" in judgment.error


def test_judgelm_has_no_reference_free_single_grading() -> None:
    judgment, _ = judge(ONE, template="judgelm")
    assert judgment.status is Status.ERROR
    assert "valid: anchored, multi, pairwise" in judgment.error


def test_a_protocol_the_format_lacks_is_an_error_row_naming_the_valid_ones() -> None:
    judgment, backend = judge(ONE, template="pandalm")
    assert judgment.status is Status.ERROR and not backend.calls
    assert "protocol of template 'pandalm'" in judgment.error
    assert "valid: pairwise" in judgment.error
    assert row_problem(ONE, Config(template="pandalm"), CATALOG) == judgment.error
    assert row_problem(PAIR, Config(template="pandalm"), CATALOG) is None


# --------------------------------------------------------------------------- real model


def test_the_tiny_model_judges_with_a_native_template(
    tiny_gguf_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through llama.cpp: the template's prompt is what reaches the model, as free text
    (no grammar); the tiny model is random, so each row is ok or unparsed with its text."""
    from app.api import load_judge

    item = JudgeItem(id="t1", question=QUESTION, answers=(GOOD, BAD), reference=GOOD)
    sampling = SamplingParams(max_tokens=24, seed=1)
    with load_judge(str(tiny_gguf_model), threads=1, n_ctx=2048, template="judgelm",
                    mode="score", detect_scenario=False, sampling=sampling) as judge_:  # fmt: skip
        backend = judge_.loaded.backend
        seen = []
        generate = backend.generate

        def spy(messages, params, output=None):
            seen.append((list(messages), params, output))
            return generate(messages, params, output)

        monkeypatch.setattr(backend, "generate", spy)
        judgment = judge_.judge(item)
    assert judgment.mode == "generate" and judgment.template == "judgelm"
    assert judgment.raw_output and judgment.raw_output_swapped is not None
    # The tiny model writes random text: the status must follow what its two replies hold.
    readable = [parses(judgelm_pairwise, raw) for raw in (judgment.raw_output,
                                                          judgment.raw_output_swapped)]  # fmt: skip
    if all(readable):
        assert judgment.status is Status.OK, judgment.error
        assert judgment.winner in ("A", "B", "tie")
    else:
        assert judgment.status is Status.UNPARSED, judgment
        assert judgment.error and judgment.winner is None
    resolved = resolve(CriteriaChoice(), item, CATALOG)
    template = get_template("judgelm")
    expected = [
        template.render(prompt_input(Protocol.PAIRWISE, QUESTION, answers, GOOD, resolved, None))
        for answers in ([GOOD, BAD], [BAD, GOOD])
    ]
    assert [messages for messages, _, _ in seen] == expected
    assert all(output.json_schema is None for _, _, output in seen)
    assert "[The Start of Assistant 1's Answer]" in expected[0][0].content


def test_the_cli_says_it_generates_and_records_it(
    tiny_gguf_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.cli import main

    source = tmp_path / "pairs.jsonl"
    source.write_text(json.dumps({"id": "c1", "question": QUESTION, "answers": [GOOD, BAD],
                                  "scenario": "default"}) + "\n", encoding="utf-8")  # fmt: skip
    out = tmp_path / "out.jsonl"
    code = main(["judge", str(source), "--out", str(out), "--template", "pandalm",
                 "--max-tokens", "16", "--model", str(tiny_gguf_model), "--threads", "1",
                 "--quiet", "--n-ctx", "2048"])  # fmt: skip
    assert "template 'pandalm' writes free text" in capsys.readouterr().err
    (judgment,) = (Judgment.model_validate_json(line) for line in out.read_text().splitlines())
    assert judgment.mode == "generate" and judgment.template == "pandalm"
    assert judgment.raw_output  # the free text is recorded, parsed or not
    # the status follows what the two replies hold; exit 0 for a parsed row, 1 for unparsed
    raws = (judgment.raw_output, judgment.raw_output_swapped)
    if all(parses(pandalm_pairwise, raw or "") for raw in raws):
        assert judgment.status is Status.OK, judgment.error
        assert code == 0 and judgment.winner in ("A", "B", "tie")
    else:
        assert judgment.status is Status.UNPARSED, judgment
        assert judgment.error and code == 1


def test_replace_keeps_the_native_fallback() -> None:
    """The API's per-call changes (`judge(item, mode="score")`) go through the same path."""
    backend = FakeBackend(["Feedback: ok [RESULT] 5"])
    service = JudgeService(backend, "fake-judge", CATALOG)
    config = replace(Config(template="prometheus"), mode="score")
    assert service.judge(ONE, config).mode == "generate"


def test_the_apps_settings_take_the_same_path() -> None:
    """The app asks for score mode with critiques by default; a native template still
    generates once per order, its explanation the feedback, and no critique call follows."""
    from app.judging.settings import SettingsLayer
    from app.ui.settings import Settings

    settings = Settings(model="judge.gguf", judging=SettingsLayer(template="judgelm"),
                        mode="score", feedback=True, scenario="default")  # fmt: skip
    config = settings.judge_config()
    assert (config.mode, config.feedback) == ("score", True)
    backend = FakeBackend(["8 6\nThe first is right.", "6 8\nThe first is right."])
    judgment = JudgeService(backend, "fake-judge", CATALOG).judge(PAIR, config)
    assert judgment.status is Status.OK and judgment.mode == "generate"
    assert len(backend.calls) == 2 and judgment.feedback == "The first is right."


def test_the_csv_names_the_scale_of_native_grades(tmp_path: Path) -> None:
    from app.io.writer import to_csv

    graded, _ = judge(ONE, "Feedback: Fine. [RESULT] 4", template="prometheus")
    out = tmp_path / "out.csv"
    to_csv([graded], out)
    header, row = out.read_text(encoding="utf-8").splitlines()[:2]
    columns = header.split(",")
    assert columns.index("overall_scale") == columns.index("overall_1") - 1
    assert dict(zip(columns, row.split(",")))["overall_scale"] == "1-5"


def test_the_templates_command_lists_the_reply_formats(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli import main

    assert main(["templates"]) == 0
    listed = {row["name"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    assert listed["judgelm"]["reply"] == "judgelm"
    assert listed["judgelm"]["protocols"] == "pairwise, multi, anchored"
    assert listed["pocketjudge"]["reply"] == "pocketjudge"
