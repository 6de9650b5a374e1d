"""The Damaskinos page: DpscdCalibrate, StalenessBeta and ByzantineMaxF requests built from widgets, and the exports.

Printed numbers: spec ``damaskinos_dpscd.md`` L476-478 (MSD: q = 0.00287533, T = 17389, σ = 14.22328 with MA128,
7.83913 with RDP); AdaSGD's β = 2 ln(1 + τ_thres/2)/τ_thres (thesis L612); Byzantine capacities at n = 19.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from fedplan.planner.schedule import schedule_from_dict
from fedplan.planner.tasks.damaskinos import ByzantineMaxF, DpscdCalibrate, StalenessBeta
from tests.pages.helpers import (
    capture_downloads,
    charts,
    error_under,
    errors,
    metric,
    open_page,
    refusal,
    tables,
)

MSD = dict(target_epsilon=0.1, target_delta=1e-3, examples=347786, epochs=50, batch_size=1000)
EPSILON_KEY, EPOCHS_KEY = "dpscd-epsilon", "dpscd-epochs"


@pytest.fixture
def page():
    return open_page("6_Damaskinos.py")


def shown_texts(page) -> str:
    return "\n".join(element.value for kind in ("caption", "markdown", "error", "warning", "info")
                     for element in page.get(kind))


def test_damaskinos_page_dampening_and_byzantine_table(page):
    assert not page.exception and not page.error
    assert metric(page, "β") == "0.324318"
    table = tables(page)[0].set_index("rule")["max f"]
    assert (table["multi-krum"], table["bulyan"], table["kardam"]) == ("8", "4", "6")
    page.text_input[5].set_value("-3").run()
    assert refusal(StalenessBeta, staleness_threshold=-3) == (
        "staleness_threshold must be a real number in (0, inf); got -3")
    assert errors(page) == ["τ_thres must be a real number in (0, inf); got -3"]  # the box's label
    assert error_under(page, "τ_thres") == errors(page)[0]
    page.text_input[0].set_value("0").run()
    assert refusal(DpscdCalibrate, **{**MSD, "target_epsilon": 0}).startswith("target_epsilon must be")
    assert errors(page) == ["ε must be a real number in [1e-09, inf); got 0",
                            "τ_thres must be a real number in (0, inf); got -3"]


def test_a_staleness_threshold_beyond_the_law_is_refused_under_its_box_with_the_largest_one_click_away(page):
    page.text_input[5].set_value("1e9").run()
    assert errors(page) == [refusal(StalenessBeta, staleness_threshold=1e9).replace("staleness_threshold", "τ_thres")]
    assert "staleness_mean defaults to τ_thres/2" in errors(page)[0]
    assert error_under(page, "τ_thres") == errors(page)[0]  # the law's mean and std follow τ_thres on this page
    assert metric(page, "σ (MA128") == "14.2233" and len(tables(page)) == 1  # the other tabs stay
    next(button for button in page.button if button.label.startswith("Set τ_thres")).click().run()
    assert not page.error and page.text_input[5].value == "10000000"
    assert float(metric(page, "β")) == pytest.approx(2 * math.log(1 + 5e6) / 1e7, abs=5e-7)  # L612, shown at 6 dp


def test_a_batch_larger_than_the_data_is_refused_with_the_data_size_one_click_away(page):
    page.text_input[2].set_value("500").run()  # N = 500 < L = 1000
    assert refusal(DpscdCalibrate, **{**MSD, "examples": 500}).startswith("batch_size must be")
    assert errors(page) == ["Batch size L must be an integer in [1, 500] (at most examples); got 1000"]
    assert error_under(page, "Batch size L (marked on the chart)") == errors(page)[0]
    next(button for button in page.button if button.label == "Set batch size L to N = 500").click().run()
    assert not page.error and page.text_input[4].value == "500"
    assert metric(page, "Iterations T") == "50"  # ⌊50 · 500/500⌋


def test_dpscd_tab_shows_the_authors_sigma_of_the_msd_setting(page):
    assert metric(page, "σ (MA128") == "14.2233"  # thesis: N = 347 786, 50 epochs, δ = 1e-3, ε = 0.1, L = 1000
    assert metric(page, "σ (RDP upper bound)") == "7.83916"  # spec L478: 7.83913 (6 digits, rounded up)
    assert metric(page, "Iterations T") == "17389"
    page.text_input[4].set_value("400000").run()  # L > N: the request's relation, under the batch box
    assert errors(page) == ["Batch size L must be an integer in [1, 347786] (at most examples); got 400000"]
    assert error_under(page, "Batch size L (marked on the chart)") == errors(page)[0]


def test_an_epsilon_below_ma128s_floor_is_explained_with_controls_on_the_page(page):
    page.text_input[0].set_value("1e-4").run()  # the ε box
    assert not page.exception and not page.error
    assert metric(page, "σ (MA128") == "none" and float(metric(page, "σ (RDP upper bound)")) > 14.2233
    text = shown_texts(page)
    assert "accountant 'rdp'" not in text and "'pld'" not in text  # no advice about a control the page lacks
    floor = math.log(1 / 1e-3) / 128  # 0.0539668
    assert f"ln(1/δ)/128 = {floor:.4g}" in text and "Raise ε" in text
    nearest = next(button for button in page.button if button.label.startswith("Set ε to"))
    nearest.click().run()
    assert page.text_input(key=EPSILON_KEY).value == "0.054" and 0.054 > floor
    assert float(metric(page, "σ (MA128")) > float(metric(page, "σ (RDP upper bound)")) > 7.83916  # ε < 0.1


def test_a_fraction_of_an_epoch_keeps_every_tab_and_one_error_under_epochs(page):
    page.text_input[3].set_value("0.01").run()  # the epochs box
    assert not page.exception and not page.error
    assert metric(page, "Iterations T") == str(math.floor(0.01 * 347786 / 1000))  # 3
    spec, frames = charts(page)[0]  # the σ chart (the dampening tab draws the other)
    drawn = set(frames[0]["batch size L"])
    assert drawn == {L for L in (100, 200, 500, 1000, 2000) if 0.01 * 347786 // L >= 1}
    assert "L = 5,000, 10,000 give no iteration at E = 0.01" in shown_texts(page)
    assert metric(page, "β") == "0.324318" and len(tables(page)) == 1  # the other tabs are untouched
    page.text_input[4].set_value("5000").run()  # the plan's own T = 0
    assert refusal(DpscdCalibrate, **{**MSD, "epochs": 0.01, "batch_size": 5000}).startswith(
        "epochs=0.01 with examples=347786 and batch_size=5000 gives")
    assert errors(page) == ["Epochs E = 0.01 with Examples N = 347786 and Batch size L = 5000 gives T = "
                            "floor(epochs*N/L) = 0 iterations; need at least 1"]
    assert error_under(page, "Epochs E") == errors(page)[0]
    assert metric(page, "β") == "0.324318" and len(tables(page)) == 1
    fix = next(button for button in page.button if button.label.startswith("Set epochs to"))
    fix.click().run()
    assert page.text_input(key=EPOCHS_KEY).value == "0.0144" and not page.error  # 5000/347786 = 0.014377
    assert metric(page, "Iterations T") == "1" and "One iteration" in shown_texts(page)


def test_each_tab_exports_json_and_csv_and_the_dpscd_schedule_is_one_row_per_phase(monkeypatch):
    files = capture_downloads(monkeypatch)
    assert not open_page("6_Damaskinos.py").exception
    assert set(files) == {"dpscd_schedule.json", "dpscd_schedule.csv", "dpscd_sigma.csv", "dampening.json",
                          "dampening.csv", "byzantine.json", "byzantine.csv"}
    schedule = schedule_from_dict(json.loads(files["dpscd_schedule.json"]()))
    (start, values), = schedule.change_points
    assert schedule.rounds == 17389 and values["sample_rate"] == pytest.approx(0.00287533, rel=1e-5)
    assert values["noise_multiplier"] == pytest.approx(7.83913, rel=1e-5)  # spec L478
    lines = files["dpscd_schedule.csv"]().splitlines()
    assert len(lines) == 5 and lines[4].startswith("0,17389,")  # one phase, not 17 389 identical rows
    sigma = list(csv.DictReader(io.StringIO(files["dpscd_sigma.csv"]())))
    assert len(sigma) == 2 * 7
    ma128 = {int(row["batch size L"]): float(row["σ"]) for row in sigma if row["accountant"] == "MA128 (the thesis)"}
    assert ma128[1000] == pytest.approx(14.22328, abs=1e-5)  # spec L476
    assert json.loads(files["dampening.json"]())["beta"] == pytest.approx(2 * math.log(7) / 12, rel=1e-12)
    curves = list(csv.DictReader(io.StringIO(files["dampening.csv"]())))
    at_crossing = next(row for row in curves if float(row["staleness τ"]) == 6)
    assert float(at_crossing["AdaSGD e^(−βτ)"]) == pytest.approx(1 / 7, rel=1e-12)  # meets 1/(1+τ) at τ_thres/2
    assert float(at_crossing["DynSGD 1/(1+τ)"]) == pytest.approx(1 / 7, rel=1e-12) and len(curves) == 97
    byz = {row["rule"]: row["max f"] for row in csv.DictReader(io.StringIO(files["byzantine.csv"]()))}
    assert (byz["multi-krum"], byz["bulyan"], byz["kardam"]) == ("8", "4", "6")
    assert json.loads(files["byzantine.json"]())["workers"] == 19


def test_byzantine_tab_refuses_no_workers_and_says_which_rules_need_more(page):
    page.text_input[6].set_value("2").run()
    assert not page.error
    table = tables(page)[0].set_index("rule")
    assert table.loc["averaging", "max f"] == "0" and table.loc["krum", "source"].startswith("Workers n must be >= 3")
    page.text_input[6].set_value("0").run()
    assert refusal(ByzantineMaxF, rule="krum", workers=0) == "workers must be an integer in [1, 1e+12]; got 0"
    assert errors(page) == ["Workers n must be an integer in [1, 1e+12]; got 0"]
    assert error_under(page, "Workers n") == errors(page)[0]
