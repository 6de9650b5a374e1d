"""Moments-accountant numbers used by the Damaskinos thesis (damaskinos_dpscd.md §4.5, §7.6)."""

from __future__ import annotations

import math

import pytest

from fedplan.bounds import rdp
from fedplan.bounds.search import find_boundary


def ma128(q: float, sigma: float, steps: int, delta: float) -> float:
    return rdp.moments_accountant_epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=delta)[0]


def test_abadi_example():
    # Abadi et al. report ≈1.26; spec: 1.258575 at λ* = 19, identical for λ_max = 32 and 128.
    epsilon, best_lambda = rdp.moments_accountant_epsilon(sample_rate=0.01, noise_multiplier=4.0, steps=10_000,
                                                          delta=1e-5)
    assert epsilon == pytest.approx(1.258575, abs=1e-6)
    assert best_lambda == 19
    assert rdp.moments_accountant_epsilon(sample_rate=0.01, noise_multiplier=4.0, steps=10_000, delta=1e-5,
                                          max_lambda=32)[0] == pytest.approx(epsilon, abs=1e-12)


@pytest.mark.parametrize("sigma, steps, expected", [(2, 10_000, 2.7354), (2, 40_000, 5.7449), (8, 10_000, 0.6118),
                                                    (8, 40_000, 1.2376)])
def test_ma128_table(sigma, steps, expected):
    assert ma128(0.01, sigma, steps, 1e-5) == pytest.approx(expected, abs=5e-5)


def test_classic_conversion_equals_the_moments_accountant():
    # MA with λ ≤ 128 is RDP at orders 2…129 with the classic conversion (spec §4.2).
    orders = [float(a) for a in range(2, 130)]
    one_step = rdp.rdp_poisson_gaussian(sample_rate=0.01, noise_multiplier=4.0, orders=orders)
    classic = rdp.epsilon_from_rdp(rdp=10_000 * one_step, orders=orders, delta=1e-5, conversion="classic")[0]
    assert classic == pytest.approx(ma128(0.01, 4.0, 10_000, 1e-5), rel=1e-12)


def test_epsilon_floor_of_the_moments_accountant():
    # F7: as σ → ∞, ε_MA → ln(1/δ)/λ_max; δ = 1e-3, λ_max = 128: 0.053967.
    assert ma128(0.01, 1e6, 100, 1e-3) == pytest.approx(math.log(1e3) / 128, rel=1e-6)


def calibrate_ma128(epsilon: float, delta: float, q: float, steps: int) -> float:
    found = find_boundary(lambda sigma: ma128(q, sigma, steps, delta), target=epsilon, increasing=False, start=1.0,
                          lower=1e-3, upper=1e4, first_step=1.0, ftol=1e-7, xtol=1e-8)
    return found.safe.x


@pytest.mark.parametrize("epsilon, delta, q, steps, expected", [
    (1.26, 1e-5, 0.01, 10_000, 3.99583),              # MA(δ=1e-5, q=0.01, T=1e4) = 1.26
    (0.1, 1e-3, 1000 / 347_786, 17_389, 14.22328),    # MSD ε=0.1, L=1000 (λ* = λ_max = 128)
    (1.0, 1e-3, 2000 / 347_786, 8694, 2.19541),       # MSD ε=1, L=2000
    (1.0, 1e-3, 1.0, 450, 81.6224),                   # PrimalDP-SCD, q = 1
])
def test_thesis_sigma_calibration(epsilon, delta, q, steps, expected):
    assert calibrate_ma128(epsilon, delta, q, steps) == pytest.approx(expected, rel=2e-5)


def test_full_batch_closed_form_is_a_lower_envelope():
    # F8: with q = 1 the continuous-order optimum gives σ = 81.6051; integer λ can only be larger.
    closed_form = 81.6051
    assert calibrate_ma128(1.0, 1e-3, 1.0, 450) >= closed_form
    t, d = 450, 1e-3
    epsilon_closed = t / (2 * closed_form**2) + math.sqrt(2 * t * math.log(1 / d)) / closed_form
    assert epsilon_closed == pytest.approx(1.0, abs=1e-5)
