"""Page tests see each answer in one script run: a computation a page hands to app_pages/background.py is waited for
(in the browser a run waits 0.1 s and then shows progress; tests/pages/test_background.py tests that path)."""

import pytest


@pytest.fixture(autouse=True)
def wait_for_background_work(monkeypatch):
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "600")
