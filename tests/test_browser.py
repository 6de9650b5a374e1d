"""End to end in a real headless browser: ``streamlit run app.py``, plan with the defaults, see the schedule.

Uses Debian's Chromium (``/usr/bin/chromium``) driven by Playwright. ``.ci/run`` installs Chromium and
sets ``FEDPLAN_REQUIRE_BROWSER=1``, so in CI a missing browser fails this test; elsewhere it is skipped
with the reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.browser_support import browser, require_chromium

ROOT = browser.ROOT

require_chromium()


#: The checkout's command (README) and the installed one (``fedplan app`` runs the packaged entry point).
STARTS = {"streamlit run app.py": [sys.executable, "-m", "streamlit", "run", "app.py"],
          "fedplan app": [str(Path(sys.executable).with_name("fedplan")), "app"]}


@pytest.fixture(scope="module", params=list(STARTS))
def app_url(request, tmp_path_factory):
    # ``fedplan app`` starts from an unrelated folder: it must not depend on the working directory
    folder = ROOT if request.param == "streamlit run app.py" else tmp_path_factory.mktemp("elsewhere")
    with browser.streamlit_server(STARTS[request.param], cwd=folder) as url:
        yield url


def test_a_page_opened_by_its_address_first_has_the_apps_navigation(app_url):
    """The first visit to a fresh server opens a page by its address (a bookmark). With a folder named ``pages``
    beside the entry script, Streamlit ran that page alone, without ``fedplan/app.py``, under a sidebar of every
    module in the folder (app, Planner, …, accountant curves, background, plan validation, widgets). This test runs
    first on its server (tests run in file order)."""
    from playwright.sync_api import sync_playwright

    from fedplan.app import PAGES

    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{app_url}/Accountant")
        page.get_by_text("Privacy accountant").first.wait_for(timeout=60_000)
        links = page.locator('[data-testid="stSidebarNav"] a')
        links.first.wait_for(timeout=30_000)
        assert [text.strip() for text in links.all_inner_texts()] == [title for _, title in PAGES]
        chromium.close()


def test_planner_page_renders_the_schedule_and_a_chart(app_url, tmp_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        page = chromium.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(app_url)
        page.get_by_text("fedplan: plan a private federated run").wait_for(timeout=60_000)
        rounds = page.locator('[data-testid="stMetric"]').filter(has_text="Rounds")
        rounds.wait_for(timeout=60_000)
        assert "193" in rounds.inner_text()
        tables = page.locator('[data-testid="stMarkdown"] table')  # hypotheses, schedule (Markdown tables)
        tables.nth(1).wait_for(timeout=30_000)
        assert tables.nth(1).locator("tbody tr").count() == 193  # a row per round, in its scrolling box
        page.locator('[data-testid="stVegaLiteChart"]').first.wait_for(timeout=30_000)
        csv = page.locator('[data-testid="stDownloadButton"] button', has_text="CSV")
        csv.first.wait_for(timeout=30_000)  # the buttons render after the chart
        assert csv.count() == 1
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(tmp_path / "planner.png"), full_page=True)
        chromium.close()
