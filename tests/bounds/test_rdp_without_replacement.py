"""bounds.rdp_without_replacement: Wang-Balle-Kasiviswanathan 2019 Thm 27 (arXiv:1808.00087) against 400-digit
mpmath and against dp-accounting's public RdpAccountant; validation; a pinned ε."""

import functools
import math

import dp_accounting
import mpmath
import numpy as np
import pytest

from fedplan.bounds import rdp
from fedplan.bounds.rdp_without_replacement import (
    MAX_ORDER,
    ORDERS,
    log_even_forward_differences,
    rdp_without_replacement_gaussian,
)

RATES = (1e-4, 1e-3, 0.01, 0.05, 0.3, 0.9)
SIGMAS = (0.3, 0.7, 1.0, 2.0, 5.0, 20.0)
#: Orders checked per (q, σ) cell: small ones, both parities around powers of two, the largest.
CHECK_ORDERS = (2, 3, 4, 5, 8, 13, 32, 33, 64, 91, 128, 255, 256)
DIGITS = 400  # the cancellation in Δ^256 F(0) costs up to 161 digits at σ = 20 (370 nats)
#: Our values are upper bounds: never below the exact ones, above by at most this (relative). The code adds
#: 1e-12 + 1e-14 |log Δ| to log Δ and 1e-12 relative to log A_α; measured at most 1.5e-12 on RDP.
RDP_SLACK = 3e-12


# ---------------------------------------------------------------- exact reference (mpmath)

@functools.cache
def exact_differences(sigma: float, digits: int = DIGITS) -> dict:
    """Δ^k F(0) = Σ_i (-1)^{k-i} C(k,i) F(i), F(i) = e^{(i-1)i/(2σ²)}, even k ≤ 256, in ``digits`` digits."""
    with mpmath.workdps(digits):
        c = 1 / (2 * mpmath.mpf(sigma) ** 2)
        f = [mpmath.exp(c * (i - 1) * i) for i in range(MAX_ORDER + 1)]
        return {k: mpmath.fsum((-1) ** (k - i) * mpmath.binomial(k, i) * f[i] for i in range(k + 1))
                for k in range(2, MAX_ORDER + 1, 2)}


