"""The app in a real browser: `streamlit run` on the tiny model, driven by headless Chromium.

One app server serves the module; one browser tab (one Streamlit session) goes through the
configuration, a pairwise judgment and a 50-row batch with stop, resume and downloads.
With POCKETJUDGE_SCREENSHOTS=1 the screenshots go to docs/screenshots/ (for the README);
otherwise to a temporary folder, so a normal test run leaves the repository alone.
`make browser` installs Chromium (`make test` does it first).
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.ui.settings import MAX_UPLOAD_ENV, MODEL_ENV, RUBRICS_ENV
from tests.support.needs import missing

pytestmark = [pytest.mark.slow, pytest.mark.browser]

REPO_ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS_ENV = "POCKETJUDGE_SCREENSHOTS"
SCREENSHOTS_DIR = REPO_ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1400, "height": 900}
START_S = 90  # the server answering its health check
JUDGE_S = 180  # loading the model and BERTScore, then one pairwise judgment
BATCH_S = 900  # each half of the batch: 50 rows take 20 s on 2 idle cores, minutes on busy ones
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
LIVE = ":not([data-stale='true'])"  # an element of the current run, not a left-over
FEEDBACK = '[data-testid="stMarkdownContainer"] strong:text-is("Critique")'
# Four criteria keep each pairwise call short on the tiny model, and give the radar four axes.
CRITERIA = ("Accuracy", "Completeness", "Helpfulness", "Clarity")
QUESTION = "What is the capital of Australia?"
ANSWERS = ("Canberra is the capital of Australia.", "Sydney, the largest city.")
REFERENCE = "Canberra."

ROWS = 50
BAD_LINES = {8: "invalid JSON", 24: "field 'question'", 42: "field 'answers[1]'"}
MODELS = ("llama-3-8b", "mistral-7b", "qwen2-7b", "gemma-2-9b")
# scenario, question, a good answer, a weak answer, reference (or None)
ITEMS = (
    ("default", "What is the capital of Australia?", "Canberra.", "Sydney.", "Canberra."),
    (
        "code_generation",
        "Write a Python function that reverses a string.",
        "def reverse(s):\n    return s[::-1]",
        "Use a loop.",
        None,
    ),
    (
        "text_summarization",
        "Summarize: the meeting moved to Friday because the room was booked on Thursday.",
        "The meeting is now on Friday; the room was taken on Thursday.",
        "There was a meeting.",
        "Meeting moved to Friday (room booked Thursday).",
    ),
    (
        "creative_writing",
        "Write a two-line poem about rain.",
        "Soft rain taps the roof;\nthe city hums along.",
        "Rain is wet.",
        None,
    ),
    ("math_reasoning", "What is 12 * 7?", "84, since 10*7 + 2*7 = 70 + 14.", "82", "84"),
)


# -- the browser and the server -------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Path:
    if CHROMIUM.is_file():
        return CHROMIUM
    missing(f"{CHROMIUM} not found: the browser tests need Debian's Chromium (make browser)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def streamlit_server(
    flags: list[str], env: dict[str, str], folder: Path, cwd: Path = REPO_ROOT
) -> Iterator[str]:
    """`streamlit run <repo>/app/ui/main.py --server.port <free port> *flags` started in `cwd`,
    with `env`; yields its URL once it answers its health check and stops it at the end. The
    server's output goes to `folder`/server.log. Its run history is under `folder` unless
    `env` names one: a module-scoped server starts before the per-test history is set, and
    must never write into the user's."""
    env = {"POCKETJUDGE_HOME": str(folder / "pocketjudge-home"), **env}
    port = free_port()
    script = str(REPO_ROOT / "app" / "ui" / "main.py")
    command = [
        sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port), *flags,
    ]  # fmt: skip
    log_path = folder / "server.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole below
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while not healthy(url):
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the app server did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
        server.wait()


