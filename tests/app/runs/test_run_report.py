"""The HTML reports of a stored run and of two runs compared (app/runs/report.py).

Fast tests read the HTML of runs recorded in a real run store; one slow test opens both
reports in headless Chromium, offline, and checks that every chart draws.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.records import AnswerScores, JudgeItem, Judgment, Protocol, Status
from app.runs.compare import compare_runs
from app.runs.report import comparison_report, run_report
from app.runs.store import RunInfo, RunStart, RunStore, StoredRow

INPUT_HASH = "9f2c4e81a0b7d35c6e1f28a94b0c7d13e5f6a2b8c9d0e1f2a3b4c5d6e7f8a9b0"
PLOTLY_BANNER = "* plotly.js v"
XSS = "<script>alert(1)</script>"
CRITERIA = ("accuracy", "helpfulness", "clarity")
# scenario, question, answer models (A, B)
ITEMS = (
    ("verifying_fact", "Is the Great Wall of China visible from space?",
     ("llama-3-8b", "mistral-7b")),
    ("code_generation", "Write a Python function that reverses a string.",
     ("qwen2-7b", "llama-3-8b")),
    ("text_summarization", "Summarize: the meeting moved to Friday because the room was booked.",
     ("mistral-7b", "qwen2-7b")),
    ("math_reasoning", "What is 12 * 7? Show the steps.", ("llama-3-8b", "qwen2-7b")),
    ("explaining_code", f"Why does {XSS} in a comment box pop up an alert?",
     ("mistral-7b", "llama-3-8b")),
    ("writing_email", "Write a short email declining a meeting invitation politely.",
     ("qwen2-7b", "mistral-7b")),
    ("seeking_advice", "How should I prepare for a job interview next week?",
     ("llama-3-8b", "mistral-7b")),
    ("creative_writing", "Write a two-line poem about rain.", ("qwen2-7b", "llama-3-8b")),
)  # fmt: skip
# the verdict of each row in run A and in run B ("unparsed" / "error": that status)
VERDICTS_A = ("A", "B", "A", "A", "B", "tie", "unparsed", "error")
VERDICTS_B = ("A", "A", "A", "A", "A", "B", "B", "A")
FEEDBACK = {
    "A": "Answer A is accurate and answers the question directly; B misses the point.",
    "B": "Answer B is more complete and explains its reasoning step by step.",
    "tie": "Both answers are correct and similarly clear.",
}


def _item(row: int) -> JudgeItem:
    scenario, question, models = ITEMS[row]
    return JudgeItem(
        id=f"q{row + 1}",
        question=question,
        answers=(f"First answer to q{row + 1}.", f"Second answer to q{row + 1}."),
        scenario=scenario,
        answer_models=models,
    )


def _scores(value: float) -> AnswerScores:
    criteria = {key: min(10.0, value + shift) for key, shift in zip(CRITERIA, (0, 1, -1))}
    return AnswerScores(criteria=criteria, overall=value)


def _pairwise(row: int, verdict: str, model: str, feedback: str | None = None) -> Judgment:
    common = {
        "id": f"q{row + 1}",
        "protocol": Protocol.PAIRWISE,
        "scenario": ITEMS[row][0],
        "criteria": CRITERIA,
        "model": model,
        "template": "pocketjudge",
        "line": row + 1,
    }
    if verdict == "unparsed":
        return Judgment(status=Status.UNPARSED, raw_output="Answer A is ... [cut]", **common)
    if verdict == "error":
        return Judgment(status=Status.ERROR, error="the backend timed out after 120 s", **common)
    high, low = 8.0 + row % 2, 4.0 + row % 3
    a, b = {"A": (high, low), "B": (low, high), "tie": (7.0, 7.0)}[verdict]
    return Judgment(
        status=Status.OK,
        winner=verdict,
        answers=(_scores(a), _scores(b)),
        feedback=feedback or FEEDBACK[verdict],
        confidence=0.7 + 0.03 * row,
        **common,
    )


def _record(
    store: RunStore, key: str, judgments: list[Judgment], items: list[JudgeItem], **start
) -> tuple[RunInfo, list[StoredRow]]:
    fields = {
        "source": "cli",
        "input_name": "support_pairs.jsonl",
        "input_hash": INPUT_HASH,
        "model": "pocketjudge-gemma-270m",
        "template": "pocketjudge",
        "protocol": "pairwise",
        "scenario": "auto",
        "total": len(judgments),
        "settings": {"swap": True, "temperature": 0.0, "max_tokens": 512},
        "versions": {
            "pocketjudge": "0.1.0",
            "template": "3b9d0c7e21aa",
            "model_file": {"name": "gemma-270m-q8.gguf", "bytes": 291_000_000},
        },
        **start,
    }
    run_id, _ = store.start(RunStart(run_key=key, **fields))
    store.finish(run_id, judgments, {j.line: item for j, item in zip(judgments, items)})
    return store.get(run_id), store.rows(run_id)


def _pairwise_run(
    store: RunStore, key: str, verdicts: tuple[str, ...], judge: str
) -> tuple[RunInfo, list[StoredRow]]:
    items = [_item(row) for row in range(len(verdicts))]
    judgments = [_pairwise(row, v, judge) for row, v in enumerate(verdicts)]
    return _record(store, key, judgments, items, model=judge)


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "runs.sqlite3")


@pytest.fixture
def two_runs(store: RunStore):
    run_a = _pairwise_run(store, "a", VERDICTS_A, "pocketjudge-gemma-270m")
    run_b = _pairwise_run(store, "b", VERDICTS_B, "pocketjudge-qwen-0.5b")
    return run_a, run_b


def _charts(page: str) -> int:
    return page.count('class="plotly-graph-div"')


def _text(page: str) -> str:
    """The page's text outside scripts and tags, blanks collapsed."""
    page = re.sub(r"<script>.*?</script>", " ", page, flags=re.DOTALL)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _assert_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count(PLOTLY_BANNER) == 1  # plotly.js, inlined once
    assert "<script src" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page, re.IGNORECASE)
    assert "default-src 'none'" in page  # the CSP: the page may load nothing


