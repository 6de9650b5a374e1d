"""bounds.kardam: dampening families, the AdaSGD β rule, staleness laws and E[Λ] against direct sums and sampling,
χ against a dense grid, Theorem 5 against Theorem 4 with Definition 10's γ, the filters against brute force."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.bounds import kardam

INVERSE = kardam.Dampening("inverse")
EXAMPLE = dict(loss_gap=1.0, lipschitz=1.0, decay_bound=1.134, max_adaptive_rate=49.0, dimension=10,
               gradient_std=0.1)


def test_adasgd_beta_and_printed_crossing():
    assert kardam.adasgd_beta(tau_thres=12) == pytest.approx(0.324318, abs=1e-6)
    assert kardam.adasgd_beta(tau_thres=24) == pytest.approx(0.213746, abs=1e-6)
    assert kardam.adasgd_dampening(tau_thres=12)(6) == pytest.approx(1 / 7, rel=1e-12)
    assert kardam.adasgd_dampening(tau_thres=24)(12) == pytest.approx(1 / 13, rel=1e-12)
    assert kardam.adasgd_dampening(tau_thres=12)(12) == pytest.approx((1 + 6) ** -2, rel=1e-12)


def test_dampening_is_vectorised_and_inverse_inverts():
    taus = np.array([0.0, 1.0, 5.5, 30.0])
    for damp in (INVERSE, kardam.Dampening("exponential", rate=0.3), kardam.Dampening("stretched", rate=0.7, root=2)):
        values = damp(taus)
        assert values[0] == 1.0 and np.all(np.diff(values) < 0)
        assert [damp.inverse(v) for v in values] == pytest.approx(taus, abs=1e-9)
        assert damp(5.5) == values[2]
    assert not kardam.Dampening("constant").satisfies_definition_9
    with pytest.raises(ValueError, match="staleness tau must be >= 0"):
        INVERSE(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="rate must be a real number in \\(0, inf\\)"):
        kardam.Dampening("exponential")


def test_straggler_weight_and_boosting():
    damp = kardam.adasgd_dampening(tau_thres=12)
    assert kardam.adasgd_weight(dampening=damp, staleness=48, similarity=1.0) == pytest.approx(1.73e-7, rel=3e-3)
    assert kardam.adasgd_weight(dampening=damp, staleness=48, similarity=0.0) == 1.0
    assert kardam.adasgd_weight(dampening=damp, staleness=6, similarity=0.5) == pytest.approx(2 / 7)


def test_crossings():
    assert kardam.crossing(first=kardam.Dampening("exponential", rate=0.2), second=INVERSE, low=1,
                           high=100) == pytest.approx(13.302, abs=1e-3)
    assert kardam.crossing(first=kardam.Dampening("exponential", rate=0.5), second=INVERSE, low=0.5,
                           high=100) == pytest.approx(2.51, abs=5e-3)
    with pytest.raises(ValueError, match="do not cross"):
        kardam.crossing(first=kardam.Dampening("exponential", rate=0.2), second=INVERSE, low=20, high=30)


def test_gaussian_staleness_pmf_matches_sampling():
    pmf = kardam.gaussian_staleness_pmf(mean=6, std=2)
    assert pmf.size == 13 and pmf.sum() == pytest.approx(1.0, abs=1e-15)
    assert pmf[0] == pytest.approx(0.00298, abs=5e-6) and pmf[12] == pytest.approx(pmf[0], rel=1e-12)
    draws = np.clip(np.round(np.random.default_rng(0).normal(6, 2, 400_000)), 0, 12).astype(int)
    assert np.bincount(draws, minlength=13) / draws.size == pytest.approx(pmf, abs=3e-3)
    shifted = kardam.gaussian_staleness_pmf(mean=10, std=1, tau_min=8, tau_max=12)
    assert shifted[:8].sum() == 0 and shifted.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("mean, std, tau_thres, expected", [
    (6, 2, 12, (0.1602, 0.1768, 0.3267, 0.0825)),     # D1 (spec §4.3 table)
    (12, 4, 24, (0.0890, 0.1107, 0.1248, 0.0169)),    # D2
])
def test_expected_dampening_table(mean, std, tau_thres, expected):
    pmf = kardam.gaussian_staleness_pmf(mean=mean, std=std)
    kinds = (INVERSE, kardam.adasgd_dampening(tau_thres=tau_thres), kardam.Dampening("exponential", rate=0.2),
             kardam.Dampening("exponential", rate=0.5))
    values = [kardam.expected_dampening(dampening=d, probabilities=pmf) for d in kinds]
    assert values == pytest.approx(expected, abs=5e-5)
    assert values[0] == pytest.approx(sum(p / (1 + t) for t, p in enumerate(pmf)), rel=1e-12)


def test_expected_dampening_rejects_a_bad_pmf():
    with pytest.raises(ValueError, match="sum to 1"):
        kardam.expected_dampening(dampening=INVERSE, probabilities=[0.5, 0.4])


def test_decay_bound_values_and_dense_grid():
    assert kardam.decay_bound(dampening=INVERSE, tau_max=12) == pytest.approx(12 / 13)
    assert kardam.decay_bound(dampening=INVERSE) == 1.0
    assert kardam.decay_bound(dampening=kardam.Dampening("exponential", rate=0.2), tau_max=24) == pytest.approx(
        5 * math.exp(-1), abs=1e-12)
    assert kardam.decay_bound(dampening=kardam.adasgd_dampening(tau_thres=12), tau_max=12) == pytest.approx(1.134,
                                                                                                          abs=5e-4)
    ada24 = kardam.adasgd_dampening(tau_thres=24)
    assert kardam.decay_bound(dampening=ada24, tau_max=24) == pytest.approx(1.717, abs=5e-4)
    assert kardam.decay_bound(dampening=ada24, tau_max=24, integer=False) == pytest.approx(1 / (math.e * ada24.rate))
    with pytest.raises(ValueError, match="chi is infinite"):
        kardam.decay_bound(dampening=kardam.Dampening("constant"))
    assert kardam.decay_bound(dampening=kardam.Dampening("constant"), tau_max=7) == 7


@settings(max_examples=50, deadline=None)
@given(rate=st.floats(0.05, 3), root=st.floats(0.5, 4), tau_max=st.integers(0, 200))
def test_decay_bound_is_the_grid_maximum(rate, root, tau_max):
    taus = np.arange(tau_max + 1, dtype=float)
    for damp in (kardam.Dampening("exponential", rate=rate), kardam.Dampening("stretched", rate=rate, root=root)):
        assert kardam.decay_bound(dampening=damp, tau_max=tau_max) == pytest.approx(np.max(taus * damp(taus)),
                                                                                   rel=1e-12)
        fine = np.linspace(0, tau_max, 20_001)
        assert kardam.decay_bound(dampening=damp, tau_max=tau_max, integer=False) >= np.max(fine * damp(fine)) * (
            1 - 1e-9)


def test_adaptive_rates():
    damp = kardam.adasgd_dampening(tau_thres=12)
    assert kardam.max_adaptive_rate(dampening=damp, tau_max=12) == pytest.approx(49.0)
    assert kardam.max_adaptive_rate(dampening=kardam.Dampening("exponential", rate=0.5),
                                    tau_max=12) == pytest.approx(403, abs=0.5)
    assert kardam.adaptive_rate(dampening=INVERSE, staleness=[0, 1, 3]) == pytest.approx(3 / (1 + 0.5 + 0.25))
    assert kardam.adaptive_rate(dampening=INVERSE, staleness=[0, 0]) == 1.0


def test_theorem4_example_and_explicit_theorem5():
    paper = kardam.kardam_bound(steps=10_000, variant="paper", **EXAMPLE)
    assert paper.learning_rate == pytest.approx(0.031623, abs=1e-6)
    assert paper.bound == pytest.approx(0.26683, abs=1e-5) and paper.valid
    gamma, k, m, d, sigma, chi, phi = paper.learning_rate, 1.0, 1, 10, 0.1, 1.134, 49.0
    theorem4 = (2 + phi + gamma * k * m * chi * phi) * gamma * k * d * sigma**2 + d * sigma**2  # L1879 as printed
    assert paper.bound == pytest.approx(theorem4, rel=1e-12)
    corrected = kardam.kardam_bound(steps=10_000, **EXAMPLE)
    assert corrected.staleness_term == pytest.approx(paper.staleness_term * phi, rel=1e-12)


def test_prerequisite_violation_is_reported():
    result = kardam.kardam_bound(steps=1, loss_gap=100.0, lipschitz=1.0, decay_bound=1.0, max_adaptive_rate=2.0,
                                 dimension=1, gradient_std=1.0, gradients_per_step=2)
    assert not result.valid and "gamma*K*M <= 1" in result.hypotheses[0].name


def test_steps_to_target():
    steps = kardam.steps_to_target(target=0.5, variant="paper", **EXAMPLE).steps
    assert steps == 1894
    assert kardam.kardam_bound(steps=steps, variant="paper", **EXAMPLE).bound <= 0.5
    assert kardam.kardam_bound(steps=steps - 1, variant="paper", **EXAMPLE).bound > 0.5
    with pytest.raises(ValueError, match="not above the floor"):
        kardam.steps_to_target(target=0.1, **EXAMPLE)


@settings(max_examples=50, deadline=None)
@given(target=st.floats(0.11, 5.0))
def test_steps_to_target_is_the_first_step_below_target(target):
    steps = kardam.steps_to_target(target=target, **EXAMPLE).steps
    assert kardam.kardam_bound(steps=steps, **EXAMPLE).bound <= target
    assert steps == 1 or kardam.kardam_bound(steps=steps - 1, **EXAMPLE).bound > target


@settings(max_examples=50, deadline=None)
@given(steps=st.integers(1, 10**7), factor=st.integers(2, 10))
def test_bound_decreases_with_steps(steps, factor):
    assert kardam.kardam_bound(steps=steps * factor, **EXAMPLE).bound < kardam.kardam_bound(steps=steps,
                                                                                              **EXAMPLE).bound


@pytest.mark.parametrize("root, low, high, expected", [(1.85, 1, 10, (0.680577, 0.690700)),
                                                        (3.1, 11, 33, (1.140426, 1.141520)),
                                                        (4, 34, 75, (1.471518, 1.471622))])
def test_remark2_windows(root, low, high, expected):
    result = kardam.remark2_window(root=root, tau_low=low, tau_high=high)
    window = (result.lower, result.upper)
    assert window == pytest.approx(expected, abs=1e-6) and result.valid
    # α inside the window: the stretched dampening weighs every τ of the range at least as much as 1/(1+τ)
    alpha = 0.5 * (window[0] + window[1])
    taus = np.arange(low, high + 1)
    assert np.all(kardam.Dampening("stretched", rate=alpha, root=root)(taus) >= INVERSE(taus))


def test_accept_ratio_bounds():
    band = kardam.accept_ratio_bounds(workers=10, byzantine=3)
    assert (band.lower, band.upper) == pytest.approx((0.571429, 0.7), abs=1e-6) and band.valid
    with pytest.raises(ValueError, match="workers must be an integer in \\[4, inf\\)"):  # n - f > 0
        kardam.accept_ratio_bounds(workers=3, byzantine=3)


def test_lipschitz_filter():
    assert kardam.empirical_lipschitz(gradient=[3, 4], other_gradient=[0, 0], model=[1, 0],
                                      other_model=[0, 0]) == 5.0
    assert kardam.empirical_lipschitz(gradient=[1], other_gradient=[0], model=[2], other_model=[2]) == math.inf
    coefficients = [5.0, 1.0, 3.0, 2.0, 4.0, 9.0, 8.0, 7.0, 6.0, 10.0]
    assert kardam.lipschitz_threshold(coefficients=coefficients, workers=10, byzantine=3) == 7.0
    assert kardam.lipschitz_filter_accepts(coefficient=7.0, coefficients=coefficients, workers=10, byzantine=3)
    assert not kardam.lipschitz_filter_accepts(coefficient=7.5, coefficients=coefficients, workers=10, byzantine=3)


def brute_force_literal(window, candidate, f):
    counts = {}
    for worker in [*window[-2 * f:], candidate] if f else [candidate]:
        counts[worker] = counts.get(worker, 0) + 1
    return sum(sorted(counts.values(), reverse=True)[:f]) <= f


def test_frequency_filter_default_equals_literal_rule_on_full_windows():
    rng = np.random.default_rng(1)
    for _ in range(2000):
        f = int(rng.integers(1, 4))
        n = 2 * f + 1 + int(rng.integers(0, 5))
        window = list(rng.choice(n, size=2 * f, replace=False))  # a full window of distinct workers
        candidate = int(rng.integers(0, n))
        default = kardam.frequency_filter_accepts(recent_workers=window, candidate=candidate, byzantine=f)
        literal = kardam.frequency_filter_accepts(recent_workers=window, candidate=candidate, byzantine=f,
                                                  literal=True)
        assert default == literal == brute_force_literal(window, candidate, f)


def test_literal_frequency_filter_deadlocks_on_short_windows():
    assert kardam.frequency_filter_accepts(recent_workers=["a"], candidate="a", byzantine=2, literal=True)
    assert not any(kardam.frequency_filter_accepts(recent_workers=["a", "a"], candidate=c, byzantine=2, literal=True)
                   for c in "abcdef")
    assert not kardam.frequency_filter_accepts(recent_workers=["a"], candidate="a", byzantine=2)


def test_frequency_reject_probability_by_simulation():
    n, f = 10, 3
    assert kardam.frequency_reject_probability(workers=n, byzantine=f) == 0.6
    rng = np.random.default_rng(2)
    window, rejected = list(range(-2 * f, 0)), 0   # 2f sentinels
    arrivals = rng.integers(0, n, 20_000)
    for worker in arrivals:
        if kardam.frequency_filter_accepts(recent_workers=window, candidate=int(worker), byzantine=f):
            window = [*window[1:], int(worker)]
        else:
            rejected += 1
    assert rejected / arrivals.size == pytest.approx(0.6, abs=0.015)


@pytest.mark.parametrize("mean, std", [(1e15, 1.0), (6.0, 1e9), (1e300, 1.0)])
def test_gaussian_staleness_pmf_refuses_a_support_too_large_to_allocate(mean, std):
    with pytest.raises(ValueError, match=r"mean \+ 3 std"):
        kardam.gaussian_staleness_pmf(mean=mean, std=std)
    with pytest.raises(ValueError, match="tau_max must be an integer"):
        kardam.gaussian_staleness_pmf(mean=6, std=2, tau_max=10**12)


def test_a_subnormal_std_gives_a_point_mass_without_an_overflow_warning():
    """The fuzzer's ``fedplan staleness beta --tau-thres=1e-320``: std 1.7e-321 overflowed the edges (a RuntimeWarning
    on stderr); ±inf edges are the point mass at round(mean) = 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pmf = kardam.gaussian_staleness_pmf(mean=5e-321, std=1.665e-321, tau_max=1)
    assert pmf.tolist() == [1.0, 0.0]