@contextlib.contextmanager
def app_server(model: str, folder: Path) -> Iterator[str]:
    """`streamlit run` on 127.0.0.1 with `model` (registry name or GGUF file) as the default;
    yields its URL and stops it at the end."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), MODEL_ENV: model}
    env[RUBRICS_ENV] = str(folder / "rubrics")
    env.pop(MAX_UPLOAD_ENV, None)
    flags = [
        "--server.address", "127.0.0.1",
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",  # no polling of the repository
        "--client.toolbarMode", "minimal",  # no Deploy button in the screenshots
    ]  # fmt: skip
    with streamlit_server(flags, env, folder) as url:
        yield url


@pytest.fixture(scope="module")
def app_url(
    chromium: Path, tiny_gguf_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The app with the tiny model as the default."""
    with app_server(str(tiny_gguf_model), tmp_path_factory.mktemp("server")) as url:
        yield url


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: docs/screenshots/ with POCKETJUDGE_SCREENSHOTS=1, else a tmp dir."""
    if os.environ.get(SCREENSHOTS_ENV) == "1":
        SCREENSHOTS_DIR.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS_DIR
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="module")
def page(chromium: Path, app_url: str):
    """One tab, so one Streamlit session, for the whole module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(chromium), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(
            viewport=VIEWPORT, color_scheme="light", accept_downloads=True
        )
        tab = context.new_page()
        tab.set_default_timeout(30_000)
        tab.goto(app_url)
        tab.wait_for_selector(".st-key-judge")
        settle(tab)
        yield tab
        context.close()
        browser.close()


# -- helpers ----------------------------------------------------------------------------


def settle(page) -> None:
    """Wait for the script run an action started, and any run right after it, to finish.

    A page switch while a run is still going can lose the sidebar's choices (see
    `test_configuration`), so every navigation waits for this first.
    """
    page.wait_for_selector(IDLE)
    page.wait_for_timeout(400)
    page.wait_for_selector(IDLE)


def go_to(page, title: str) -> None:
    settle(page)
    page.get_by_role("link", name=title, exact=True).first.click()
    page.get_by_role("heading", name=title, exact=True).wait_for()
    settle(page)


def sidebar_switch(page, key: str):
    return page.locator(f".st-key-{key} [role=switch]")


def main_text(page) -> str:
    return page.locator('[data-testid="stMainBlockContainer"]').inner_text()


def wait_for_charts(page, count: int, timeout_ms: int = 30_000) -> None:
    """At least `count` Plotly charts, each with its SVG drawn."""
    page.wait_for_function(
        """count => {
            const plots = [...document.querySelectorAll('.js-plotly-plot')];
            const drawn = p => p._fullLayout && p.querySelector('svg.main-svg');
            return plots.length >= count && plots.every(drawn);
        }""",
        arg=count,
        timeout=timeout_ms,
    )
    page.wait_for_timeout(500)  # let Plotly finish its layout pass


def content_height(page) -> int:
    return page.evaluate(
        """() => Math.max(...['stMain', 'stSidebarContent'].map(
            id => document.querySelector(`[data-testid=${id}]`)?.scrollHeight || 0))"""
    )


def screenshot(
    page, path: Path, *, top: str | None = None, bottom: str | None = None, main_only=False
) -> Path:
    """The whole page (Streamlit scrolls inside the app, so the viewport is made tall).

    `top` and `bottom` (selectors) crop it just above those elements; `main_only` leaves
    the sidebar out.
    """
    page.mouse.move(0, 0)  # no hover labels on the charts
    page.set_viewport_size({"width": VIEWPORT["width"], "height": content_height(page) + 20})
    page.wait_for_timeout(600)
    main = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()
    x0, width = (main["x"] + 2, main["width"] - 2) if main_only else (0, VIEWPORT["width"])
    y0 = page.locator(top).first.bounding_box()["y"] - 8 if top else 0
    y1 = page.locator(bottom).first.bounding_box()["y"] - 8 if bottom else None
    if y1 is None and not (top or main_only):
        page.screenshot(path=str(path), full_page=True)
    else:
        y1 = y1 or main["y"] + main["height"]
        page.screenshot(path=str(path), clip={"x": x0, "y": y0, "width": width, "height": y1 - y0})
    page.set_viewport_size(VIEWPORT)
    page.wait_for_timeout(300)
    return path


