"""planner.display: ε shown rounded up."""

from __future__ import annotations

from fedplan.planner.display import epsilon_text


def test_epsilon_is_shown_rounded_up():
    assert epsilon_text(0.11152) == "0.1116" and epsilon_text(0.1115) == "0.1115"
