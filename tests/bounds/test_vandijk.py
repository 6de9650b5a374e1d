"""bounds.vandijk against independent computations (second methods, exact RDP, brute force)."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from fedplan.bounds import rdp
from fedplan.bounds import vandijk as v
from fedplan.bounds.theorem import all_hold


def _r0_by_root_finding(sigma, p):
    """The fixed point as the root of r0·R(r0) − r⋆(r0) on [0, (√3−1)/16] (spec §4.12), by brentq; at σ = 1.13654 the
    interval stops just short of the r0 where u1 reaches 1 (L1337 is tight there)."""
    def excess(r0):
        return v.r_constant(r0=r0, sigma=sigma).r - v.r_target(r0=r0, sigma=sigma, p=p)
    return brentq(excess, 1e-12, min(v.R0_CAP, v.r0_limit(sigma=sigma) * (1 - 1e-9)), xtol=1e-16, rtol=1e-15)


@pytest.mark.parametrize("sigma", [v.SIGMA_MIN, 1.5, 3, 8, 64])
@pytest.mark.parametrize("p", [0, 0.5, 1])
def test_r0_iteration_agrees_with_root_finding(sigma, p):
    result = v.r0_of_sigma(sigma=sigma, p=p)
    assert result.r0 == pytest.approx(_r0_by_root_finding(sigma, p), rel=1e-12)
    assert 0 < result.r0 <= v.R0_CAP and result.u0 < 1 and result.u1 < 1
    assert result.iterations <= 20


@pytest.mark.parametrize("sigma, p, expected", [(1.5, 0, 0.001542), (2, 0.5, 0.004496), (10, 1, 0.025957),
                                                (64, 0, 0.043279)])
def test_r0_reference_table(sigma, p, expected):
    assert v.r0_of_sigma(sigma=sigma, p=p).r0 == pytest.approx(expected, abs=1e-6)  # spec §4.12 table


def test_sigma_threshold_is_where_a_condition_of_l1337_becomes_tight():
    first, second = v._sigma_condition_margins(v.SIGMA_MIN)
    assert min(abs(first), abs(second)) < 1e-10
    assert all(m > 0 for m in v._sigma_condition_margins(v.SIGMA_MIN + 1e-6))
    assert any(m < 0 for m in v._sigma_condition_margins(v.SIGMA_MIN - 1e-6))


@pytest.mark.parametrize("sigma", [3, 5, 8])
def test_at_the_fixed_point_b_general_equals_b_closed_and_18_equals_19(sigma):
    """At r0 = r0(σ), γ = 0: Theorem 6's B equals Theorem 4's closed form, and (18)'s constant is 1.21/√(1−α)."""
    fixed = v.r0_of_sigma(sigma=sigma, p=1)
    alpha = fixed.alpha
    assert v.constant_b(r=fixed.r, p=1, gamma=0, alpha=alpha) == pytest.approx(v.constant_b_closed(p=1), rel=1e-9)
    general = v.case2_factor(p=1, gamma=0, alpha=alpha, k=1, r=fixed.r, variant="paper")
    closed = v.case2_factor(p=1, gamma=0, alpha=alpha, k=1, variant="corrected")
    assert general == pytest.approx(closed, rel=1e-6)


def test_b_closed_limit_as_r0_goes_to_zero():
    tiny = v.r_constant(r0=1e-12, sigma=8)
    assert v.constant_b(r=tiny.r, p=0.5, gamma=0, alpha=tiny.alpha) == pytest.approx(v.constant_b_limit(p=0.5),
                                                                                   rel=1e-5)