def pick_criteria(page, names: tuple[str, ...]) -> None:
    """On the criteria page: judge with criteria picked from the Basic tab."""
    page.locator(".st-key-criteria_mode").get_by_text("Criteria I pick").click()
    picker = page.locator(".st-key-criteria_basic")
    picker.wait_for()
    settle(page)
    for name in names:
        box = picker.locator("input")
        box.click()
        box.fill(name)
        page.get_by_role("option", name=name, exact=True).click()
        settle(page)
    page.keyboard.press("Escape")
    settle(page)


def judge_pair(page, **fields: str) -> str:
    """Fill the one-item form (question, answer_1, answer_2, reference), judge, and return
    the verdict headline once the run is over."""
    for key, text in fields.items():
        page.locator(f".st-key-{key} textarea").fill(text)
    page.locator(".st-key-judge button").click()
    verdict = page.get_by_role("heading", name=re.compile(r"^Verdict: "))
    verdict.wait_for(timeout=JUDGE_S * 1000)
    settle(page)
    return verdict.inner_text().strip()


def download(page, key: str) -> bytes:
    with page.expect_download() as info:
        page.locator(f".st-key-{key}{LIVE} button").first.click()
    return Path(info.value.path()).read_bytes()


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    rate: float
    eta: str | None
    state: str


PROGRESS = re.compile(r"(\d+) / (\d+) rows · ([\d.]+) rows/s(?: · about (.+) left)? · (\w+)")


def progress(page) -> Progress | None:
    bar = page.locator(f'[data-testid="stProgress"]{LIVE}').first
    try:
        text = bar.inner_text(timeout=2_000)
    except Exception:  # between two runs of the polling fragment
        return None
    match = PROGRESS.search(text)
    if match is None:
        return None
    done, total, rate, eta, state = match.groups()
    return Progress(int(done), int(total), float(rate), eta, state)


def watch(page, stop: Callable[[Progress], bool], timeout_s: float) -> list[Progress]:
    """Progress readings every 0.3 s until `stop` accepts one (the last one returned)."""
    seen: list[Progress] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reading = progress(page)
        if reading is not None:
            seen.append(reading)
            if stop(reading):
                return seen
        page.wait_for_timeout(300)
    pytest.fail(f"the batch did not get there in {timeout_s} s; last reading: {seen[-1:]}")


def batch_file(path: Path) -> Path:
    """50 PocketJudge rows, each pair written by two of four models; 3 rows are broken."""
    pairs = list(itertools.combinations(MODELS, 2))
    lines = []
    for n in range(ROWS):
        line = n + 1
        if line == 8:
            lines.append('{"id": "r7", "question": "an unterminated string')
            continue
        scenario, question, good, weak, reference = ITEMS[n % len(ITEMS)]
        models = pairs[n % len(pairs)]
        answers = [good, weak] if n % 2 else [weak, good]
        row = {"id": f"r{n}", "question": question, "answers": answers}
        if reference:
            row["reference"] = reference
        row |= {"answer_models": list(models), "scenario": scenario}
        if line == 24:
            del row["question"]
        if line == 42:
            row["answers"] = [good, ""]
        lines.append(json.dumps(row))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def check_rows(lines: list[int], statuses: list[str], errors: list[str], count: int) -> None:
    """One output row per input row, in order; the broken rows are errors naming their line."""
    assert lines == list(range(1, count + 1))
    assert set(statuses) <= {"ok", "unparsed", "error"}
    for line, status, error in zip(lines, statuses, errors):
        if line in BAD_LINES:
            assert status == "error"
            assert error.startswith(f"line {line}") and BAD_LINES[line] in error, error
        else:
            assert status in ("ok", "unparsed"), (line, status, error)
    assert "ok" in statuses


def check_jsonl(data: bytes, count: int) -> list[dict]:
    rows = [json.loads(line) for line in data.decode("utf-8").splitlines()]
    assert len(rows) == count
    check_rows(
        [r["line"] for r in rows], [r["status"] for r in rows], [r["error"] or "" for r in rows],
        count,
    )  # fmt: skip
    good = [r["id"] for r in rows if r["line"] not in BAD_LINES]
    assert good == [f"r{line - 1}" for line in range(1, count + 1) if line not in BAD_LINES]
    return rows


