"""The studio for tests: a live server on a free port, and headless Chromium.

Browser tests carry `@pytest.mark.browser`: without /usr/bin/chromium they are skipped with
the reason, except under CI (the environment variable `CI` set), where `.ci/run` installs
Debian's chromium and a missing one fails, as `shared` tests fail without ../shared.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from llmsizer.serve import make_app
from llmsizer.serve.jobs import Jobs

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("browser") is not None and not CHROMIUM.exists():
        reason = f"needs headless Chromium ({CHROMIUM}: apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}, and CI is set: .ci/run installs it", pytrace=False)
        pytest.skip(reason)


class LiveServer:
    """uvicorn serving the studio from a thread, on a port the OS picks."""

    def __init__(self, tmp: Path) -> None:
        self.jobs = Jobs()
        config = uvicorn.Config(
            make_app(self.jobs, tmp), host="127.0.0.1", port=0, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        end = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < end, "the studio did not start in 30 s"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.jobs.close()


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with LiveServer(tmp_path_factory.mktemp("uploads")) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():  # the hook above skips (or fails) the test first
        pytest.skip("no chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    context.close()