def test_case_thresholds_are_consistent():
    """K ≤ K⁻ ⇔ c1 ≥ x_thr (28) at γ = 0 for a constant sequence: check the branch of c(x) switches there."""
    constants = v.r_constant(r0=0.02, sigma=5)
    rho, rho_hat = v.moment_ratio_bounds(p=1, gamma=0, alpha=constants.alpha)
    threshold = v.branch_threshold(r=constants.r, p=1, gamma=0, alpha=constants.alpha)
    for x, branch in ((threshold * 1.001, "2/(rho_hat x)"), (threshold * 0.999, "sqrt")):
        assert v.c_function(x, r=constants.r, rho=rho, rho_hat=rho_hat)[1] == branch


@pytest.mark.parametrize("size", [16, 257])
@pytest.mark.parametrize("order", [8, 32, 64])
def test_lemma4_bound_is_above_the_exact_log_moment(size, order):
    """Spec §4.8: Lemma 4 bounds log A_{λ+1} of the Poisson-subsampled Gaussian (2–9× above it)."""
    q = size / 10_000
    exact = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=8, orders=(order + 1,))[0] * order
    bound = v.lemma4_log_moment_bound(order=order, size=size, client_size=10_000, sigma=8, r0=8 * q)
    assert exact < bound < 10 * exact


def test_theorem3_branch_two_collapses_to_exp_minus_eps_sigma_squared_over_two():
    """Spec §9.1: whenever c1 ≥ x_thr, direct Theorem 3 proves δ = exp(−εσ²/2) for any sequence."""
    rng = np.random.default_rng(3)
    sizes = np.sort(rng.integers(10, 60, size=300))
    result = v.theorem3(sizes=sizes, client_size=20_000, sigma=6, epsilon=0.5)
    assert result.branch == "2/(rho_hat x)" and result.valid
    assert result.delta == pytest.approx(math.exp(-0.5 * 36 / 2), rel=1e-12)
    # The tight RDP δ of the same schedule at the same ε is far smaller: the bound is valid, not tight.
    segments = [(s / 20_000, 6.0, 1) for s in sizes]
    assert rdp.delta_for_segments(segments, 0.5)[0] < result.delta


def test_theorem3_moments_by_brute_force():
    sizes = [16, 18, 21, 40]
    result = v.theorem3(sizes=sizes, client_size=1000, sigma=4, epsilon=1)
    for j, moment in zip((1, 2, 3), result.moments, strict=True):
        brute = sum(s**j / (1000 * (1000 - s) ** (j - 1)) for s in sizes) / len(sizes)
        assert moment == pytest.approx(brute, rel=1e-14)


def test_theorem3_sigma_bound_inverts_delta():
    sizes = list(range(20, 120))
    result = v.theorem3(sizes=sizes, client_size=50_000, sigma=3, epsilon=2, delta=1e-6)
    at_bound = v.theorem3(sizes=sizes, client_size=50_000, sigma=result.sigma_lower_bound, epsilon=2)
    if at_bound.branch == result.branch:
        assert at_bound.delta == pytest.approx(1e-6, rel=1e-9)


def test_theorem3_reports_a_violated_rate_hypothesis():
    result = v.theorem3(sizes=[16, 400], client_size=10_000, sigma=8, epsilon=1, r0=0.2)
    held = {h.name: h.holds for h in result.hypotheses}
    assert held["max_i s_i/N_c <= r0/sigma"] is False and not result.valid


def test_k_star_paper_sign_admits_a_larger_q_than_the_corrected_sign():
    paper = v.sample_rate_for_k_star(alpha=0.003, p=1, gamma=0.1, epochs=10, variant="paper")
    corrected = v.sample_rate_for_k_star(alpha=0.003, p=1, gamma=0.1, epochs=10, variant="corrected")
    assert paper / corrected == pytest.approx(1.1**4, rel=1e-12)


def test_corrected_k_star_really_bounds_the_largest_rate():
    """With the corrected sign, q = q* makes q(T_up+m)^p ≤ α when m ≤ γ·T_up (the property K* is for)."""
    alpha, p, epochs = 0.004, 1.0, 20.0
    for gamma in (0.0, 0.05, 0.3):
        q = v.sample_rate_for_k_star(alpha=alpha, p=p, gamma=gamma, epochs=epochs)
        t_up = ((p + 1) * epochs / q) ** (1 / (p + 1))
        assert q * (t_up + gamma * t_up) ** p == pytest.approx(alpha, rel=1e-12)


