"""RDP of the Poisson-subsampled Gaussian: against dp-accounting, quadrature and printed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import integrate

from fedplan.bounds import rdp

ORDERS = np.asarray(rdp.RDP_ORDERS)
INTEGER = ORDERS == np.floor(ORDERS)

sample_rates = st.floats(min_value=1e-5, max_value=0.99)
noise_multipliers = st.floats(min_value=0.3, max_value=200.0)


def log_a_by_quadrature(q: float, sigma: float, alpha: float) -> float:
    """Independent oracle: A_α - 1 = E_{z~N(0,σ²)}[(1 - q + q e^{(2z-1)/(2σ²)})^α - 1] by adaptive quadrature."""
    def integrand(z: float) -> float:
        log_ratio = np.logaddexp(math.log1p(-q), math.log(q) + (2 * z - 1) / (2 * sigma**2))
        log_density = -z * z / (2 * sigma**2) - math.log(sigma * math.sqrt(2 * math.pi))
        if alpha * log_ratio < 700:  # expm1 keeps the digits of a ratio near 1
            return math.exp(log_density) * math.expm1(alpha * log_ratio)
        return math.exp(log_density + alpha * log_ratio)  # far in the tail (q = 1e-5, σ = 0.5, α = 6.6, z = 36)

    value, _ = integrate.quad(integrand, -60 * sigma, alpha + 60 * sigma, epsabs=0, epsrel=1e-12, limit=4000,
                              points=[0.5, 0.5 + alpha])
    return math.log1p(value)


def dp_accounting_epsilon(q: float, sigma: float, steps: int, delta: float) -> float:
    accountant = rdp_privacy_accountant.RdpAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    return accountant.get_epsilon(delta)


def test_reference_point_rdp_epsilon():
    # anchors.md §2.2: dp-accounting 5.632011, Opacus 5.631992, optimal order 4.7.
    epsilon, order = rdp.epsilon_for_segments([(0.01, 1.1, 10_000)], 1e-5)
    assert epsilon == pytest.approx(5.631992, abs=2e-6)
    assert order == 4.7
    assert epsilon <= dp_accounting_epsilon(0.01, 1.1, 10_000, 1e-5)


def test_abadi_example_improved_conversion():
    # damaskinos_dpscd.md §4.5: improved conversion (dp-accounting orders) 1.035490 at α* = 17.
    epsilon, order = rdp.epsilon_for_segments([(0.01, 4.0, 10_000)], 1e-5)
    assert epsilon == pytest.approx(1.035490, abs=1e-6)
    assert order == 17.0


@pytest.mark.parametrize("q, sigma", [(0.01, 1.1), (1e-3, 0.385), (0.1, 120.0), (0.1, 0.5), (0.5, 2.0), (1e-6, 0.5)])
def test_integer_orders_equal_dp_accounting(q, sigma):
    ours = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma)[INTEGER]
    theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma, ORDERS[INTEGER])
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


@pytest.mark.parametrize("q, sigma, alpha", [(0.01, 1.1, 4.7), (0.01, 1.1, 1.5), (1e-3, 0.385, 2.2), (0.1, 0.5, 3.3),
                                             (0.5, 2.0, 6.9), (0.01, 4.0, 10.9), (0.2, 1.0, 1.9)])
def test_fractional_orders_match_quadrature(q, sigma, alpha):
    ours = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=[alpha])[0]
    exact = log_a_by_quadrature(q, sigma, alpha) / (alpha - 1)
    assert ours == pytest.approx(exact, rel=1e-7)
    # dp-accounting 0.6.0 sums absolute values (ERRATA ACC-1): above ours, up to its early stopping.
    theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma, [alpha])[0]
    assert ours <= theirs * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(q=sample_rates, sigma=noise_multipliers, alpha=st.sampled_from([a for a in rdp.RDP_ORDERS if a % 1]))
def test_fractional_orders_never_exceed_the_absolute_value_bound(q, sigma, alpha):
    ours = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=[alpha])[0]
    theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(q, sigma, [alpha])[0]
    # Below log A ~ 1e-8 our rounding margin (~2e-17, added to stay an upper bound) exceeds 1e-7 of the value.
    if math.isfinite(theirs) and theirs * (alpha - 1) > 1e-8:
        assert 0.0 <= ours <= theirs * (1 + 1e-7)


def test_slowly_converging_orders_are_summed_not_dropped():
    # dp-accounting stops after 1000 terms and drops the order (ERRATA ACC-1); the series decays
    # only polynomially for large q and small σ, and we sum it to convergence.
    theirs = rdp_privacy_accountant._compute_rdp_poisson_subsampled_gaussian(0.2, 1.0, [1.1])
    ours = rdp.rdp_poisson_gaussian(sample_rate=0.2, noise_multiplier=1.0, orders=[1.1])[0]
    assert math.isinf(theirs[0])
    assert ours == pytest.approx(log_a_by_quadrature(0.2, 1.0, 1.1) / 0.1, rel=1e-6)


def test_dropping_orders_no_longer_breaks_monotonicity():
    # With dp-accounting's 1000-term cap, order 1.5 is dropped at σ = 0.505 but not at σ = 0.5 and
    # ε rises with more noise (72.370 -> 72.391). Summed to convergence, ε falls as it must.
    low_noise = rdp.epsilon_for_segments([(0.7578125, 0.5, 22)], 1e-5)[0]
    high_noise = rdp.epsilon_for_segments([(0.7578125, 0.505, 22)], 1e-5)[0]
    assert high_noise < low_noise


def test_full_sampling_is_the_gaussian_mechanism():
    orders = np.array([1.5, 2.0, 7.3, 64.0])
    np.testing.assert_allclose(rdp.rdp_poisson_gaussian(sample_rate=1.0, noise_multiplier=2.0, orders=orders),
                               orders / 8.0)


@settings(max_examples=30, deadline=None)
@given(q=sample_rates, sigma=noise_multipliers, steps=st.integers(1, 10**6), delta=st.sampled_from([1e-3, 1e-5, 1e-8]))
def test_windowed_orders_equal_the_full_grid(q, sigma, steps, delta):
    full = rdp.epsilon_from_rdp(rdp=steps * rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma),
                                orders=rdp.RDP_ORDERS, delta=delta)[0]
    windowed = rdp.epsilon_for_segments([(q, sigma, steps)], delta)[0]
    assert windowed >= full * (1 - 1e-11) - 1e-12  # float rounding only
    assert windowed == pytest.approx(full, rel=1e-12, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(q=sample_rates, sigma=noise_multipliers, steps=st.integers(1, 10**5))
def test_epsilon_is_exact_at_its_order_and_never_above_dp_accounting(q, sigma, steps):
    ours, order = rdp.epsilon_for_segments([(q, sigma, steps)], 1e-5)
    assert ours <= dp_accounting_epsilon(q, sigma, steps, 1e-5) + 1e-9
    # The order that sets ε carries the exact RDP (60-digit sum or quadrature), so ε is not optimistic there.
    log_a = log_a_mpmath_integer(q, sigma, int(order)) if order % 1 == 0 else log_a_by_quadrature(q, sigma, order)
    exact = steps * log_a / (order - 1)
    from_exact = rdp.epsilon_from_rdp(rdp=[exact], orders=[order], delta=1e-5)[0]
    assert ours == pytest.approx(from_exact, rel=1e-6, abs=1e-9)


def test_delta_conversion_matches_dp_accounting():
    one_step = rdp.rdp_poisson_gaussian(sample_rate=0.01, noise_multiplier=1.1)
    for epsilon in (0.5, 1.0, 3.0, 8.0):
        ours = rdp.delta_from_rdp(rdp=10_000 * one_step, orders=rdp.RDP_ORDERS, epsilon=epsilon)
        theirs = rdp_privacy_accountant.compute_delta(rdp.RDP_ORDERS, 10_000 * one_step, epsilon)
        assert ours[0] == pytest.approx(theirs[0], rel=1e-12)
        assert ours[1] == theirs[1]
    # anchors.md §2.2 reports 0.329 (dp-accounting's absolute-value bound at order 1.9, ERRATA ACC-1);
    # the exact R(1.9), by quadrature, gives 0.32709, and so do we.
    delta, order = rdp.delta_for_segments([(0.01, 1.1, 10_000)], 1.0)
    assert order == 1.9
    exact_rdp = 10_000 * log_a_by_quadrature(0.01, 1.1, 1.9) / 0.9
    expected = rdp.delta_from_rdp(rdp=[exact_rdp], orders=[1.9], epsilon=1.0)[0]
    assert delta == pytest.approx(expected, rel=1e-6)
    assert delta == pytest.approx(0.32709, abs=1e-5)
    assert delta < 0.3293


def test_epsilon_and_delta_conversions_are_consistent():
    segments = [(0.02, 1.3, 3000)]
    epsilon, _ = rdp.epsilon_for_segments(segments, 1e-6)
    delta, _ = rdp.delta_for_segments(segments, epsilon)
    assert delta <= 1e-6 * (1 + 1e-9)


def test_max_steps_is_exact():
    # anchors.md §2.4: max T with ε ≤ 8 at q = 0.01, σ = 1.1 is 18 503 under RDP.
    steps = rdp.max_steps_for_epsilon(sample_rate=0.01, noise_multiplier=1.1, target_epsilon=8.0, target_delta=1e-5)
    assert steps == 18_503
    assert rdp.epsilon_for_segments([(0.01, 1.1, steps)], 1e-5)[0] <= 8.0
    assert rdp.epsilon_for_segments([(0.01, 1.1, steps + 1)], 1e-5)[0] > 8.0


@settings(max_examples=25, deadline=None)
@given(q=sample_rates, sigma=noise_multipliers, steps=st.integers(1, 10**5))
def test_rdp_epsilon_is_monotone(q, sigma, steps):
    base = rdp.epsilon_for_segments([(q, sigma, steps)], 1e-5)[0]
    assert rdp.epsilon_for_segments([(q, sigma, steps + 1)], 1e-5)[0] >= base
    assert rdp.epsilon_for_segments([(min(1.0, q * 1.01), sigma, steps)], 1e-5)[0] >= base
    assert rdp.epsilon_for_segments([(q, sigma * 1.01, steps)], 1e-5)[0] <= base


def test_composition_of_segments_adds_rdp():
    one = rdp.epsilon_for_segments([(0.01, 1.0, 500), (0.01, 1.0, 500)], 1e-5)[0]
    merged = rdp.epsilon_for_segments([(0.01, 1.0, 1000)], 1e-5)[0]
    assert one == pytest.approx(merged, rel=1e-12)


@pytest.mark.parametrize("kwargs", [dict(sample_rate=0.0, noise_multiplier=1.0),
                                    dict(sample_rate=1.2, noise_multiplier=1.0),
                                    dict(sample_rate=0.1, noise_multiplier=0.0),
                                    dict(sample_rate=float("nan"), noise_multiplier=1.0)])
def test_bad_inputs_raise(kwargs):
    with pytest.raises(ValueError, match="sample_rate|noise_multiplier"):
        rdp.rdp_poisson_gaussian(**kwargs)
    with pytest.raises(ValueError, match="orders"):
        rdp.rdp_poisson_gaussian(sample_rate=0.1, noise_multiplier=1.0, orders=[1.0, 2.0])


def log_a_mpmath_integer(q: float, sigma: float, alpha: int) -> float:
    """Independent oracle at 60 digits: the binomial sum for integer α."""
    import mpmath

    with mpmath.workdps(60):
        q_, s_ = mpmath.mpf(q), mpmath.mpf(sigma)
        total = mpmath.fsum(mpmath.binomial(alpha, k) * (1 - q_) ** (alpha - k) * q_**k
                            * mpmath.exp((k * k - k) / (2 * s_**2)) for k in range(alpha + 1))
        return float(mpmath.log(total))


def log_a_mpmath_fractional(q: float, sigma: float, alpha: float) -> float:
    """Independent oracle at 40 digits: A_α - 1 by quadrature of E_{N(0,σ²)}[(1 - q + q e^{(2z-1)/(2σ²)})^α - 1]."""
    import mpmath

    with mpmath.workdps(40):
        q_, s_, a_ = mpmath.mpf(q), mpmath.mpf(sigma), mpmath.mpf(alpha)

        def integrand(z):
            ratio = 1 - q_ + q_ * mpmath.exp((2 * z - 1) / (2 * s_**2))
            return mpmath.npdf(z, 0, s_) * (ratio**a_ - 1)

        excess = mpmath.quad(integrand, [-mpmath.inf, 0, mpmath.mpf(0.5), 0.5 + a_, mpmath.inf])
        return float(mpmath.log1p(excess))


@settings(max_examples=40, deadline=None)
@given(q=st.floats(1e-9, 0.99), sigma=st.floats(0.3, 100.0), alpha=st.sampled_from([2, 3, 5, 11, 33, 63, 128]))
def test_integer_orders_match_60_digit_arithmetic(q, sigma, alpha):
    ours = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=[float(alpha)])[0]
    exact = log_a_mpmath_integer(q, sigma, alpha) / (alpha - 1)
    assert ours == pytest.approx(exact, rel=1e-10, abs=1e-300)


@settings(max_examples=30, deadline=None)
@given(q=st.floats(1e-9, 0.5), sigma=st.floats(0.5, 50.0), alpha=st.sampled_from([1.1, 1.5, 2.3, 4.7, 9.9]))
@example(q=0.08, sigma=0.8, alpha=1.5)  # the series stopped 3.8e-10 below; its left-out tail is now added
def test_fractional_orders_are_never_below_40_digit_quadrature(q, sigma, alpha):
    ours = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=[alpha])[0]
    exact = log_a_mpmath_fractional(q, sigma, alpha) / (alpha - 1)
    assert ours >= exact * (1 - 4 * np.finfo(float).eps)  # the oracle is rounded once to a double
    chord = rdp._log_a_chord(q, sigma, np.array([alpha]))[0] / (alpha - 1)
    assert ours <= chord  # the series where it resolves the value, else the chord bound


def test_tiny_rdp_values_do_not_round_to_zero():
    # q = 1e-7: A_2 = 1 + q²(e^{1/σ²} - 1) is 1 + 4e-16, which rounds to 1 if summed directly;
    # the KL shortcut would then report ε = 0 at a billion steps (the true ε is about 0.0085).
    assert rdp.rdp_poisson_gaussian(sample_rate=1e-7, noise_multiplier=5.0, orders=[2.0])[0] == pytest.approx(
        math.log1p(1e-14 * math.expm1(1 / 25)), rel=1e-12)
    epsilon, _ = rdp.epsilon_for_segments([(1e-7, 5.0, 10**9)], 1e-5)
    assert epsilon == pytest.approx(dp_accounting_epsilon(1e-7, 5.0, 10**9, 1e-5), rel=1e-6)
    assert epsilon > 0.008


@pytest.mark.parametrize("orders", [tuple(float(a) for a in range(2, 64)) + (128.0, 256.0, 512.0, 1024.0),
                                    rdp.RDP_ORDERS, (1.5, 2.25, 7.5, 31.75)], ids=["integer", "all", "fractional"])
def test_rates_sharing_a_noise_multiplier_compose_as_one_at_a_time(orders):
    """Integer and fractional orders of many rates sharing σ are evaluated together (one row per rate and order);
    each row must be the number its segment gives alone. Rates from 1e-7 (the chord bound takes over) to 0.9 (slow
    series), σ 0.6 and 1.3."""
    segments = ([(0.001 * (1 + i / 10), 1.3, 1 + i % 3) for i in range(70)] + [(1.0, 3.0, 2), (0.02, 3.0, 5)]
                + [(rate, 0.6, 3) for rate in (1e-7, 3e-4, 0.05, 0.5, 0.9)])
    together = rdp._composed_rdp(segments, orders)
    one_at_a_time = sum(steps * rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=orders)
                        for q, sigma, steps in segments)
    np.testing.assert_allclose(together, one_at_a_time, rtol=1e-13)


def test_row_log_sum_exp_keeps_the_digits_of_a_sum_near_its_largest_term():
    from scipy import special

    rows = np.array([[0.0, -40.0], [-np.inf, -np.inf], [-np.inf, 2.0],
                     [5.0, 5.0], [1e-3, -800.0]])
    ours = rdp.log_sum_exp_rows(rows)
    assert ours[1] == -np.inf
    np.testing.assert_array_equal(ours[[0, 2, 3, 4]], special.logsumexp(rows[[0, 2, 3, 4]], axis=1))
    # log(1 + e^-40) = 4.25e-18: a naive log of the sum rounds it to 0 (Newton on the mixtures' loss needs it)
    assert ours[0] == pytest.approx(math.exp(-40), rel=1e-12)


@pytest.mark.filterwarnings("error")
def test_the_smallest_positive_sample_rate_has_fractional_orders_without_an_overflow():
    """1/q - 1 overflowed (RuntimeWarning) at q = 5e-324 (fuzz seed 303, calibrate steps); ln(1/q - 1) is now
    ln(1 - q) - ln q. RDP ≈ α(α-1)q²(e^{1/σ²}-1)/2 is 0 to double precision there (dp-accounting's series does not
    converge at this q and drops every fractional order)."""
    orders = np.array([1.5, 2.5, 7.25])
    ours = rdp.rdp_poisson_gaussian(sample_rate=5e-324, noise_multiplier=1.0, orders=orders)
    assert np.all(np.isfinite(ours)) and np.all(ours >= 0) and np.all(ours <= 1e-300)


@pytest.mark.filterwarnings("error")
def test_a_calibration_whose_rdp_misses_says_so_rather_than_that_there_is_no_rdp():
    from fedplan.bounds import accounting

    with pytest.raises(ValueError, match=r"grid points .*, and its RDP bound does not meet the target anywhere in "
                                         r"the range either; add noise or take fewer steps"):
        accounting.calibrate("steps", target_epsilon=1e-9, target_delta=5e-324, sample_rate=5e-324,
                             noise_multiplier=0.001)
