"""Laplace mechanism and classical composition: spec vectors and an exact PLD cross-check."""

from __future__ import annotations

import math

import mpmath
import pytest
from dp_accounting.pld import privacy_loss_distribution

from fedplan.bounds import composition
from fedplan.bounds.composition import advanced_composition, optimal_composition_epsilon


def test_laplace_scale_and_epsilon_are_inverse():
    assert composition.laplace_scale(epsilon=0.5, sensitivity=2.0) == 4.0
    assert composition.laplace_epsilon(scale=4.0, sensitivity=2.0) == 0.5


@pytest.mark.parametrize("count, epsilon, expected", [
    (5000, 0.1, 86.5162),   # li_mapa.md TV-A1: T = 25 000, K = 5 edges, δ' = 1e-5
    (3000, 0.1, 57.8339),   # TV-A2
    (2000, 0.1, 42.4938),   # TV-A2
    (3000, 0.5, 1104.4950),  # TV-A2
])
def test_advanced_composition_ledger_vectors(count, epsilon, expected):
    total, delta = composition.advanced_composition(epsilon=epsilon, delta=0.0, count=count, delta_slack=1e-5)
    assert total == pytest.approx(expected, abs=1e-4)
    assert delta == 1e-5


def test_basic_composition_sums():
    assert composition.basic_composition(epsilons=[0.1] * 5000) == pytest.approx((500.0, 0.0))
    assert composition.basic_composition(epsilons=[1.0, 2.0], deltas=[1e-6, 2e-6]) == pytest.approx((3.0, 3e-6))


def test_best_composition_picks_the_smaller_epsilon():
    assert composition.best_composition(epsilon=0.1, delta=0.0, count=5000, delta_slack=1e-5)[2] == "advanced"
    few = composition.best_composition(epsilon=1.0, delta=0.0, count=3, delta_slack=1e-5)
    assert few == (3.0, 0.0, "basic")


@pytest.mark.parametrize("count, epsilon", [(100, 0.1), (1000, 0.05), (20, 0.5)])
def test_classical_bounds_are_never_below_the_exact_laplace_composition(count, epsilon):
    # dp-accounting's PLD of the Laplace mechanism (scale 1/ε, sensitivity 1), composed exactly.
    exact = privacy_loss_distribution.from_laplace_mechanism(parameter=1 / epsilon, value_discretization_interval=1e-4)
    exact_epsilon = exact.self_compose(count).get_epsilon_for_delta(1e-5)
    advanced, _ = composition.advanced_composition(epsilon=epsilon, delta=0.0, count=count, delta_slack=1e-5)
    assert exact_epsilon <= advanced
    assert exact_epsilon <= count * epsilon


@pytest.mark.parametrize("call, message", [
    (lambda: composition.laplace_scale(epsilon=0.0, sensitivity=1.0), r"epsilon must be a real number in \(0, inf\)"),
    (lambda: composition.laplace_epsilon(scale=1.0, sensitivity=-1.0), r"sensitivity"),
    (lambda: composition.advanced_composition(epsilon=0.1, delta=0.0, count=0, delta_slack=1e-5), r"count"),
    (lambda: composition.advanced_composition(epsilon=0.1, delta=0.0, count=5, delta_slack=0.0), r"delta_slack"),
    (lambda: composition.basic_composition(epsilons=[]), r"at least one value"),
    (lambda: composition.basic_composition(epsilons=[1.0], deltas=[0.1, 0.2]), r"one entry per epsilon"),
])
def test_bad_inputs(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_advanced_formula_by_hand():
    k, e, d = 10, 0.2, 1e-6
    expected = math.sqrt(2 * k * math.log(1 / d)) * e + k * e * (math.exp(e) - 1)
    assert composition.advanced_composition(epsilon=e, delta=1e-7, count=k, delta_slack=d) == pytest.approx(
        (expected, 10 * 1e-7 + d))


def _exact_delta(epsilon: float, count: int, total: float) -> mpmath.mpf:
    """δ(ε') of k-fold ε-randomized response summed term by term in 40-digit arithmetic."""
    with mpmath.workdps(40):
        p = mpmath.e**epsilon / (1 + mpmath.e**epsilon)
        return mpmath.fsum(mpmath.binomial(count, j) * p**j * (1 - p) ** (count - j)
                           * (1 - mpmath.e ** (total - (2 * j - count) * epsilon))
                           for j in range(count + 1) if (2 * j - count) * epsilon > total)


@pytest.mark.parametrize(("epsilon", "count", "delta"), [(0.1, 1000, 1e-5), (0.5, 40, 1e-6), (1.0, 3, 1e-3),
                                                          (0.05, 2000, 1e-8)])
def test_optimal_composition_certifies_delta_in_40_digits_and_agrees_with_the_pld(epsilon, count, delta):
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = optimal_composition_epsilon(epsilon=epsilon, count=count, delta=delta)
    assert _exact_delta(epsilon, count, total) <= delta                    # never optimistic
    assert _exact_delta(epsilon, count, total * (1 - 1e-7)) > delta         # and tight
    single = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(epsilon=epsilon, delta=0.0),
                                         value_discretization_interval=epsilon * 1e-4)
    assert single.self_compose(count).get_epsilon_for_delta(delta) == pytest.approx(total, rel=1e-4)
    assert total <= advanced_composition(epsilon=epsilon, delta=0.0, count=count, delta_slack=delta)[0]
    assert total <= count * epsilon


def test_optimal_composition_of_few_mechanisms_can_be_zero_or_basic():
    # one ε-DP mechanism: δ(ε') = (e^ε − e^ε')/(1 + e^ε) for ε' < ε, so δ = 0.1 needs ε' = log(e − 0.1(1 + e))
    assert optimal_composition_epsilon(epsilon=1.0, count=1, delta=0.1) == pytest.approx(
        math.log(math.e - 0.1 * (1 + math.e)), rel=1e-8)
    assert optimal_composition_epsilon(epsilon=1.0, count=1, delta=0.99) == 0.0


def test_optimal_composition_rejects_bad_input():
    with pytest.raises(ValueError, match="delta must be a real number in"):
        optimal_composition_epsilon(epsilon=0.1, count=10, delta=0.0)


@pytest.mark.parametrize("epsilon", [710.0, 800.0, 1e300])
def test_advanced_composition_refuses_an_epsilon_whose_exponential_overflows(epsilon):
    with pytest.raises(ValueError, match="epsilon must be a real number in"):
        advanced_composition(epsilon=epsilon, delta=0.0, count=3, delta_slack=1e-5)


@pytest.mark.parametrize("delta_slack", [5e-324, 1e-310])
def test_advanced_composition_stays_finite_for_a_subnormal_delta_slack(delta_slack):
    """1/δ' overflows to inf below about 5.6e-309; ln(1/δ') = -ln δ' stays finite (fuzz seed 26643737)."""
    log_inverse = float(-mpmath.log(mpmath.mpf(delta_slack)))  # 744.44 at 5e-324
    expected = math.sqrt(2 * 243 * log_inverse) * 0.01 + 243 * 0.01 * math.expm1(0.01)
    total, delta = advanced_composition(epsilon=0.01, delta=0.0, count=243, delta_slack=delta_slack)
    assert total == pytest.approx(expected, rel=1e-12) and math.isfinite(total)
    assert delta == delta_slack