def test_theorem4_regimes():
    common = dict(p=1, sigma=5, epsilon=2, delta=1e-5, sample_rate=1e-7, client_size=10_000, gamma=0.05)
    low = v.theorem4(grad_computations=1e3, **common)
    assert low.case == "1" and low.sigma_lower_bound == pytest.approx(
        v.privacy_budget(epsilon=2, delta=1e-5) * v.case1_factor(p=1, gamma=0.05, alpha=low.r0 / 5))
    high = v.theorem4(grad_computations=low.k_plus * 2, **common)
    assert high.case == "2"
    jump = high.sigma_lower_bound / low.sigma_lower_bound
    assert jump == pytest.approx(2 ** 0.75 * v.JUMP_FACTOR * math.sqrt(1.05), rel=1e-12)
    gap = v.theorem4(grad_computations=(low.k_minus + low.k_plus) / 2, **common)
    assert gap.case == "gap" and gap.sigma_lower_bound is None
    assert low.k_plus / low.k_minus == pytest.approx(1.05 ** (7 * 2 / 3), rel=1e-12)  # A/B = (1+γ)^{(3+4p)(1+p)/(1+2p)}


def test_case2_aggregated_noise_matches_19_times_sqrt_T():
    """(30) and (19) describe the same bound up to the (1+γ) slack of (31) (erratum I-22): check at γ = 0."""
    epochs, eps, delta, p = 5.0, 2.0, 1e-6, 1.0
    fixed = v.r0_of_sigma(sigma=5, p=p)
    a = v.constant_a(r=fixed.r, p=p, gamma=0, alpha=fixed.alpha)
    q = (a * eps ** ((1 + p) / (1 + 2 * p)) / (epochs / 2)) ** (1 + 2 * p)  # K = 2 K⁺
    t_up = ((p + 1) * epochs / q) ** (1 / (p + 1))
    sigma_19 = v.privacy_budget(epsilon=eps, delta=delta) * v.case2_factor(p=p, gamma=0, alpha=fixed.alpha, k=2,
                                                                            r=fixed.r, variant="paper")
    bound_30 = v.case2_aggregated_noise(epochs=epochs, epsilon=eps, delta=delta, p=p, gamma=0, alpha=fixed.alpha)
    assert sigma_19 * math.sqrt(t_up) == pytest.approx(bound_30 * math.sqrt(1 - fixed.alpha), rel=0.02)


def test_case2_selection_reports_k_ratio_and_condition_26():
    sel = v.select_parameters(initial_size=16, client_size=10_000, grad_computations=1e7, p=1, epsilon=1, sigma=8,
                              r0=1 / math.e, case=2, k=2)
    assert 1.0 <= sel.k_ratio <= 2.0 + 1e-9 and all_hold(sel.hypotheses)
    names = {h.name for h in sel.hypotheses}
    assert any(name.startswith("r >=") for name in names) and "K >= K+" in names
    factor = v.case2_factor(p=1, gamma=sel.gamma, alpha=sel.alpha, k=sel.k_ratio, r=sel.r)
    assert sel.budget == pytest.approx(8 / factor, rel=1e-12)
    with pytest.raises(ValueError, match="m/T iteration diverges"):  # the same K in case 1 has no schedule
        v.select_parameters(initial_size=16, client_size=10_000, grad_computations=1e7, p=1, epsilon=1, sigma=8,
                            r0=1 / math.e)


