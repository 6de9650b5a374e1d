"""The Damaskinos page: DpscdCalibrate, StalenessBeta and ByzantineMaxF requests built from widgets."""

from __future__ import annotations

import pytest

from fedplan.planner.tasks.damaskinos import ByzantineMaxF, DpscdCalibrate, StalenessBeta
from tests.pages.helpers import error_under, errors, metric, open_page, refusal

MSD = dict(target_epsilon=0.1, target_delta=1e-3, examples=347786, epochs=50, batch_size=1000)


@pytest.fixture
def page():
    return open_page("6_Damaskinos.py")


def test_damaskinos_page_dampening_and_byzantine_table(page):
    assert not page.exception and not page.error
    assert metric(page, "β") == "0.324318"
    table = page.dataframe[0].value.set_index("rule")["max f"]
    assert (table["multi-krum"], table["bulyan"], table["kardam"]) == (8, 4, 6)
    page.text_input[5].set_value("-3").run()
    assert errors(page) == [refusal(StalenessBeta, staleness_threshold=-3)]
    assert error_under(page, "τ_thres") == errors(page)[0]
    page.text_input[0].set_value("0").run()
    assert errors(page) == [refusal(DpscdCalibrate, **{**MSD, "target_epsilon": 0}),
                            refusal(StalenessBeta, staleness_threshold=-3)]


def test_dpscd_tab_shows_the_authors_sigma_of_the_msd_setting(page):
    assert metric(page, "σ (MA128") == "14.2233"  # thesis: N = 347 786, 50 epochs, δ = 1e-3, ε = 0.1, L = 1000
    assert float(metric(page, "σ (RDP)")) < 14.2233 and metric(page, "Iterations T") == "17389"
    page.text_input[4].set_value("400000").run()  # L > N: the request's relation, under the batch box
    assert errors(page) == [refusal(DpscdCalibrate, **{**MSD, "batch_size": 400_000})]
    assert error_under(page, "Batch size L (marked on the chart)") == errors(page)[0]


def test_byzantine_tab_refuses_no_workers_and_says_which_rules_need_more(page):
    page.text_input[6].set_value("2").run()
    assert not page.error
    table = page.dataframe[0].value.set_index("rule")
    assert table.loc["averaging", "max f"] == 0 and table.loc["krum", "source"].startswith("workers must be >= 3")
    page.text_input[6].set_value("0").run()
    assert errors(page) == [refusal(ByzantineMaxF, rule="krum", workers=0)]
    assert error_under(page, "Workers n") == errors(page)[0]
