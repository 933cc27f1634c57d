"""The app in a real browser when its engine dies: `streamlit run` on the tiny model, a batch
started in headless Chromium, and the engine worker that runs llama.cpp killed mid-batch
from outside (as the kernel kills a process out of memory, or as an illegal instruction
ends one). The page stays up, names the signal, keeps the rows judged, and Resume
finishes the batch on a fresh worker. With POCKETJUDGE_SCREENSHOTS=1 the screenshots go to
docs/screenshots/."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.app.ui.test_browser import (  # fixtures and helpers, not the tests
    BATCH_S,
    LIVE,
    app_server,
    chromium,  # noqa: F401 - a fixture
    go_to,
    healthy,
    page,  # noqa: F401 - a fixture
    screenshot,
    settle,
    shots,  # noqa: F401 - a fixture
    watch,
)
from tests.support.processes import command_line, engine_workers, processes

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROWS = 24


@pytest.fixture(scope="module")
def app_url(chromium: Path, tiny_gguf_model: Path, tmp_path_factory) -> Iterator[str]:  # noqa: F811
    with app_server(str(tiny_gguf_model), tmp_path_factory.mktemp("server")) as url:
        yield url


def judge_workers(url: str, model: Path) -> list[int]:
    """The engine workers on `model` of the app server listening at `url` (the MiniLM
    encoder's worker is another)."""
    port = f"--server.port {urlparse(url).port}"
    [server] = [pid for pid in processes() if port in command_line(pid)]
    return engine_workers(server, model.name)


def batch_file(path: Path) -> Path:
    rows = [
        {"id": f"r{n}", "question": f"Name a primary colour ({n}).", "answers": ["Red.", "Blue."]}
        for n in range(ROWS)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_an_engine_killed_mid_batch_leaves_the_page_up_and_resume_finishes(
    page,  # noqa: F811
    app_url: str,
    shots: Path,  # noqa: F811
    tiny_gguf_model: Path,
    tmp_path: Path,
) -> None:
    page.locator(".st-key-reference_metrics label").first.click()  # no BERTScore load
    settle(page)
    # one engine for the batch (the default is one per core): the kill below ends the only one
    page.get_by_text("Generation and load parameters").click()
    engines = page.locator(".st-key-workers input")
    engines.fill("1")
    engines.press("Enter")
    settle(page)
    go_to(page, "Batch")
    page.locator(".st-key-upload input[type=file]").set_input_files(
        batch_file(tmp_path / "colours.jsonl")
    )
    page.locator('[data-testid="stMetric"]', has_text="Readable").first.wait_for()
    settle(page)
    page.locator(".st-key-run_batch button").click()
    running = watch(page, lambda p: p.done >= 2 or p.state != "running", BATCH_S)[-1]
    assert running.state == "running", f"the batch ended before the kill: {running}"
    [worker] = judge_workers(app_url, tiny_gguf_model)
    os.kill(worker, signal.SIGKILL)
    stopped = watch(page, lambda p: p.state != "running", 120)[-1]
    assert stopped.state == "failed" and 2 <= stopped.done < ROWS, stopped
    error = page.get_by_text("The judge engine stopped: it was stopped by SIGKILL")
    error.wait_for(timeout=30_000)
    settle(page)
    shown = error.inner_text()
    assert "The app is still running" in shown and f"the {stopped.done} rows judged" in shown
    assert healthy(app_url)  # the server lives on, with no judge worker now
    assert judge_workers(app_url, tiny_gguf_model) == []
    screenshot(
        page,
        shots / "engine_stopped.png",
        top='h2:has-text("Run: ")',
        bottom='h2:has-text("Dashboard")',
        main_only=True,
    )

    page.locator(f".st-key-resume_batch{LIVE} button").first.click()
    resumed = watch(page, lambda p: p.state == "done", BATCH_S)
    assert resumed[0].done >= stopped.done and resumed[-1].done == ROWS, resumed
    page.get_by_text(f"Done: {ROWS} rows judged").wait_for(timeout=30_000)
    settle(page)
    workers = judge_workers(app_url, tiny_gguf_model)
    assert len(workers) == 1 and workers[0] != worker  # a fresh one judged the rest
    screenshot(
        page,
        shots / "engine_resumed.png",
        top='h2:has-text("Run: ")',
        bottom='h2:has-text("Dashboard")',
        main_only=True,
    )
