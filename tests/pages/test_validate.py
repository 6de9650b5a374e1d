"""The validation page: ValidateVandijk and ValidateFedsgdDpc requests built from widgets, run on a click."""

from __future__ import annotations

import pytest

from fedplan.planner.tasks.validate import ValidateFedsgdDpc
from tests.pages.helpers import error_under, errors, metric, open_page, refusal

ZHOU = dict(mechanism="laplace", clients=5, seeds=(0, 1), n_samples=62500, target_epsilon=1, target_delta=1e-6)


def run_button(page):
    return next(button for button in page.button if button.label == "Run simulation")


def test_validate_page_runs_the_van_dijk_plan_and_reports_its_claims():
    page = open_page("7_Validate.py", timeout=300)
    assert not page.exception and not page.error and not page.dataframe  # nothing runs before the button
    page.text_input[2].set_value("1").run()  # one seed
    run_button(page).click().run()
    assert not page.exception and not page.error
    claims = page.dataframe[0].value.set_index("claim")["result"]
    assert claims["spent epsilon <= planned tight epsilon"] == "PASS"
    assert claims["spent epsilon <= the paper's claimed epsilon"] == "PASS"
    assert float(metric(page, "ε spent")) == pytest.approx(0.1116, abs=1e-4)  # the planner's tight ε
    assert len(page.get("vega_lite_chart")) == 3  # accuracy, loss, delays


def test_validate_page_reports_a_plan_with_no_rounds_as_an_error():
    page = open_page("7_Validate.py", timeout=300)
    page.radio[0].set_value("FedSGD-DPC (Zhou): optimal T and b").run()
    run_button(page).click().run()
    assert not page.exception
    assert errors(page) == [refusal(ValidateFedsgdDpc, **ZHOU)]  # the run's error: at the top of the inputs
    assert errors(page) == [
        "the planner's optimum is T = 0 rounds at target_epsilon = 1 (the noise term dominates U(T, b)); give rounds "
        "to simulate a run anyway, or raise target_epsilon"]
    page.text_input[3].set_value("-1").run()
    assert errors(page) == [refusal(ValidateFedsgdDpc, **{**ZHOU, "target_epsilon": -1})]
    assert error_under(page, "ε") == errors(page)[0]


def test_validate_page_caps_the_runs():
    page = open_page("7_Validate.py", timeout=300)
    page.text_input[2].set_value("6").run()
    assert errors(page) == ["seeds must be an integer in [1, 5]; got 6"]
    assert error_under(page, "Seeds") == errors(page)[0] and not [b for b in page.button if b.label == "Run simulation"]
    page.text_input[2].set_value("2")
    page.text_input[0].set_value("1e6").run()  # counts parse as on the command line; the page caps them
    assert errors(page) == ["n_samples must be an integer in [100, 200000]; got 1000000"]
