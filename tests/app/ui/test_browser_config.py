"""The running app gets its Streamlit settings from app/ui/.streamlit/config.toml alone.

The app is started the plainest way, `streamlit run <repo>/app/ui/main.py --server.port N` from
another folder with no other flag (and no STREAMLIT_* variable), and checked from outside:
over HTTP (where it listens, XSRF protection) and in headless Chromium (no Deploy button or
developer menu, the upload limit the uploader states, no usage statistics sent). Without the
file these checks fail, XSRF's aside (on by default, so it guards against the file turning it
off): Streamlit listens on every interface, shows Deploy and its menu on localhost, says
200MB per file and posts to data.streamlit.io.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.ui.settings import DEFAULT_MAX_UPLOAD_MB, MAX_UPLOAD_ENV
from tests.app.ui.test_browser import (  # fixtures and helpers, not the tests
    IDLE,
    REPO_ROOT,
    VIEWPORT,
    chromium,  # noqa: F401 - a fixture
    go_to,
    screenshot,
    settle,
    shots,  # noqa: F401 - a fixture
    streamlit_server,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

XSRF_COOKIE = "_streamlit_xsrf"


@pytest.fixture(scope="module")
def app_url(chromium: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:  # noqa: F811
    """The app as `streamlit run` starts it with nothing but a port, from another folder than
    the repository (the settings must come with the app, not with the folder it is started in)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("STREAMLIT_")}
    env.update(PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1")
    env.pop(MAX_UPLOAD_ENV, None)
    folder = tmp_path_factory.mktemp("server")
    with streamlit_server([], env, folder, cwd=folder) as url:
        yield url


@contextlib.contextmanager
def opened(
    browser_path: Path, url: str, on_request: Callable[[str], object] | None = None
) -> Iterator[Any]:
    """A new headless Chromium page on the app, once its first run has settled
    (`on_request` gets the URL of every request the page makes)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(browser_path), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_context(viewport=VIEWPORT).new_page()
            page.set_default_timeout(30_000)
            if on_request is not None:
                page.on("request", lambda request: on_request(request.url))
            page.goto(url)
            page.wait_for_selector(IDLE)
            settle(page)
            yield page
        finally:
            browser.close()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_the_server_listens_on_this_machine_only(app_url: str) -> None:
    """Bound to 127.0.0.1, not 0.0.0.0: another loopback address (all of 127/8 reaches this
    machine) is refused, as a network interface would be."""
    with socket.create_connection(("127.0.0.1", port_of(app_url)), timeout=5):
        pass
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", port_of(app_url)), timeout=5).close()


def test_xsrf_protection_is_on(app_url: str) -> None:
    """The server hands out an XSRF cookie, and refuses an upload without the token (with
    protection off, the same request gets as far as the unknown session: 400)."""
    with urllib.request.urlopen(f"{app_url}/_stcore/health", timeout=10) as response:
        cookies = response.headers.get_all("Set-Cookie") or []
    assert any(cookie.startswith(f"{XSRF_COOKIE}=") for cookie in cookies), cookies
    upload = urllib.request.Request(
        f"{app_url}/_stcore/upload_file/no-session/no-file", data=b"x", method="PUT"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(upload, timeout=10)
    assert refused.value.code == 403


def test_the_page_has_no_deploy_button_states_the_apps_upload_limit_and_sends_no_stats(
    chromium: Path,  # noqa: F811
    app_url: str,
) -> None:
    requested: list[str] = []
    with opened(chromium, app_url, on_request=requested.append) as page:
        page.get_by_role("heading", name="Judge one item").wait_for()
        assert page.get_by_role("button", name="Deploy").count() == 0
        assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
        assert page.locator('[data-testid="stMainMenu"]').count() == 0  # developer menu

        go_to(page, "Batch")
        uploader = page.locator('[data-testid="stFileUploader"]').inner_text()
        assert f"up to {DEFAULT_MAX_UPLOAD_MB:g} MB" in uploader  # the app's own label
        assert f"{DEFAULT_MAX_UPLOAD_MB:g}MB per file" in uploader  # Streamlit's, the same
        page.wait_for_timeout(1_000)  # usage statistics go out soon after a page view
    assert [url for url in requested if not url.startswith(app_url)] == []


def test_the_preview_flags_rows_the_chosen_protocol_cannot_judge(
    chromium: Path,  # noqa: F811
    app_url: str,
    shots: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Pairwise chosen, then a file with a 3-answer row, a repeated id and a one-string
    `answers`: the preview counts all three before the run (batch_preview.png)."""
    rows = [
        {"id": "q1", "question": "Capital of France?", "answers": ["Paris.", "Lyon."]},
        {"id": "q2", "question": "Largest planet?", "answers": ["Jupiter.", "Saturn.", "Mars."]},
        {"id": "q1", "question": "Capital of Italy?", "answers": ["Rome.", "Milan."]},
        {"id": "q4", "question": "2 + 2?", "answers": "4"},
        {"id": "q5", "question": "Boiling point of water?", "answers": ["100 °C.", "90 °C."]},
    ]
    upload = tmp_path / "mixed.jsonl"
    upload.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with opened(chromium, app_url) as page:
        page.locator(".st-key-protocol").get_by_text("Pairwise comparison").click()
        go_to(page, "Batch")
        page.locator(".st-key-upload input[type=file]").set_input_files(upload)
        page.get_by_text("3 of 5 rows have problems").wait_for()
        settle(page)
        preview = page.locator('[data-testid="stDataFrame"]').first
        preview.locator('table[aria-rowcount="4"]').wait_for(state="attached")  # 3 rows
        shown = preview.text_content()
        assert "pairwise judging needs exactly 2 answers" in shown
        assert "also the id of line 1" in shown
        assert "got a string" in shown
        screenshot(page, shots / "batch_preview.png", main_only=True)


def test_every_page_url_opens_its_page(chromium: Path, app_url: str) -> None:  # noqa: F811
    """The judge page is the default (served at the root), and its own URL opens it too."""
    pages = {"": "Judge one item", "judge": "Judge one item", "batch": "Batch", "runs": "Runs"}
    pages |= {"criteria": "Scenario and criteria", "about": "About PocketJudge"}
    with opened(chromium, app_url) as page:
        for path, heading in pages.items():
            page.goto(f"{app_url}/{path}")
            page.wait_for_selector(IDLE)
            settle(page)
            page.get_by_role("heading", name=heading).first.wait_for()
            assert "Page not found" not in page.locator("body").inner_text(), path
