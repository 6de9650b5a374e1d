"""Validation messages name the parameter, the allowed range and the value."""

from __future__ import annotations

import pytest

from fedplan.bounds.validation import check_choice, check_int, check_real


def test_real_intervals_and_messages():
    assert check_real("q", 1, low=0, high=1, low_open=True) == 1.0
    with pytest.raises(ValueError, match=r"^q must be a real number in \(0, 1\]; got 0$"):
        check_real("q", 0.0, low=0, high=1, low_open=True)
    with pytest.raises(ValueError, match=r"^x must be a real number in \(-inf, inf\); got inf$"):
        check_real("x", float("inf"))
    with pytest.raises(ValueError, match=r"^x must be a real number in \[0, inf\); got 'a'$"):
        check_real("x", "a", low=0)
    with pytest.raises(ValueError, match=r"got True"):
        check_real("x", True)


def test_integers_accept_integral_floats_only():
    assert check_int("steps", 1e4, low=1) == 10_000
    with pytest.raises(ValueError, match=r"^steps must be an integer in \[1, inf\); got 2.5$"):
        check_int("steps", 2.5, low=1)
    with pytest.raises(ValueError, match=r"^steps must be an integer in \[1, 10\]; got 11$"):
        check_int("steps", 11, low=1, high=10)
    with pytest.raises(ValueError, match=r"got nan"):
        check_int("steps", float("nan"))


def test_choices_are_listed():
    assert check_choice("accountant", "rdp", ("pld", "rdp")) == "rdp"
    with pytest.raises(ValueError, match=r"^accountant must be one of 'pld', 'rdp'; got 'prv'$"):
        check_choice("accountant", "prv", ("pld", "rdp"))


def test_numpy_scalars_and_huge_numbers_take_the_same_checks():
    """A float (NumPy's included) and a plain int skip the ABC checks (the bounds' inner loops): same answers."""
    import numpy as np

    value = check_real("sigma", np.float64(1.5), low=0)
    assert value == 1.5 and type(value) is float
    with pytest.raises(ValueError, match=r"^sigma must be a real number in \(0, inf\); got nan$"):
        check_real("sigma", np.float64("nan"), low=0, low_open=True)
    with pytest.raises(ValueError, match=r"^x must be a real number in \[0, 1\]; got 1e\+400$"):
        check_real("x", 10**400, low=0, high=1)
    assert check_real("x", np.float32(0.5)) == 0.5 and check_int("steps", np.int64(7), low=1) == 7
    with pytest.raises(ValueError, match=r"^steps must be an integer in \[1, inf\) given exactly; got 1e\+23, beyond"):
        check_int("steps", 1e23, low=1)
    with pytest.raises(ValueError, match=r"^steps must be an integer in \[1, inf\); got True$"):
        check_int("steps", True, low=1)
