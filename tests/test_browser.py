"""End to end in a real headless browser: ``streamlit run app.py``, plan with the defaults, see the schedule.

Uses Debian's Chromium (``/usr/bin/chromium``) driven by Playwright. ``.ci/run`` installs Chromium and
sets ``FEDPLAN_REQUIRE_BROWSER=1``, so in CI a missing browser fails this test; elsewhere it is skipped
with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

if not Path(CHROMIUM).exists():
    if os.environ.get("FEDPLAN_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"FEDPLAN_REQUIRE_BROWSER=1 but there is no Chromium at {CHROMIUM}")
    pytest.skip("no Chromium (apt-get install chromium); .ci/run installs it", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: The checkout's command (README) and the installed one (``fedplan app`` runs the packaged entry point).
STARTS = {"streamlit run app.py": [sys.executable, "-m", "streamlit", "run", "app.py"],
          "fedplan app": [str(Path(sys.executable).with_name("fedplan")), "app"]}


@pytest.fixture(scope="module", params=list(STARTS))
def app_url(request, tmp_path_factory):
    port = _free_port()
    # ``fedplan app`` starts from an unrelated folder: it must not depend on the working directory
    folder = ROOT if request.param == "streamlit run app.py" else tmp_path_factory.mktemp("elsewhere")
    server = subprocess.Popen(
        [*STARTS[request.param], "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("streamlit did not start within 60 s") from None
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=20)


def test_planner_page_renders_the_schedule_and_a_chart(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app_url)
        page.get_by_text("fedplan: plan a private federated run").wait_for(timeout=60_000)
        rounds = page.locator('[data-testid="stMetric"]').filter(has_text="Rounds")
        rounds.wait_for(timeout=60_000)
        assert "193" in rounds.inner_text()
        page.locator('[data-testid="stDataFrame"]').nth(1).wait_for(timeout=30_000)  # hypotheses, schedule
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=30_000)
        page.get_by_text("Download CSV").wait_for(timeout=30_000)  # the buttons render after the chart
        assert page.get_by_text("Download CSV").count() == 1
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(tmp_path / "planner.png"), full_page=True)
        browser.close()