def test_case2_request_below_k_plus_is_reported():
    """Example 3's K is far below K⁺: K* caps q, so K ≥ K⁺ fails and the selection says so."""
    sel = v.select_parameters(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1,
                              sigma=8, r0=1 / math.e, case=2, k=2)
    held = {h.name: h.holds for h in sel.hypotheses}
    assert held["K >= K+"] is False and sel.k_ratio < 1


@pytest.mark.parametrize("kwargs, message", [
    (dict(sigma=0.05), r"sigma must be a real number in \[0.1, inf\)"),
    (dict(p=0), r"p must be a real number in \[0.01, 10\]"),
    (dict(r0=0.5), r"r0 must be a real number in \(0, 0.367879\]"),
    (dict(initial_size=20_000), r"initial_size must be an integer in \[1, client_size\)"),
    (dict(variant="exact"), "variant must be one of 'corrected', 'paper'"),
    (dict(case=3), "case must be one of '1', '2'"),
    (dict(epsilon=-1), r"epsilon must be a real number in \(0, inf\)"),
    (dict(closed_form=True), "closed_form=True needs variant='paper'"),
])
def test_select_parameters_rejects_bad_input(kwargs, message):
    base = dict(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1, sigma=8)
    with pytest.raises(ValueError, match=message):
        v.select_parameters(**{**base, **kwargs})


def test_corrected_selection_uses_a_gamma_that_bounds_its_own_m_over_t():
    for sigma in (4, 5, 8, 16):
        sel = v.select_parameters(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1,
                                  sigma=sigma, r0=1 / math.e)
        assert sel.gamma >= sel.m / len(sel.sizes) and all_hold(sel.hypotheses)
        assert sel.budget == pytest.approx(sigma / v.case1_factor(p=1, gamma=sel.gamma, alpha=sel.alpha))


def test_transition_exponents_solve_k_equals_k_minus_and_k_plus():
    common = dict(initial_size=16, offset=12.1, client_size=10_000, epsilon=1, sigma=8, grad_computations=1e5,
                  gamma=0.062)
    roots = v.transition_exponents(**common, p_max=2)
    (p_minus,), (p_plus,) = roots["p_minus"], roots["p_plus"]
    assert 0 < p_minus < p_plus < 2
    q = lambda p: 16 / (10_000 * 12.1**p)  # noqa: E731
    at = lambda p: v.theorem4(p=p, sigma=8, epsilon=1, delta=1e-8, sample_rate=q(p), client_size=10_000,  # noqa: E731
                              grad_computations=1e5, gamma=0.062)
    assert at(p_minus).k_minus == pytest.approx(1e5, rel=1e-9) and at(p_plus).k_plus == pytest.approx(1e5, rel=1e-9)
    curve = v.aggregated_noise_curve(exponents=[p_minus * 0.99, (p_minus + p_plus) / 2, p_plus * 1.01], delta=1e-8,
                                     **common)
    assert [point.theorem.case for point in curve] == ["1", "gap", "2"]
    assert curve[1].aggregated_noise is None
    first = curve[0]
    assert first.aggregated_noise == pytest.approx(math.sqrt(first.rounds) * first.theorem.sigma_lower_bound)


def test_epsilon_after_each_step_matches_prefix_accounting():
    segments = [(0.01, 1.1, 30), (0.03, 1.1, 20)]
    curve = rdp.epsilon_after_each_step(segments, 1e-5)
    integer_orders = tuple(a for a in rdp.RDP_ORDERS if a == int(a))
    for prefix, steps in ((segments[:1], 30), ([segments[0], (0.03, 1.1, 5)], 35), (segments, 50)):
        expected = rdp.epsilon_for_segments(prefix, 1e-5, orders=integer_orders)[0]
        assert curve[steps - 1] == pytest.approx(expected, rel=1e-12)


def test_theorem3_default_r0_satisfies_its_own_hypothesis_despite_rounding():
    """σ·max q_i divided by σ can round below max q_i (0.0016 at σ = 5.78196); the default r0 must still hold."""
    result = v.theorem3(sizes=[16] * 1563, client_size=10_000, sigma=5.781955821947998, epsilon=1)
    assert result.valid


