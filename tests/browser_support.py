"""Shared by the browser tests (``tests/test_browser*.py``): the benchmarks' browser code, and the rule for a
machine without Chromium.

The server and Chromium start-up (``benchmarks/browser.py``) and the scripted widget steps that wait for the rerun
they start (``benchmarks/app.py``: :class:`Text`, :class:`Select`, :class:`Radio`, ``INIT_SCRIPT``, ``act``,
``wait_done``) are the browser benchmark's, loaded by their paths: an installed ``benchmarks`` package would shadow
the folder on import (:func:`tests.test_benchmarks.load_benchmark`).
"""

from __future__ import annotations

import os

import pytest

from tests.test_benchmarks import load_benchmark

browser = load_benchmark("browser")
app_benchmark = load_benchmark("app")


def require_chromium() -> None:
    """Skip the calling test module when Debian's Chromium is absent, unless ``FEDPLAN_REQUIRE_BROWSER=1``
    (``.ci/run`` sets it): then a missing browser is an error."""
    if browser.have_chromium():
        return
    if os.environ.get("FEDPLAN_REQUIRE_BROWSER") == "1":
        raise RuntimeError(f"FEDPLAN_REQUIRE_BROWSER=1 but there is no Chromium at {browser.CHROMIUM}")
    pytest.skip("no Chromium (apt-get install chromium); .ci/run installs it", allow_module_level=True)