def exact_rdp(q: float, sigma: float, alpha: int):
    """Theorem 27's R(α) with every operation in 400 digits (the formula of the module docstring)."""
    diff = exact_differences(sigma)
    with mpmath.workdps(DIGITS):
        c, q = 1 / (2 * mpmath.mpf(sigma) ** 2), mpmath.mpf(q)
        total = q**2 * mpmath.binomial(alpha, 2) * min(4 * mpmath.expm1(2 * c), 2 * mpmath.exp(2 * c))
        for j in range(3, alpha + 1):
            moment = min(4 * mpmath.sqrt(diff[2 * (j // 2)] * diff[2 * ((j + 1) // 2)]),
                         2 * mpmath.exp(c * (j - 1) * j))
            total += q**j * mpmath.binomial(alpha, j) * moment
        return mpmath.log1p(total) / (alpha - 1)


def relative_errors(values, exact) -> np.ndarray:
    with mpmath.workdps(DIGITS):
        return np.array([float(mpmath.mpf(float(v)) / e - 1) for v, e in zip(values, exact, strict=True)])


# ---------------------------------------------------------------- dp-accounting, public API only

def dp_accounting_rdp(population: int, sample: int, sigma: float, alpha: int, hint: float) -> float:
    """R(α) from a one-order RdpAccountant, read back through ``get_epsilon_and_optimal_order``.

    The event is composed ``count`` times so that count·R(α) ≈ 1e4 dwarfs the conversion's offset; dp-accounting
    0.6.0 converts with the improved bound ε = R + log(1 - 1/α) - log(δα)/(α-1) (Canonne-Kamath-Steinke 2020
    Prop. 12), which is inverted here. ``hint`` (our value) only chooses the count.
    """
    delta = 1e-5
    count = max(1, round(1e4 / hint))
    accountant = dp_accounting.rdp.RdpAccountant(orders=[float(alpha)],
                                                 neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(dp_accounting.SampledWithoutReplacementDpEvent(
        population, sample, dp_accounting.GaussianDpEvent(sigma)), count)
    epsilon, order = accountant.get_epsilon_and_optimal_order(delta)
    assert order == alpha and epsilon > 0
    return (epsilon - math.log1p(-1 / alpha) + math.log(delta * alpha) / (alpha - 1)) / count


# ---------------------------------------------------------------- forward differences

@pytest.mark.parametrize("sigma,digits", [(s, DIGITS) for s in SIGMAS] + [(1e-3, 60), (0.05, 60), (1e3, 700)])
def test_even_forward_differences_against_mpmath(sigma, digits):
    """Never below the exact Δ^k F(0), k = 2 … 256, and above it only by the documented rounding margin.

    dp-accounting's floating-point differencing (measured, not tested: its function is private) is wrong by
    2e-8 relative at σ = 5 from k = 20 on and by up to 1e98 at σ = 20 from k = 8 on; this quadrature is exact to
    the margin at every σ here."""
    ours = log_even_forward_differences(noise_multiplier=sigma)
    exact = exact_differences(sigma, digits)
    assert len(ours) == MAX_ORDER // 2
    with mpmath.workdps(digits):
        for value, k in zip(ours, range(2, MAX_ORDER + 1, 2), strict=True):
            log_exact = mpmath.log(exact[k])
            excess = float(mpmath.mpf(float(value)) - log_exact)  # = log(ours / exact): relative error of Δ^k
            assert 0 <= excess <= 1e-11 + 2e-14 * abs(float(log_exact)), (k, excess)


def test_forward_differences_up_to_an_odd_maximum_round_up_to_even():
    full = log_even_forward_differences(noise_multiplier=2.0)
    short = log_even_forward_differences(noise_multiplier=2.0, max_difference=7)
    assert len(short) == 4  # k = 2, 4, 6, 8
    np.testing.assert_allclose(short, full[:4], rtol=1e-13)


# ---------------------------------------------------------------- Theorem 27 against mpmath and dp-accounting

@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("q", RATES)
def test_rdp_against_mpmath_and_dp_accounting(q, sigma):
    """Against mpmath everywhere (an upper bound, at most 3e-12 above); against dp-accounting's public API to
    1e-9 wherever dp-accounting's own arithmetic is accurate (within 1e-10 of mpmath). Where it is not, ours is
    the closer one. Measured over all orders 2 … 256: dp-accounting is off by 7e-10 at σ = 5, q ≥ 0.3, by 8e-7 at
    σ = 20, q = 0.05 and by a factor up to 8 at σ = 20, q ≥ 0.3; mostly above, but up to 2e-8 below the exact value
    at σ = 20 (7e-10 below at σ = 5), i.e. not an upper bound there."""
    population = 1_000_000
    sample = round(q * population)
    rate = sample / population  # the float dp-accounting uses
    ours = rdp_without_replacement_gaussian(sample_rate=rate, noise_multiplier=sigma, orders=CHECK_ORDERS)
    exact = [exact_rdp(rate, sigma, a) for a in CHECK_ORDERS]
    ours_error = relative_errors(ours, exact)
    assert np.all(ours_error >= 0) and np.all(ours_error <= RDP_SLACK), ours_error
    theirs = [dp_accounting_rdp(population, sample, sigma, a, hint) for a, hint in
              zip(CHECK_ORDERS, ours, strict=True)]
    theirs_error = relative_errors(theirs, exact)
    accurate = np.abs(theirs_error) <= 1e-10
    np.testing.assert_allclose(ours[accurate], np.array(theirs)[accurate], rtol=1e-9)
    assert np.all(ours_error[~accurate] < np.abs(theirs_error[~accurate]))
    if sigma <= 2 or q <= 0.01:  # the region where floating-point differencing keeps its digits
        assert accurate.all(), theirs_error


def test_all_default_orders_against_mpmath_at_large_noise_and_rate():
    """The hardest cell for differencing (σ = 20, q = 0.9), every order 2 … 256."""
    ours = rdp_without_replacement_gaussian(sample_rate=0.9, noise_multiplier=20.0)
    errors = relative_errors(ours, [exact_rdp(0.9, 20.0, a) for a in range(2, MAX_ORDER + 1)])
    assert np.all(errors >= 0) and np.all(errors <= RDP_SLACK)


def test_a_subset_of_orders_gives_the_same_values():
    full = rdp_without_replacement_gaussian(sample_rate=0.05, noise_multiplier=1.3)
    for orders in [(7.0,), (2.0, 3.0), (256.0, 2.0, 100.0)]:
        part = rdp_without_replacement_gaussian(sample_rate=0.05, noise_multiplier=1.3, orders=orders)
        np.testing.assert_allclose(part, full[np.asarray(orders, dtype=int) - 2], rtol=1e-12)


def test_full_sampling_is_the_gaussian_mechanism():
    np.testing.assert_array_equal(rdp_without_replacement_gaussian(sample_rate=1.0, noise_multiplier=2.0),
                                  np.asarray(ORDERS) / 8.0)


def test_default_orders():
    assert MAX_ORDER == 256 and ORDERS == tuple(float(a) for a in range(2, 257))


def test_extreme_noise_stays_finite_and_monotone():
    for sigma in (1e-3, 1e8):
        values = rdp_without_replacement_gaussian(sample_rate=0.5, noise_multiplier=sigma)
        assert np.all(np.isfinite(values)) and np.all(values > 0)
    small = rdp_without_replacement_gaussian(sample_rate=0.01, noise_multiplier=3.0)
    assert np.all(small < rdp_without_replacement_gaussian(sample_rate=0.02, noise_multiplier=3.0))
    assert np.all(small > rdp_without_replacement_gaussian(sample_rate=0.01, noise_multiplier=3.5))


# ---------------------------------------------------------------- a pinned number

def test_pinned_epsilon_of_dp_accounting_0_6_0():
    """N = 1000, m = 50, σ = 1.67263, T = 200, δ = 1e-5, REPLACE_ONE, SampledWithoutReplacementDpEvent:
    dp-accounting 0.6.0 gives ε = 4.6157 (4.615742364909117 at order 5, default orders and orders 2 … 256 alike).
    It converts with the improved bound (Canonne-Kamath-Steinke 2020 Prop. 12), which ``epsilon_from_rdp``
    calls "improved"; the classic conversion (Mironov 2017 Prop. 3) would give 5.2210 at order 6."""
    per_step = rdp_without_replacement_gaussian(sample_rate=50 / 1000, noise_multiplier=1.67263)
    epsilon, order = rdp.epsilon_from_rdp(rdp=200 * per_step, orders=ORDERS, delta=1e-5, conversion="improved")
    assert round(epsilon, 4) == 4.6157 and order == 5
    assert epsilon == pytest.approx(4.615742364909117, rel=1e-9)
    classic, classic_order = rdp.epsilon_from_rdp(rdp=200 * per_step, orders=ORDERS, delta=1e-5,
                                                  conversion="classic")
    assert round(classic, 4) == 5.2210 and classic_order == 6
    accountant = dp_accounting.rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(dp_accounting.SampledWithoutReplacementDpEvent(1000, 50, dp_accounting.GaussianDpEvent(1.67263)),
                       200)
    assert accountant.get_epsilon_and_optimal_order(1e-5)[0] == pytest.approx(epsilon, rel=1e-9)


# ---------------------------------------------------------------- validation and speed

@pytest.mark.parametrize("kwargs,message", [
    (dict(sample_rate=0.0), "sample_rate must be a real number in (0, 1]; got 0"),
    (dict(sample_rate=1.5), "sample_rate must be a real number in (0, 1]; got 1.5"),
    (dict(sample_rate="0.1"), "sample_rate must be a real number in (0, 1]; got '0.1'"),
    (dict(noise_multiplier=1e-4), "noise_multiplier must be a real number in [0.001, 1e+08]; got 0.0001"),
    (dict(noise_multiplier=math.inf), "noise_multiplier must be a real number in [0.001, 1e+08]; got inf"),
    (dict(orders=(2.0, 2.5)), "orders must be integers in [2, 256]; got 2.5"),
    (dict(orders=(1.0, 3.0)), "orders must be integers in [2, 256]; got 1"),
    (dict(orders=(257,)), "orders must be integers in [2, 256]; got 257"),
    (dict(orders=(math.nan,)), "orders must be integers in [2, 256]; got nan"),
    (dict(orders=()), "orders must be a non-empty one-dimensional sequence"),
    (dict(orders=("two",)), "orders must be integers in [2, 256]; got ('two',)"),
])
def test_bad_arguments_name_the_parameter_and_value(kwargs, message):
    with pytest.raises(ValueError) as error:
        rdp_without_replacement_gaussian(**(dict(sample_rate=0.01, noise_multiplier=1.0) | kwargs))
    assert message in str(error.value)


@pytest.mark.parametrize("kwargs,message", [
    (dict(noise_multiplier=0.0), "noise_multiplier must be a real number in [0.001, 1e+08]; got 0"),
    (dict(noise_multiplier=1.0, max_difference=1), "max_difference must be an integer in [2, 256]; got 1"),
    (dict(noise_multiplier=1.0, max_difference=4.5), "max_difference must be an integer in [2, 256]; got 4.5"),
    (dict(noise_multiplier=1.0, max_difference=300), "max_difference must be an integer in [2, 256]; got 300"),
])
def test_forward_differences_validation(kwargs, message):
    with pytest.raises(ValueError) as error:
        log_even_forward_differences(**kwargs)
    assert message in str(error.value)