# -- the run report -------------------------------------------------------------------


def test_a_pairwise_run_report_shows_its_settings_results_groups_leaderboard_and_problems(
    two_runs,
) -> None:
    (run, rows), _ = two_runs
    page = run_report(run, rows)
    _assert_self_contained(page)
    text = _text(page)
    assert f"Run {run.id}" in text
    for shown in (
        "Judge model pocketjudge-gemma-270m",
        "Template pocketjudge",
        "Protocol pairwise",
        "Input file support_pairs.jsonl",
        f"Input hash {INPUT_HASH[:12]}",
        "PocketJudge version 0.1.0",
        "Template version 3b9d0c7e21aa",
        "Model file gemma-270m-q8.gguf (291.0 MB)",
        "Rows judged 8",
        "Rows ok 6 ",
        "Rows unparsed 1 ",
        "Rows error 1 ",
        "Status complete",
    ):
        assert shown in text, shown
    assert INPUT_HASH not in page  # only the prefix
    assert "Every judging setting (3)" in text and "max_tokens 512" in text
    # charts: verdicts, criterion means, group means, leaderboard grades and strengths
    assert _charts(page) == 5
    assert "Pairwise verdicts" in page and "Overall scores" not in page
    assert "Mean score per criterion" in page and '"Helpfulness"' in page  # display names
    # the group table: Exam Questions holds q4 (A won 9 to 4), Code q2 (B won 9 to 5) and
    # q5 (B won 8 to 5)
    assert "Exam Questions 1 1 6.50 1 0 0 0" in text
    assert "Code 2 2 6.75 0 2 0 0" in text
    # the leaderboard names every answer model, with its wins, ties and losses
    assert "Model leaderboard" in text
    for model in ("llama-3-8b", "mistral-7b", "qwen2-7b"):
        assert f"<td>{model}</td>" in page
    # the rows that are not ok, with what went wrong
    assert "Rows to inspect" in text
    assert "7 q7 unparsed -" in text
    assert "8 q8 error the backend timed out after 120 s" in text