def test_theorem4_k_star_for_tiny_p_is_computed_in_logs():
    """α^{(1+p)/p} underflows and q^{-1/p} overflows for small p; K* is their product, computed in logs."""
    common = dict(sigma=8, epsilon=1, delta=1e-8, sample_rate=1e-3, client_size=10_000, grad_computations=1e4,
                  gamma=0.05)
    result = v.theorem4(p=0.005, **common)
    alpha = result.r0 / 8
    expected = (1.005 / 0.005 * math.log(alpha) - math.log(1.005) - 1.005 * math.log(1.05) + math.log(10_000)
                - math.log(1e-3) / 0.005)
    assert math.log(result.k_star) == pytest.approx(expected, rel=1e-12) and result.hypotheses[1].holds
    assert v.theorem4(p=0.001, **common).k_star == math.inf


def test_lemma4_refuses_r0_above_one_over_e_by_name():
    """u0 = 2√50/99.5 = 0.14 < 1 at σ = 100, so r is finite, but Lemma 4 needs r0 ≤ 1/e (L929, erratum I-15)."""
    with pytest.raises(ValueError, match=r"r0 must be a real number in \(0, 1/e\] = \(0, 0.367879\] for Lemma 4"):
        v.lemma4_delta(sizes=[16, 20], client_size=10_000, sigma=100, epsilon=1, r0=0.5)


def test_small_growth_exponent_gives_a_positive_rate_and_a_named_refusal():
    # p = 0.0117, r0 = 0.001, σ = 8 (α = 1.25e-4): D = α^{(1+p)/p}/(p+1) = e^-778 underflowed to 0, q = 0 and the
    # offset m = (s0/(N_c q))^{1/p} divided by zero (a ZeroDivisionError on the increasing-sizes page).
    import mpmath
    alpha, p, epochs = mpmath.mpf("1.25e-4"), mpmath.mpf("0.0117"), mpmath.mpf("2.5")
    expected = ((alpha ** ((1 + p) / p) / (p + 1)) / epochs) ** p  # K* with γ = 0 (L193), q = (D/epochs)^p (L1527)
    q = v.sample_rate_for_k_star(alpha=1.25e-4, p=0.0117, gamma=0.0, epochs=2.5)
    assert q == pytest.approx(float(expected), rel=1e-12) and q > 1e-5
    with pytest.raises(ValueError, match="no increasing schedule"):
        v.select_parameters(initial_size=16, client_size=10_000, grad_computations=25_000, p=0.0117,
                                  epsilon=1.0, sigma=8, r0=0.001)


@pytest.mark.parametrize("gamma", [1e200, 4.3861405490648127e307])
def test_r0_refuses_a_gamma_whose_power_underflows_by_name(gamma):
    """(1+γ)^{2p} overflowed to an OverflowError at γ = 4.4e307 (fuzz seed 26643737); it is now taken as
    e^{-2p ln(1+γ)}, which underflows to 0 and is refused by name."""
    with pytest.raises(ValueError, match=r"gamma must be small enough .* got gamma=4.38614e\+307|gamma=1e\+200"):
        v.r0_of_sigma(sigma=1.66764, p=1, gamma=gamma)


def test_r_target_keeps_the_gamma_power_of_l1305():
    """r⋆ at γ = 0.3, p = 1.5 against the printed form (√3−1)/2 (3p+1)/((p+1)(2p+1)) (1−r0/σ)²/(1+γ)^{2p}."""
    expected = (math.sqrt(3) - 1) / 2 * 5.5 / (2.5 * 4) * (1 - 0.01 / 3) ** 2 / 1.3 ** 3
    assert v.r_target(r0=0.01, sigma=3, p=1.5, gamma=0.3) == pytest.approx(expected, rel=1e-14)
