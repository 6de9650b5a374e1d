"""The Streamlit pages not yet moved to tests/pages/ (one file per page there), run headless with streamlit.testing."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

def metric(app: AppTest, label_start: str) -> str:
    return next(m.value for m in app.metric if m.label.startswith(label_start))


# ---------------------------------------------------------------- FedSGD-DPC page
FEDSGD_PAGE = str(ROOT / "pages" / "3_FedSGD_DPC.py")


@pytest.fixture
def fedsgd_page() -> AppTest:
    return AppTest.from_file(FEDSGD_PAGE, default_timeout=120).run()


def test_fedsgd_page_shows_the_optimum_and_the_paper_rule(fedsgd_page):
    assert not fedsgd_page.exception and not fedsgd_page.error
    assert metric(fedsgd_page, "T*") == "120" and metric(fedsgd_page, "b*") == "1"
    assert metric(fedsgd_page, "Paper rule") == "(116, 1)"
    fedsgd_page.text_input[8].set_value("0.2").run()
    assert metric(fedsgd_page, "T*") == "480"


def test_fedsgd_page_reports_a_violated_assumption(fedsgd_page):
    fedsgd_page.text_input[3].set_value("30").run()  # μ = 30 > λ = 20
    assert not fedsgd_page.exception
    assert [e.value for e in fedsgd_page.error] == ["smoothness must be a real number in [30, inf); got 20"]


# ---------------------------------------------------------------- validate by simulation
def test_validate_page_runs_the_van_dijk_plan_and_reports_its_claims():
    page = AppTest.from_file(str(ROOT / "pages" / "7_Validate.py"), default_timeout=300).run()
    assert not page.exception and not page.error and not page.dataframe  # nothing runs before the button
    page.text_input[2].set_value("1").run()  # one seed
    next(button for button in page.button if button.label == "Run simulation").click().run()
    assert not page.exception and not page.error
    claims = page.dataframe[0].value.set_index("claim")["result"]
    assert claims["spent epsilon <= planned tight epsilon"] == "PASS"
    assert claims["spent epsilon <= the paper's claimed epsilon"] == "PASS"
    assert float(metric(page, "ε spent")) == pytest.approx(0.1116, abs=1e-4)  # the planner's tight ε
    assert len(page.get("vega_lite_chart")) == 3  # accuracy, loss, delays


def test_validate_page_reports_a_plan_with_no_rounds_as_an_error():
    page = AppTest.from_file(str(ROOT / "pages" / "7_Validate.py"), default_timeout=300).run()
    page.radio[0].set_value("FedSGD-DPC (Zhou): optimal T and b").run()
    next(button for button in page.button if button.label == "Run simulation").click().run()
    assert not page.exception
    assert [e.value for e in page.error] == [
        "the planner's optimum is T = 0 rounds at epsilon = 1 (the noise term dominates U(T, b)); give rounds to "
        "simulate a run anyway, or raise epsilon"]
    page.text_input[3].set_value("-1").run()
    assert [e.value for e in page.error] == ["epsilon must be a real number in (0, inf); got -1"]
