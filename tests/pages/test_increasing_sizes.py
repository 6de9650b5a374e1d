"""The increasing-sample-sizes page: the VandijkSelect request built from widgets, and √T·σ against p."""

from __future__ import annotations

import re

import pytest

from fedplan.bounds import vandijk
from fedplan.planner.tasks.vandijk import VandijkSelect
from tests.pages.helpers import error_under, errors, metric, open_page, refusal

MAIN_TEXT = dict(initial_size=16, client_size=10_000, grad_computations=25_000, noise_multiplier=8, target_epsilon=1,
                 growth_exponent=1, r0="1/e", no_pld=True)


@pytest.fixture
def page():
    return open_page("2_Increasing_sample_sizes.py")


def test_corrected_plan_of_the_main_text_example(page):
    assert not page.exception and not page.error
    assert metric(page, "Rounds") == "185 / 185" and metric(page, "Constant-size rounds") == "1563"
    assert float(metric(page, "ε (RDP upper bound)")) == pytest.approx(0.1253, abs=1e-4)


def test_increasing_sizes_page_marks_the_transitions_of_the_noise_curve(page):
    text = next(m.value for m in page.markdown if m.value.startswith("Transitions:"))
    shown = [float(value) for value in re.findall(r"K⁺?⁻?\) = ([0-9.]+)", text)]
    # the plan's m = 12.321 and γ = 0.0666 (rounded here, hence the tolerance)
    expected = vandijk.transition_exponents(initial_size=16, offset=12.321, client_size=10_000, epsilon=1, sigma=8,
                                            grad_computations=100_000, gamma=0.0666, p_max=2.0)
    assert shown == pytest.approx([expected["p_minus"][0], expected["p_plus"][0]], abs=2e-4)
    page.text_input[7].set_value("25000").run()  # K = 25 000: K stays below K⁻ for every p in (0, 2]
    assert any(m.value.startswith("Transitions: none in (0, 2]") for m in page.markdown)
    page.text_input[7].set_value("10").run()  # the curve's K is checked as the plan's: K ≥ s₀
    assert errors(page) == [refusal(VandijkSelect, **{**MAIN_TEXT, "grad_computations": 10})]
    assert error_under(page, "Gradient computations K for this curve") == errors(page)[0]


def test_paper_variant_shows_its_failed_hypothesis(page):
    page.radio[0].set_value("paper").run()
    assert not page.exception and not page.error
    assert metric(page, "Rounds") == "195 / 183" and metric(page, "Paper's δ") == "5.6e-08"
    assert any("hypothesis of the theorem fails" in w.value for w in page.warning)


def test_increasing_sizes_page_shows_the_requests_message_under_its_widget(page):
    page.text_input[3].set_value("0.5").run()
    assert not page.exception
    assert errors(page) == [refusal(VandijkSelect, **{**MAIN_TEXT, "noise_multiplier": 0.5})]
    assert errors(page) == [  # the run's error (the selection fails), under the widget of the r0 it names
        "r0 = 0.367879 at sigma = 0.5 violates (16)'s hypotheses: u0 < 1 fails, 6.49228 < 1; "
        "u1 < 1 fails, 35.2957 < 1; raise sigma or lower r0"]
    assert error_under(page, "r0: r0(sigma), 1/e or a number") == errors(page)[0]
    page.text_input[6].set_value("r0(sigma)").run()
    assert errors(page) == [refusal(VandijkSelect, **{**MAIN_TEXT, "noise_multiplier": 0.5, "r0": "r0(sigma)"})]
    assert error_under(page, "Noise multiplier σ") == errors(page)[0]
    page.text_input[0].set_value("x").run()
    assert errors(page) == ["initial_size must be a whole number such as 10000 or 1e4; got 'x'"]
