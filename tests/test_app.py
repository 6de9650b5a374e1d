"""The Streamlit pages not yet moved to tests/pages/ (one file per page there), run headless with streamlit.testing."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

def metric(app: AppTest, label_start: str) -> str:
    return next(m.value for m in app.metric if m.label.startswith(label_start))


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
