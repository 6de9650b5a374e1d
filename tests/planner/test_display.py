"""planner.display: ε shown rounded up, and the accountant named by what it guarantees."""

from __future__ import annotations

from fedplan.planner.display import accountant_label, epsilon_text


def test_epsilon_is_shown_rounded_up():
    assert epsilon_text(0.11152) == "0.1116" and epsilon_text(0.1115) == "0.1115"


def test_only_a_tight_pld_is_called_tight():
    assert accountant_label("pld", "tight") == "PLD, tight"
    assert accountant_label("pld", "upper bound") == "PLD upper bound"  # two-stage sampling
    assert accountant_label("rdp", "upper bound") == "RDP upper bound"
    assert accountant_label("rdp", "tight") == "RDP upper bound"  # never "tight", whatever a caller passes
    assert accountant_label("exact", "tight") == "exact"
    assert accountant_label("participation", "upper bound") == "participation bound"
