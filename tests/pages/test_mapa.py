"""The MAPA page: the mapa Schedule request built from widgets."""

from __future__ import annotations

from fedplan.planner.tasks.mapa import Schedule
from tests.pages.helpers import error_under, errors, metric, open_page, refusal


def test_mapa_page_shows_the_paper_totals_and_switches_noise_model():
    page = open_page("5_MAPA.py")
    assert not page.exception and not page.error
    assert (metric(page, "ε total"), metric(page, "ε per edge (basic)"), metric(page, "ε per edge (advanced)")) == (
        "2500.0000", "500.0000", "86.5162")  # spec TV-A1
    corrected_stages = int(metric(page, "Stages"))
    page.radio[0].set_value("paper").run()
    assert not page.exception and int(metric(page, "Stages")) > corrected_stages
    page.text_input[5].set_value("1.5").run()
    assert errors(page) == [refusal(Schedule, iterations=25000, initial_gap=100, sensitivity_decay=1.5)]
    assert error_under(page, "Sensitivity decay θ") == errors(page)[0]


def test_mapa_page_takes_one_upload_epsilon_per_edge():
    page = open_page("5_MAPA.py")
    page.text_input[0].set_value("0.1 0.1 0.1 0.1 0.2").run()  # as on the command line: one value per edge
    assert not page.exception and not page.error
    assert metric(page, "ε total") == "5000.0000"  # basic composition over T uploads at the largest ε
    page.text_input[0].set_value("0.1, 0.2").run()
    assert errors(page) == [refusal(Schedule, iterations=25000, initial_gap=100, upload_epsilon=(0.1, 0.2))]
    assert error_under(page, "ε per upload") == errors(page)[0]
