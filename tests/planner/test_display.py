"""planner.display: text-box parsing for the app pages and ε shown rounded up."""

from __future__ import annotations

import pytest

from fedplan.planner.display import epsilon_text, parse_number, parse_whole


def test_parse_number_and_whole():
    assert parse_number("q", "1e-3") == 1e-3
    assert parse_whole("clients", "5") == 5 and parse_whole("clients", "5.0", low=1, high=5) == 5


@pytest.mark.parametrize(("text", "bounds", "message"), [
    ("abc", {}, "clients must be a number; got 'abc'"),
    ("2.5", {}, "clients must be a whole number; got '2.5'"),
    ("0", {"low": 1, "high": 9}, "clients must be a whole number in [1, 9]; got '0'"),
    ("10", {"high": 9}, "clients must be a whole number in [-inf, 9]; got '10'"),
])
def test_bad_whole_numbers_name_the_field_and_range(text, bounds, message):
    with pytest.raises(ValueError) as error:
        parse_whole("clients", text, **bounds)
    assert str(error.value) == message


def test_epsilon_is_shown_rounded_up():
    assert epsilon_text(0.11152) == "0.1116" and epsilon_text(0.1115) == "0.1115"
