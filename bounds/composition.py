"""The Laplace mechanism and the classical composition theorems.

Used where a paper states pure ε-DP per step and composes by hand (Li et al. MAPA L387,
Zhou et al. Thm 1): the Laplace mechanism with scale ``b`` on a query of L1 sensitivity ``Δ``
is ``(Δ/b, 0)``-DP (Dwork & Roth 2014, Thm 3.6). Composition of mechanisms:

* basic: ``(Σ ε_i, Σ δ_i)`` (Dwork & Roth, Thm 3.16);
* advanced: ``k`` mechanisms each ``(ε, δ)``-DP are ``(ε', kδ + δ')``-DP with
  ``ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε - 1)`` for any ``δ' > 0`` (Dwork & Roth, Thm 3.20);
* optimal: the exact ε(δ) of ``k`` pure ε-DP mechanisms in the worst case, which is ``k``-fold
  randomized response (Kairouz, Oh & Viswanath 2015, Thm 3.3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedplan.bounds.validation import check_int, check_real

#: Largest per-mechanism ε of advanced composition: e^ε overflows a float above ~709.78.
MAX_ADVANCED_EPSILON = 700.0


def laplace_epsilon(*, scale: float, sensitivity: float) -> float:
    """ε of the Laplace mechanism with noise scale ``b`` and L1 sensitivity ``Δ``: ``ε = Δ / b``."""
    scale = check_real("scale", scale, low=0.0, low_open=True)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    return sensitivity / scale


def laplace_scale(*, epsilon: float, sensitivity: float) -> float:
    """Noise scale ``b = Δ / ε`` that makes the Laplace mechanism ε-DP."""
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    sensitivity = check_real("sensitivity", sensitivity, low=0.0, low_open=True)
    return sensitivity / epsilon


def basic_composition(*, epsilons: Sequence[float], deltas: Sequence[float] | None = None) -> tuple[float, float]:
    """``(Σ ε_i, Σ δ_i)`` of a sequence of mechanisms (Dwork & Roth, Thm 3.16)."""
    if len(epsilons) == 0:
        raise ValueError("epsilons must contain at least one value; got an empty sequence")
    deltas = [0.0] * len(epsilons) if deltas is None else list(deltas)
    if len(deltas) != len(epsilons):
        raise ValueError(f"deltas must have one entry per epsilon ({len(epsilons)}); got {len(deltas)}")
    total_epsilon = sum(check_real("epsilons[i]", value, low=0.0) for value in epsilons)
    total_delta = sum(check_real("deltas[i]", value, low=0.0, high=1.0) for value in deltas)
    return total_epsilon, min(total_delta, 1.0)


def advanced_composition(*, epsilon: float, delta: float, count: int, delta_slack: float) -> tuple[float, float]:
    """``(ε', kδ + δ')`` for ``count = k`` mechanisms each ``(ε, δ)``-DP (Dwork & Roth, Thm 3.20).

    ``ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε - 1)``. For small k this can exceed the basic ``kε``;
    :func:`best_composition` returns the smaller of the two. ``ln(1/δ')`` is taken as ``-ln δ'``, which stays finite
    for every positive δ' (``1/δ'`` overflows below about 5.6e-309).
    """
    epsilon = check_real("epsilon", epsilon, low=0.0, high=MAX_ADVANCED_EPSILON)
    delta = check_real("delta", delta, low=0.0, high=1.0)
    count = check_int("count", count, low=1)
    delta_slack = check_real("delta_slack", delta_slack, low=0.0, high=1.0, low_open=True, high_open=True)
    total = math.sqrt(-2 * count * math.log(delta_slack)) * epsilon + count * epsilon * math.expm1(epsilon)
    return total, min(count * delta + delta_slack, 1.0)


def best_composition(*, epsilon: float, delta: float, count: int, delta_slack: float) -> tuple[float, float, str]:
    """The smaller-ε of basic and advanced composition of ``count`` identical ``(ε, δ)`` mechanisms.

    Returns ``(ε_total, δ_total, "basic" | "advanced")``. Both are valid, so taking the smaller
    ε (at its own δ) is valid too.
    """
    advanced = advanced_composition(epsilon=epsilon, delta=delta, count=count, delta_slack=delta_slack)
    basic = (count * epsilon, min(count * delta, 1.0))
    return (*advanced, "advanced") if advanced[0] < basic[0] else (*basic, "basic")


def randomized_response_delta(*, epsilon: float, count: int, total_epsilon: float) -> float:
    """δ(ε') of k-fold ε-randomized response, the worst case of k pure ε-DP mechanisms (KOV 2015, Thm 3.3).

    With j ~ Bin(k, e^ε/(1+e^ε)) positive outcomes the privacy loss is L = (2j − k)ε, and
    δ(ε') = E[(1 − e^{ε' − L})₊] (the hockey-stick divergence).
    """
    from scipy.stats import binom

    positives = np.arange(count + 1)
    loss = (2 * positives - count) * epsilon
    above = loss > total_epsilon
    weights = np.exp(binom.logpmf(positives[above], count, -math.expm1(-epsilon) / -math.expm1(-2 * epsilon)))
    return float(np.sum(weights * -np.expm1(total_epsilon - loss[above])))


def optimal_composition_epsilon(*, epsilon: float, count: int, delta: float) -> float:
    """The smallest ε' with ``count`` pure ε-DP mechanisms (ε', δ)-DP, for every such mechanism.

    Any ε-DP mechanism is dominated by randomized response with loss ±ε (Kairouz, Oh & Viswanath 2015,
    Thm 3.3), so :func:`randomized_response_delta` is exact for the worst case. ε' is its root, moved up by
    a relative 1e-9 (and re-checked) so that the floating-point root is never below the true one.
    """
    from scipy.optimize import brentq

    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    count = check_int("count", count, low=1)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)

    def excess(total: float) -> float:
        return randomized_response_delta(epsilon=epsilon, count=count, total_epsilon=total) - delta

    if excess(0.0) <= 0:
        return 0.0
    root = brentq(excess, 0.0, count * epsilon, xtol=1e-13, rtol=1e-13)
    total = root * (1 + 1e-9) + 1e-12
    if excess(total) > 0:
        raise ArithmeticError(f"optimal composition root {root!r} does not certify delta = {delta}")
    return total


def group_privacy(*, epsilon: float, delta: float, group_size: int) -> tuple[float, float]:
    """(kε, k·e^{(k-1)ε}·δ): what an (ε, δ)-DP mechanism guarantees for data sets that differ in k records
    (group privacy, Vadhan 2017 "The Complexity of Differential Privacy", Lemma 2.2), e.g. all k examples of one
    user when training protects one example."""
    epsilon = check_real("epsilon", epsilon, low=0.0)
    delta = check_real("delta", delta, low=0.0, high=1.0)
    k = check_int("group_size", group_size, low=1)
    return k * epsilon, min(1.0, k * math.exp((k - 1) * epsilon) * delta)


def per_member_budget(*, epsilon: float, delta: float, group_size: int) -> tuple[float, float]:
    """The per-record (ε/k, δ / (k·e^{(k-1)ε/k})) whose :func:`group_privacy` over k records is (ε, δ)."""
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    k = check_int("group_size", group_size, low=1)
    return epsilon / k, delta / (k * math.exp((k - 1) * epsilon / k))


def grouped_segments(segments: Sequence[tuple[float, float, int]]) -> list[tuple[float, float, int]]:
    """The segments with every (sample_rate, noise_multiplier) pair given once, its steps summed, in order of first
    appearance. Composition is commutative, so the whole schedule's PLD is the same; a long repetitive schedule
    (200 000 one-step segments of one rate) then costs what one segment does."""
    steps: dict[tuple[float, float], int] = {}
    for sample_rate, noise_multiplier, count in segments:
        key = (float(sample_rate), float(noise_multiplier))
        steps[key] = steps.get(key, 0) + int(count)
    return [(sample_rate, noise_multiplier, count) for (sample_rate, noise_multiplier), count in steps.items()]
