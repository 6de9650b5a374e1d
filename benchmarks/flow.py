"""Benchmark: a new user's whole flow with the defaults, in a real browser (issue 20, "done when").

From ``streamlit run app.py`` to a plan exported for Opacus and a validation plot of that plan, touching nothing
but two buttons: the planner page's plan (its ``Rounds`` metric), the Opacus download saved to disk (its noise
multiplier must be the plan's σ as the page shows it), "Validate this plan" pressed, and its verdict and chart
shown. Every step is timed from the moment the server process was started; the target is the whole flow under
60 s on this 2-core machine. The anchor printed beside it is the machine's load average at the start and the end
(other programs share the two cores). The validation goes where the app sends it by default (a Dask LocalCluster
started on the first run; ``FEDPLAN_SCHEDULER`` as for the app).

    python benchmarks/flow.py
    python benchmarks/flow.py --screenshots docs --json flow.json     # also the README's pictures of the flow

``tests/test_browser_flow.py`` runs :func:`run_flow` and checks what it returns.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import runpy
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The whole flow's target (issue 20).
TARGET_S = 60.0
VIEWPORT = {"width": 1400, "height": 1000}
#: Screenshots of the flow for the README: the plan, the validation's verdict, and its curves against the bound.
SHOTS = ("flow_plan.png", "flow_validation.png", "flow_curves.png")


#: ``benchmarks/browser.py``'s functions, run from its path (an installed ``benchmarks`` package shadows this folder).
browser = types.SimpleNamespace(**runpy.run_path(str(Path(__file__).with_name("browser.py"))))


def assigned(text: str, name: str):
    """The literal assigned to ``name`` at the top level of the Python file ``text`` (an export's ``PHASES``)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(getattr(target, "id", None) == name for target in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{name} is not assigned in the file")


def opacus_noise_multipliers(text: str) -> set[float]:
    """The noise multipliers of an Opacus export's ``PHASES``."""
    return {float(phase["noise_multiplier"]) for phase in assigned(text, "PHASES")}


def run_flow(url: str, page, folder: Path, *, started: float, screenshots: Path | None = None,
             timeout_s: float = 300.0) -> dict:
    """The flow on an open Playwright ``page``; returns the seconds of each step since ``started``
    (``time.perf_counter()`` when the server was started), the σ the page shows, the downloaded file and the
    validation's verdict."""
    times: dict[str, float] = {}
    wait_ms = timeout_s * 1000
    page.goto(url)
    rounds = page.locator('[data-testid="stMetric"]').filter(has_text="Rounds")
    rounds.wait_for(timeout=wait_ms)
    times["plan shown"] = time.perf_counter() - started
    sigma_metric = page.locator('[data-testid="stMetric"]').filter(has_text="σ (tight)")
    sigma_text = sigma_metric.locator('[data-testid="stMetricValue"]').inner_text().strip()
    button = page.locator('[data-testid="stDownloadButton"] button', has_text="Opacus")
    button.wait_for(timeout=wait_ms)
    if screenshots is not None:
        page.screenshot(path=str(screenshots / SHOTS[0]), full_page=False)
    with page.expect_download(timeout=wait_ms) as download:
        button.click()
    saved = folder / download.value.suggested_filename
    download.value.save_as(saved)
    times["Opacus file saved"] = time.perf_counter() - started
    run = page.get_by_role("button", name="Validate this plan")
    run.scroll_into_view_if_needed()
    run.click()
    verdict = page.locator('[data-testid="stAlert"]').filter(has_text=re.compile(r"^(PASS|FAIL|NO GUARANTEE)"))
    verdict.first.wait_for(timeout=wait_ms)
    page.get_by_text("This result took").wait_for(timeout=wait_ms)  # the section's last line, after its charts
    charts = page.locator('[data-testid="stVegaLiteChart"]')
    times["validation shown"] = time.perf_counter() - started
    if screenshots is not None:
        verdict.first.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / SHOTS[1]), full_page=False)
        charts.last.scroll_into_view_if_needed()
        page.screenshot(path=str(screenshots / SHOTS[2]), full_page=False)
    return {"seconds": times, "sigma_shown": sigma_text, "opacus_file": str(saved),
            "verdict": verdict.first.inner_text().strip(), "charts": charts.count(),
            "claims": page.locator(browser.CLAIMS_TABLE).locator("tbody tr").count(),
            "exceptions": page.locator('[data-testid="stException"]').count()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screenshots", type=Path, help="save the flow's screenshots in this folder")
    parser.add_argument("--json", type=Path, help="save the result here")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds each step may take")
    args = parser.parse_args()
    if not browser.have_chromium():
        sys.exit(f"no Chromium at {browser.CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    started = time.perf_counter()
    with (tempfile.TemporaryDirectory() as folder,
          browser.streamlit_server([sys.executable, "-m", "streamlit", "run", "app.py"]) as url,
          sync_playwright() as playwright):
        times = {"server up": time.perf_counter() - started}
        chromium = browser.launch(playwright)
        page = chromium.new_page(viewport=VIEWPORT, accept_downloads=True)
        result = run_flow(url, page, Path(folder), started=started, screenshots=args.screenshots,
                          timeout_s=args.timeout)
        result["opacus_noise_multipliers"] = sorted(opacus_noise_multipliers(Path(result["opacus_file"]).read_text()))
        chromium.close()
    result["seconds"] = {**times, **result["seconds"]}
    result["load_before"], result["load_after"] = load_before, os.getloadavg()
    total = result["seconds"]["validation shown"]
    print(f"New user's flow with the defaults (2 cores); target: under {TARGET_S:.0f} s from server start")
    for step, seconds in result["seconds"].items():
        print(f"  {step:<20} {seconds:6.1f} s")
    print(f"  {'verdict':<20} {result['verdict'].splitlines()[0]}")
    print(f"  σ shown {result['sigma_shown']}, in the Opacus file {result['opacus_noise_multipliers']}")
    print(f"total {total:.1f} s: {'PASS' if total < TARGET_S else 'FAIL'}; load average (1, 5, 15 min) before "
          f"{', '.join(f'{v:.2f}' for v in result['load_before'])}, after "
          f"{', '.join(f'{v:.2f}' for v in result['load_after'])}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