def test_a_single_run_report_charts_the_score_distribution_and_has_no_leaderboard(
    store: RunStore,
) -> None:
    item = JudgeItem(id="s1", question="Name a prime number.", answers=("7",))
    judgment = Judgment(
        id="s1",
        protocol=Protocol.SINGLE,
        status=Status.OK,
        answers=(_scores(8.0),),
        feedback="Correct and concise.",
        line=1,
    )
    run, rows = _record(store, "single", [judgment], [item], protocol="single", versions={})
    page = run_report(run, rows)
    _assert_self_contained(page)
    assert "Overall scores" in page and "Pairwise verdicts" not in page
    assert "Model leaderboard" not in page and "Rows to inspect" not in page
    assert "PocketJudge version" not in page  # no versions recorded: no rows for them
    assert _charts(page) == 3  # distribution, criterion means, group means


def test_a_run_without_rows_gives_a_report_without_charts(store: RunStore) -> None:
    run, rows = _record(store, "empty", [], [])
    page = run_report(run, rows)
    _assert_self_contained(page)
    assert _charts(page) == 0
    assert "no judged rows" in page
    assert "Results" not in _text(page) and "By scenario group" not in page


def test_every_user_text_in_a_run_report_is_escaped(store: RunStore) -> None:
    item = JudgeItem(id=XSS, question=XSS, answers=("a", "b"), answer_models=(XSS, "<b>bold</b>"))
    judgment = Judgment(
        id=XSS,
        protocol=Protocol.PAIRWISE,
        status=Status.OK,
        winner="A",
        answers=(_scores(8.0), _scores(5.0)),
        feedback=XSS,
        model=XSS,
        line=1,
    )
    error = Judgment(id="bad", protocol=None, status=Status.ERROR, error=XSS, line=2)
    bad_item = JudgeItem(id="bad", question=XSS, answers=("a", "b"))
    run, rows = _record(
        store,
        "xss",
        [judgment, error],
        [item, bad_item],
        input_name=XSS,
        model=XSS,
        template=XSS,
        settings={XSS: XSS},
        versions={"pocketjudge": XSS},
    )
    page = run_report(run, rows)
    _assert_self_contained(page)
    assert "<script>alert" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<td>&lt;b&gt;bold&lt;/b&gt;</td>" in page  # a model in the leaderboard
    assert page.count("<script>") == 1 + _charts(page)  # plotly.js, then one per chart


# -- the comparison report ------------------------------------------------------------


def test_a_comparison_report_shows_both_runs_agreement_deltas_flips_and_leaderboards(
    two_runs,
) -> None:
    (run_a, rows_a), (run_b, rows_b) = two_runs
    comparison = compare_runs(run_a, rows_a, run_b, rows_b)
    page = comparison_report(comparison)
    _assert_self_contained(page)
    text = _text(page)
    assert f"Run {run_a.id} (A) vs run {run_b.id} (B)" in text
    assert "Judge model pocketjudge-gemma-270m pocketjudge-qwen-0.5b" in text
    assert '<tr class="differs"><th>Judge model</th>' in page
    assert "<tr><th>Input file</th>" in page  # the same in both: not marked
    # rows 1-6 are ok in both; rows 2, 5 and 6 flipped: 3 of 6 agree
    assert comparison.common == 6 and len(comparison.flips) == 3
    for shown in (
        "Agreement 50%",
        "Rows both judged ok 6",
        "Rows only in A 2",
        "Rows only in B 2",
        "Flips 3",
        "Same input file yes (same hash)",
    ):
        assert shown in text, shown
    assert _charts(page) == 2  # criterion deltas, group deltas
    assert "Score change per criterion (B - A)" in page
    assert "Overall score change by scenario group (B - A)" in page
    # the flips, with the question, both decisions and both feedbacks
    assert "Flips" in text and f"q2 {ITEMS[1][1]} B A {FEEDBACK['B']} {FEEDBACK['A']}" in text
    assert f"q6 {ITEMS[5][1]} tie B {FEEDBACK['tie']} {FEEDBACK['B']}" in text
    assert f"A: run {run_a.id}" in text and f"B: run {run_b.id}" in text
    assert page.count("<th>BT strength</th>") == 2


