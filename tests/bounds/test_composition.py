"""Laplace mechanism and classical composition: spec vectors and an exact PLD cross-check."""

from __future__ import annotations

import math

import pytest
from dp_accounting.pld import privacy_loss_distribution

from bounds import composition


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
