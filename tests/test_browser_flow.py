"""A new user's whole flow in a real browser (issue 20): ``streamlit run app.py``, the default plan, its Opacus
export saved to disk, "Validate this plan" and its verdict and curves (``benchmarks/flow.py`` drives it; the
benchmark times it, this test checks what the user gets)."""

from __future__ import annotations

import sys
import time

import pytest

from tests.browser_support import browser, require_chromium
from tests.test_benchmarks import ROOT, load_benchmark

require_chromium()
flow = load_benchmark("flow")


def test_plan_export_for_opacus_and_validate_this_plan_with_the_defaults(tmp_path):
    from playwright.sync_api import sync_playwright

    started = time.perf_counter()
    with (browser.streamlit_server([sys.executable, "-m", "streamlit", "run", "app.py"], cwd=ROOT) as url,
          sync_playwright() as playwright):
        chromium = browser.launch(playwright)
        page = chromium.new_page(viewport=flow.VIEWPORT, accept_downloads=True)
        result = flow.run_flow(url, page, tmp_path, started=started, screenshots=tmp_path)
        chromium.close()
    saved = tmp_path / "fedplan_increasing-sizes_opacus.py"
    assert result["opacus_file"] == str(saved) and saved.is_file()  # the download, on disk
    text = saved.read_text()
    sigmas = flow.opacus_noise_multipliers(text)
    assert len(sigmas) == 1 and f"{sigmas.pop():.4g}" == result["sigma_shown"]  # the σ the page shows
    privacy = flow.assigned(text, "PRIVACY")
    assert privacy["target_epsilon"] == 1.0 and 0.99 <= privacy["epsilon"] <= 1.0  # spends the budget, never more
    assert result["verdict"].split(":")[0] in ("PASS", "FAIL", "NO GUARANTEE") and result["claims"] == 3
    assert result["charts"] >= 3 and result["exceptions"] == 0  # ε curve, and the validation's curves
    assert all((tmp_path / name).stat().st_size > 10_000 for name in flow.SHOTS)
    times = result["seconds"]
    assert times["plan shown"] <= times["Opacus file saved"] <= times["validation shown"]


@pytest.mark.parametrize("text, expected", [("PHASES = [{'noise_multiplier': 1.5, 'steps': 2}]\n", {1.5}),
                                            ("X = 1\nPHASES = [{'noise_multiplier': 1, 'x': [1]},\n"
                                             "          {'noise_multiplier': 2}]\n", {1.0, 2.0})])
def test_the_flow_reads_the_noise_multipliers_of_an_opacus_export(text, expected):
    assert flow.opacus_noise_multipliers(text) == expected
