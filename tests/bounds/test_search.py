"""The monotone boundary search on curves whose crossing is known in closed form."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.bounds.search import NoBoundaryError, Point, find_boundary


def counting(function):
    calls = []

    def wrapped(x):
        calls.append(x)
        return function(x)
    return wrapped, calls


def test_decreasing_curve_returns_a_safe_point_near_the_crossing():
    curve, calls = counting(lambda sigma: 3.0 / sigma)
    found = find_boundary(curve, target=1.0, increasing=False, start=5.0, lower=1e-3, upper=1e6, ftol=1e-4)
    assert found.safe.value <= 1.0
    assert found.safe.value >= 1.0 - 1e-4
    assert found.safe.x == pytest.approx(3.0, rel=2e-4)
    assert found.safe.x in calls  # the answer was evaluated, not interpolated
    assert len(calls) <= 6


def test_integer_curve_returns_the_exact_largest_safe_integer():
    found = find_boundary(lambda t: math.sqrt(t) / 10, target=2.0, increasing=True, start=1, lower=1, upper=1e9,
                          integer=True)
    assert (found.safe.x, found.unsafe.x) == (400.0, 401.0)


@settings(max_examples=60, deadline=None)
@given(scale=st.floats(0.01, 100.0), power=st.floats(0.3, 3.0), start_factor=st.floats(0.2, 5.0))
def test_power_laws_are_solved_from_any_start(scale, power, start_factor):
    # ε(x) = (x / scale)^power, increasing; the crossing of target 1 is x* = scale.
    found = find_boundary(lambda x: (x / scale) ** power, target=1.0, increasing=True, start=scale * start_factor,
                          lower=1e-9, upper=1e9, ftol=1e-4)
    assert found.safe.value <= 1.0
    assert found.safe.x == pytest.approx(scale, rel=3e-4 / power + 1e-5)


@settings(max_examples=40, deadline=None)
@given(crossing=st.integers(1, 10**7), start=st.integers(1, 10**7))
def test_integer_search_is_exact_from_any_start(crossing, start):
    found = find_boundary(lambda t: t / crossing, target=1.0, increasing=True, start=start, lower=1, upper=1e9,
                          integer=True)
    assert found.safe.x == crossing


def test_digits_grid_makes_short_answers():
    found = find_boundary(lambda x: math.pi / x, target=1.0, increasing=False, start=1.7, lower=1e-3, upper=1e3,
                          digits=6, ftol=1e-9, xtol=1e-12)
    assert found.safe.x == float(f"{found.safe.x:.6g}")
    assert found.unsafe.x == float(f"{found.unsafe.x:.6g}")
    assert (found.unsafe.x, found.safe.x) == (3.14159, 3.1416)  # adjacent grid points around π


def test_known_points_and_slope_save_evaluations():
    curve, calls = counting(lambda x: (x / 7.0) ** 2)
    found = find_boundary(curve, target=1.0, increasing=True, start=6.9, lower=1e-3, upper=1e3,
                          known=(Point(6.0, (6.0 / 7.0) ** 2),), slope=2.0, ftol=1e-3)
    assert found.safe.x == pytest.approx(7.0, rel=1e-3)
    assert len(calls) <= 2


def test_safe_end_pinned_at_the_upper_bound():
    found = find_boundary(lambda q: q, target=2.0, increasing=True, start=0.01, lower=1e-9, upper=1.0)
    assert found.safe.x == 1.0 and found.unsafe is None


def test_no_safe_point_raises():
    with pytest.raises(NoBoundaryError) as failure:
        find_boundary(lambda t: 5.0 + t, target=2.0, increasing=True, start=10, lower=1, upper=1e9, integer=True)
    assert failure.value.point.x == 1.0


def test_before_evaluation_can_stop_the_search():
    class StopError(Exception):
        pass

    def stop():
        raise StopError

    with pytest.raises(StopError):
        find_boundary(lambda x: x, target=1.0, increasing=True, start=0.5, lower=1e-3, upper=10,
                      before_evaluation=stop)


def test_approximate_integer_search_stops_in_the_band():
    # a seeding search on integers need not pin the last integer: it stops once a safe point is within ftol
    evaluate, calls = counting(lambda x: x / 10_000)
    exact = find_boundary(evaluate, target=1.0, increasing=True, start=9_000, lower=1, upper=1e6, integer=True)
    assert exact.safe.x == 10_000
    evaluate, approximate_calls = counting(lambda x: x / 10_000)
    rough = find_boundary(evaluate, target=1.0, increasing=True, start=9_000, lower=1, upper=1e6, integer=True,
                          ftol=2e-3, approximate=True)
    assert 1.0 * (1 - 2e-3) <= rough.safe.value <= 1.0 and rough.safe.x == int(rough.safe.x)
    assert len(approximate_calls) < len(calls)


def test_integer_bracket_closes_on_the_safe_side_of_the_secant():
    # a linear curve crossing at 60 854.6: from the bracket (60 840 safe, 60 866 unsafe) the secant's last integer
    # on the safe side is the answer, and its neighbour closes the bracket: two evaluations
    evaluate, calls = counting(lambda x: 6.0 + (x - 60_854.6) * 1.33e-5)
    found = find_boundary(evaluate, target=6.0, increasing=True, start=60_840, lower=1, upper=1e6, integer=True,
                          known=(Point(60_866.0, evaluate(60_866.0)),))
    assert found.safe.x == 60_854 and found.unsafe.x == 60_855
    assert calls == [60_866.0, 60_840.0, 60_854.0, 60_855.0]  # the known point, the start, then two


def test_a_wrong_signed_secant_from_rounding_noise_falls_back_to_the_given_slope():
    # two unsafe points 1e-5 apart whose noise inverts the secant: the step follows the given slope, not a blind jump
    noisy = {1.0: 1.00010, 1.00001: 1.00012}
    evaluate, calls = counting(lambda x: noisy.get(x, x ** -2.0))
    found = find_boundary(evaluate, target=1.0, increasing=False, start=1.0, lower=0.1, upper=10.0, slope=-2.0,
                          known=(Point(1.00001, 1.00012),), ftol=1e-4, first_step=0.5)
    assert found.safe.value <= 1.0 and len(calls) <= 4
    assert all(x < 1.1 for x in calls)  # a blind jump of log(1.5) would have gone to 1.5
