"""planner.display: ε shown rounded up, and the accountant named by what it guarantees."""

from __future__ import annotations

import math

from fedplan.planner.display import accountant_label, epsilon_text, number_text


def test_epsilon_is_shown_rounded_up():
    assert epsilon_text(0.11152) == "0.1116" and epsilon_text(0.1115) == "0.1115"


def test_only_a_tight_pld_is_called_tight():
    assert accountant_label("pld", "tight") == "PLD, tight"
    assert accountant_label("pld", "upper bound") == "PLD upper bound"  # two-stage sampling
    assert accountant_label("rdp", "upper bound") == "RDP upper bound"
    assert accountant_label("rdp", "tight") == "RDP upper bound"  # never "tight", whatever a caller passes
    assert accountant_label("exact", "tight") == "exact"
    assert accountant_label("participation", "upper bound") == "participation bound"


def test_numbers_are_shown_for_people():
    """Grouped thousands and no trailing zeros (MAPA's totals were "2500.0000" and "10000000.0000"), powers of ten
    outside [1e-3, 1e6), and an ε rounded up never shows below its value."""
    assert [number_text(value) for value in (25000, 2500.0, 1e7, 86.51616115989938, 0.1, 2.06e-8, 123456789, 1)] == [
        "25 000", "2 500", "1e7", "86.52", "0.1", "2.06e-8", "1.235e8", "1"]
    assert number_text(86.51616115989938, up=True) == "86.52" and number_text(86.5111, up=True) == "86.52"
    assert number_text(86.5111) == "86.51" and number_text(2.0454542664591975e-05, up=True) == "2.046e-5"
    assert number_text(0.0) == "0" and number_text(math.inf) == "∞"
    assert number_text(0.05, up=True) == "0.05"  # reads back as the same float (its decimal expansion is 0.05000…03)
    for value in (0.30000000000000004, 1 / 3, 2 / 3 * 1e-5, 12345.678, 7.000000000000001e8):
        shown = number_text(value, up=True).replace(" ", "")
        assert float(shown) >= value and float(shown) <= value * (1 + 1e-3)