def check_csv(data: bytes, count: int) -> None:
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
    assert len(rows) == count
    check_rows(
        [int(r["line"]) for r in rows], [r["status"] for r in rows], [r["error"] for r in rows],
        count,
    )  # fmt: skip


# -- the tests --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def configured(page):
    """The tab set up for the tests: pairwise protocol, four picked criteria, parameters shown."""
    page.locator(".st-key-protocol").get_by_text("Pairwise comparison").click()
    page.locator(".st-key-answer_2").wait_for()
    go_to(page, "Scenario and criteria")
    pick_criteria(page, CRITERIA)
    page.get_by_text(f"Judging with {len(CRITERIA)} criteria").wait_for()
    page.get_by_text("Generation and load parameters").click()  # show them in the screenshot
    page.locator(".st-key-max_tokens").wait_for()
    settle(page)
    return page


def test_configuration(configured, tiny_gguf_model: Path, shots: Path) -> None:
    page = configured
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    # Streamlit 1.67 can reset every sidebar widget to its default (the first registry model,
    # toggles off) when the page is switched before the first run ends; settle() avoids it.
    assert tiny_gguf_model.name in sidebar, "the sidebar lost the model chosen by the app"
    assert f"Scenario: auto · {len(CRITERIA)} criteria picked" in sidebar
    for key in ("use_reference", "reference_metrics", "swap"):
        assert sidebar_switch(page, key).is_checked(), f"{key} is off"
    assert page.locator(".st-key-protocol input[type=radio]").nth(2).is_checked()  # pairwise
    text = main_text(page)
    picked = f"Judging with {len(CRITERIA)} criteria (they replace the scenario's): "
    assert picked + ", ".join(CRITERIA) in text
    assert re.search(r"\b(\d+) of \1 scenarios match\.", text)  # no search: all listed
    screenshot(page, shots / "configuration.png")


def test_pairwise_item_with_reference(configured, shots: Path) -> None:
    page = configured
    go_to(page, "Judge one item")
    shown = judge_pair(
        page, question=QUESTION, answer_1=ANSWERS[0], answer_2=ANSWERS[1], reference=REFERENCE
    )
    assert re.fullmatch(r"Verdict: (Tie|Answer [AB] is better|Uncertain \(leans to .+\))", shown)
    for label in ("Answer A", "Answer B", "Confidence", "Position consistency", "Time"):
        metric = page.locator('[data-testid="stMetric"]', has_text=label)
        metric.first.wait_for(timeout=30_000)  # a loaded machine draws the metrics later
        assert metric.count(), label
    wait_for_charts(page, 3)
    assert page.locator(".js-plotly-plot").count() == 3  # bars, radar (in its tab), metrics
    text = main_text(page)
    assert re.search(r"\d+ / 10", text)
    assert "Similarity to the reference" in text  # the reference metrics chart's title
    for name in CRITERIA:
        assert name in page.locator(".js-plotly-plot").first.inner_text()
    assert page.locator(FEEDBACK).count() == 1
    # Score mode wrote no critique: "Explain" asks the judge for one (verdict fixed).
    # A button with help is drawn twice (tooltip and plain); the role query takes the shown one.
    page.locator(".st-key-single_explain").get_by_role("button", name="Explain").click()
    written = page.locator(".st-key-single_feedback_markdown")  # its Markdown toggle
    none = page.get_by_text("wrote no critique")
    written.or_(none).first.wait_for(timeout=JUDGE_S * 1000)
    settle(page)
    assert written.count() + none.count() == 1
    # The configuration shot shows the parameters; the tiny model's feedback is random text.
    page.get_by_text("Generation and load parameters").click()
    page.locator(".st-key-max_tokens").wait_for(state="hidden")
    screenshot(page, shots / "single_result.png", bottom=FEEDBACK)