def test_a_comparison_of_other_inputs_says_so_and_escapes_flips(store: RunStore) -> None:
    items = [_item(0)]
    run_a = _record(store, "a", [_pairwise(0, "A", "judge", feedback=XSS)], items)
    run_b = _record(
        store, "b", [_pairwise(0, "B", "judge", feedback=XSS)], items, input_hash="0" * 64
    )
    item_xss = JudgeItem(id="q1", question=XSS, answers=("a", "b"))
    rows_a = [StoredRow(1, run_a[1][0].judgment, item_xss)]
    page = comparison_report(compare_runs(run_a[0], rows_a, *run_b))
    _assert_self_contained(page)
    assert "Same input file no: the input files differ" in _text(page)
    assert "<script>alert" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 3  # question, 2 feedbacks


# -- in a browser -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.browser
def test_both_reports_open_offline_in_chromium_and_draw_every_chart(
    two_runs,
    tmp_path: Path,
    chromium: Path,  # noqa: F811
    shots: Path,  # noqa: F811
) -> None:
    """Opened from files with every request outside them refused: nothing is requested,
    nothing is refused by the page's policy, no script error, no injected script ran, and
    every chart has drawn its bars (run_report.png, comparison_report.png)."""
    from playwright.sync_api import sync_playwright

    (run_a, rows_a), (run_b, rows_b) = two_runs
    reports = {
        "run_report": (run_report(run_a, rows_a), 5),
        "comparison_report": (comparison_report(compare_runs(run_a, rows_a, run_b, rows_b)), 2),
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            for name, (page_html, charts) in reports.items():
                path = tmp_path / f"{name}.html"
                path.write_text(page_html, encoding="utf-8")
                assert _charts(page_html) == charts
                _check_offline(browser, path, charts, shots / f"{name}.png")
        finally:
            browser.close()


def _check_offline(browser, path: Path, charts: int, shot: Path) -> None:
    """Open `path` refusing every other request, check it, and save a full-page shot."""
    url = path.as_uri()
    requested: list[str] = []
    problems: list[str] = []  # script errors and warnings (a CSP refusal is one)

    def only_the_file(route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            route.abort()

    def console(message) -> None:
        if message.type in ("error", "warning"):
            problems.append(message.text)

    context = browser.new_context(viewport=VIEWPORT, color_scheme="light")
    try:
        context.route("**/*", only_the_file)
        page = context.new_page()
        page.on("request", lambda request: requested.append(request.url))
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", console)
        page.add_init_script("window.alert = () => { window.alerted = true; };")
        page.goto(url)
        page.wait_for_function(
            f"document.querySelectorAll('.js-plotly-plot .main-svg').length >= {charts}"
        )
        page.wait_for_timeout(500)
        plots = page.locator(".js-plotly-plot")
        assert plots.count() == charts
        for index in range(charts):
            assert plots.nth(index).locator(".main-svg").count() >= 1
            assert plots.nth(index).locator(".trace.bars .point").count() > 0
        assert page.evaluate("window.alerted === undefined")  # no injected script ran
        assert page.locator("td", has_text=XSS).count() > 0  # shown as text instead
        assert [u for u in requested if u != url] == []
        assert problems == []
        page.mouse.move(0, 0)  # no hover labels
        page.screenshot(path=str(shot), full_page=True)
    finally:
        context.close()


from tests.app.ui.test_browser import (  # noqa: E402 - fixtures and helpers, after the tests' own
    VIEWPORT,
    chromium,  # noqa: F401 - a fixture
    shots,  # noqa: F401 - a fixture
)
