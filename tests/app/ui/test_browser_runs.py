"""The Runs page in a real browser: `streamlit run` against a prepared run history, driven by
headless Chromium: the table lists the runs, comparing two shows their agreement and flips,
the comparison report downloads. The screenshot goes to docs/screenshots/runs_page.png with
POCKETJUDGE_SCREENSHOTS=1 (else to a temporary folder), like the other browser tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.runs.store import DB_NAME, HOME_ENV, RunStore
from tests.app.ui.test_browser import (  # fixtures and helpers, not the tests
    app_server,
    chromium,  # noqa: F401 - a fixture
    download,
    go_to,
    page,  # noqa: F401 - a fixture
    screenshot,
    settle,
    shots,  # noqa: F401 - a fixture
)
from tests.app.ui.test_runs_page import RUN_A, RUN_B, SAME_FILE, record

pytestmark = [pytest.mark.slow, pytest.mark.browser]

COMPARE_CHARTS = 6  # criterion and group changes, then each leaderboard's grades and strengths


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A data folder whose history holds run A and run B over the same file."""
    home = tmp_path_factory.mktemp("pocketjudge-home")
    store = RunStore(home / DB_NAME)
    runs = {
        "a": record(store, "ka", "2026-01-10T09:00:00+00:00", RUN_A, model="judge-a",
                    input_name="answers.jsonl", input_hash=SAME_FILE),
        "b": record(store, "kb", "2026-02-20T10:30:00+00:00", RUN_B, model="judge-b",
                    input_name="answers.jsonl", input_hash=SAME_FILE, source="app"),
    }  # fmt: skip
    return home, runs


@pytest.fixture(scope="module")
def app_url(
    chromium: Path,  # noqa: F811
    tiny_gguf_model: Path,
    history: tuple[Path, dict[str, str]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """The app on the tiny model, reading the prepared history."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(HOME_ENV, str(history[0]))
        with app_server(str(tiny_gguf_model), tmp_path_factory.mktemp("server")) as url:
            yield url


def test_the_runs_page_compares_two_runs(
    page,  # noqa: F811
    history: tuple[Path, dict[str, str]],
    shots: Path,  # noqa: F811
) -> None:
    runs = history[1]
    go_to(page, "Runs")
    listed = page.locator('[data-testid="stDataFrame"]').first
    assert listed.locator("table").get_attribute("aria-rowcount") == "3"  # header + 2 runs
    assert runs["a"] in listed.text_content() and runs["b"] in listed.text_content()

    page.get_by_role("tab", name="Compare two runs").click()
    settle(page)
    panel = page.locator('[role="tabpanel"]:visible')
    agreement = panel.locator('[data-testid="stMetric"]', has_text="Agreement")
    assert agreement.inner_text().split() == ["Agreement", "50%"]
    flips = panel.locator('[data-testid="stMetric"]', has_text="Flips")
    assert flips.inner_text().split() == ["Flips", "2"]
    assert page.locator('[data-testid="stAlert"]:visible', has_text="different input").count() == 0
    flipped = panel.locator('[data-testid="stDataFrame"]', has_text="decision A")
    assert "B2 says A" in flipped.text_content() and "B4 says B" in flipped.text_content()
    page.wait_for_function(
        """count => {
            const shown = [...document.querySelectorAll('.js-plotly-plot')]
                .filter(p => p.offsetParent !== null);
            return shown.length >= count && shown.every(p => p.querySelector('svg.main-svg'));
        }""",
        arg=COMPARE_CHARTS,
        timeout=30_000,
    )
    page.wait_for_timeout(500)  # let Plotly finish its layout pass
    report = download(page, "compare_download_html").decode("utf-8")
    assert f"Run {runs['a']} (A) vs run {runs['b']} (B)" in report
    settle(page)
    last = 'h3:has-text("Leaderboard of run A")'  # the leaderboards: as on the Batch page
    screenshot(page, shots / "runs_page.png", bottom=last, main_only=True)
    assert (shots / "runs_page.png").stat().st_size > 10_000