def test_batch_preview_stop_resume_dashboard_and_downloads(
    configured, shots: Path, tmp_path: Path
) -> None:
    page = configured
    # BERTScore on every row with a reference would be most of the batch's time.
    page.locator(".st-key-reference_metrics label").first.click()
    settle(page)
    assert not sidebar_switch(page, "reference_metrics").is_checked()
    go_to(page, "Batch")
    page.locator(".st-key-upload input[type=file]").set_input_files(
        batch_file(tmp_path / "answers.jsonl")
    )
    page.get_by_text("3 of 50 rows have problems").wait_for()
    settle(page)
    metrics = page.locator('[data-testid="stMetric"]')
    assert [metrics.nth(i).inner_text().split() for i in range(3)] == [
        ["Rows", "50"],
        ["Readable", "47"],
        ["With", "problems", "3"],
    ]
    preview = page.locator('[data-testid="stDataFrame"]').first
    assert preview.locator("table").get_attribute("aria-rowcount") == "4"  # header + 3 errors
    shown = preview.text_content()
    for line, what in BAD_LINES.items():
        assert f"line {line}" in shown and what in shown

    page.locator(".st-key-run_batch button").click()
    # Stop as soon as the first rows are in: 50 rows take 20 s or more and a click takes
    # under 1 s, so the stop must land mid-batch; a batch that ends first is a failure.
    running = watch(page, lambda p: p.done > 0 or p.state != "running", BATCH_S)[-1]
    assert running.state == "running", f"the batch ended before Stop could be clicked: {running}"
    assert 0 < running.done < ROWS and running.total == ROWS
    assert running.rate > 0 and running.eta, running  # count, rate and time left
    page.locator(f".st-key-stop_batch{LIVE} button").first.click()
    end = watch(page, lambda p: p.state in ("stopped", "done"), 60)[-1]
    assert end.state == "stopped", f"Stop was clicked at {running.done} rows but: {end}"
    kept = end.done
    assert running.done <= kept < ROWS, (running, end)
    page.get_by_text(f"Stopped after {kept} of {ROWS} rows").wait_for()
    page.get_by_text(f"The files hold the {kept} rows judged so far").wait_for()
    settle(page)
    check_jsonl(download(page, "download_jsonl"), kept)  # the judged rows are kept
    page.locator(f".st-key-resume_batch{LIVE} button").first.click()
    resumed = watch(page, lambda p: p.state == "done", BATCH_S)
    counts = [p.done for p in resumed]
    assert counts == sorted(counts) and counts[0] >= kept, counts  # goes on, not over
    assert len(set(counts)) > 2, counts  # the count advanced while we watched
    print(f"stop clicked at {running.done} rows, {kept} kept, resumed {counts[0]}->{ROWS}")

    page.get_by_text(f"Done: {ROWS} rows judged").wait_for(timeout=30_000)
    page.get_by_role("heading", name="Model leaderboard").wait_for()
    settle(page)
    for heading in ("Download", "Dashboard", "Model leaderboard", "Inspect a row"):
        assert page.get_by_role("heading", name=heading, exact=True).count() == 1, heading
    judged = page.locator('[data-testid="stMetric"]', has_text="Rows judged")
    assert judged.inner_text().split() == ["Rows", "judged", str(ROWS)]
    error = page.locator('[data-testid="stMetric"]', has_text=re.compile(r"^error"))
    assert error.first.inner_text().split() == ["error", str(len(BAD_LINES))]
    # dashboard: scores, verdicts, groups, criteria; leaderboard: grades, strengths; inspector
    wait_for_charts(page, 6)
    charts = page.locator(".js-plotly-plot")
    board = page.locator('[data-testid="stDataFrame"]', has_text="Bradley-Terry strength")
    for model in MODELS:
        assert model in board.text_content()
        assert any(model in charts.nth(i).inner_text() for i in range(charts.count()))
    screenshot(
        page,
        shots / "batch_dashboard.png",
        top='h2:has-text("Run: ")',
        bottom='h2:has-text("Inspect a row")',
        main_only=True,
    )

    check_jsonl(download(page, "download_jsonl"), ROWS)
    check_csv(download(page, "download_csv"), ROWS)
