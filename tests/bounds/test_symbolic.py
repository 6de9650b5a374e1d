"""bounds.symbolic.vandijk derives van Dijk's closed forms; bounds.vandijk's hand-written numerics must agree.

Paper lines are ``vandijk_async_fl_dp.txt`` lines. Symbolic identities are decided by
:func:`bounds.symbolic.algebra.monomial` (canonical product of powers) or ``sympy.simplify``; where the
expression keeps a sum (x_thr), equality is checked numerically at many points.
"""

from __future__ import annotations

import itertools
import math

import pytest
import sympy as sp

from fedplan.bounds import vandijk as v
from fedplan.bounds.symbolic import vandijk as sym

p, r, gamma, alpha = sym.p, sym.r, sym.gamma, sym.alpha
epsilon, N_c, s, K = sym.epsilon, sym.N_c, sym.s, sym.K
E = math.e
ROOT = (sp.sqrt(3) - 1) / 2
EXPONENT = (1 + p) / (1 + 2 * p)

PS = (0.25, 0.5, 1.0, 2.0)
POINTS = [(p_, r_, g_, a_) for p_, r_, g_, a_ in itertools.product(PS, (0.01, 0.37, 5.746), (0.0, 0.06, 0.4),
                                                                     (0.0, 0.004, 0.3))]


def rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def same(a: sp.Expr, b: sp.Expr) -> bool:
    """a ≡ b for products of powers of positive factors."""
    return sym.monomial(a / b) == 1


# ------------------------------------------------------------------ steps 1-3: ρ, ρ̂, (21), (22)/(23)

def test_rho_bounds_derived_from_moment_bounds_are_the_printed_L1215():
    rho, rho_hat = sym.vandijk_rho_bounds()
    assert same(rho, (2 * p + 1) ** 2 / ((p + 1) * (3 * p + 1)) * (1 + gamma) ** (2 + 4 * p) / (1 - alpha) ** 2)
    assert same(rho_hat, (2 * p + 1) / (p + 1) ** 2 * (1 + gamma) ** (2 + 2 * p))
    f_rho, f_hat = sym.as_function(rho), sym.as_function(rho_hat)
    for p_, _, g_, a_ in POINTS:
        numeric = v.moment_ratio_bounds(p=p_, gamma=g_, alpha=a_)
        assert rel(f_rho(p=p_, gamma=g_, alpha=a_), numeric[0]) < 1e-13
        assert rel(f_hat(p=p_, gamma=g_), numeric[1]) < 1e-13


def test_round_bounds_and_c1_bounds_are_the_printed_21_22_23():
    t_low, t_up = sym.vandijk_round_bounds()
    assert same(t_up, ((p + 1) * K / s) ** (1 / (1 + p)))  # (21), L1227
    assert same(t_low, t_up / (1 + gamma))
    lower, upper = sym.vandijk_c1_bounds()
    common = (p + 1) ** (1 - p / (1 + p)) * epsilon * N_c**2 / s**2 * (s / K) ** (1 + p / (1 + p))
    assert same(upper, common * (1 + gamma) ** (1 + 2 * p))  # (22), L1243
    assert same(lower, common * (1 + gamma) ** (-(2 + 2 * p)))  # (23), L1247
    assert not same(lower, common * (1 + gamma) ** (-(1 + 2 * p)))  # the check can fail


# ------------------------------------------------------------------ step 4: B of K⁻

@pytest.fixture(scope="module")
def b_numeric():
    return sym.as_function(sym.vandijk_b_from_k_minus())


@pytest.mark.parametrize(("p_", "r_", "g_", "a_"), POINTS)
def test_derived_b_equals_constant_b(b_numeric, p_, r_, g_, a_):
    b = b_numeric
    assert rel(b(p=p_, r=r_, gamma=g_, alpha=a_), v.constant_b(r=r_, p=p_, gamma=g_, alpha=a_)) < 1e-12


def test_derived_b_reproduces_example_3_and_the_printed_forms_of_25_and_28():
    b = sym.vandijk_b_from_k_minus()
    assert b.free_symbols == {p, r, gamma, alpha}
    constants = v.r_constant(r0=1 / E, sigma=8)
    assert rel(sym.as_function(b)(p=1, r=constants.r, gamma=0, alpha=1 / (8 * E)), 0.1368988621622339) < 1e-12  # L1639
    # (25), L1259, with the threshold τ left symbolic.
    b_of_x, x = sym.vandijk_b_of_threshold()
    assert same(b_of_x, (1 + gamma) ** (-2 * (1 + p) ** 2 / (1 + 2 * p)) * (p + 1) ** (1 / (1 + 2 * p)) / x**EXPONENT)
    # τ of (24), L1251 (second form), and B of (28), L1287 (second and third forms).
    ratio = 2 * r * (p + 1) * (2 * p + 1) * (1 + gamma) ** (2 * p) / ((3 * p + 1) * (1 - alpha) ** 2)
    tau = ((ratio + 1) ** 2 - 1) / 2 * (p + 1) * (3 * p + 1) * (1 - alpha) ** 2 / (
        r * (2 * p + 1) ** 2 * (1 + gamma) ** (2 + 4 * p))
    a = sym.vandijk_a_from_k_plus()
    second = a * (1 + gamma) ** (-(1 + p) * (3 + 4 * p) / (1 + 2 * p)) * (2 / ((ratio + 1) ** 2 - 1)) ** EXPONENT
    third = a * (2 * (1 + gamma) ** (-(3 + 4 * p)) / ((ratio + 1) ** 2 - 1)) ** EXPONENT
    f_b, f_tau, f_thr = sym.as_function(b), sym.as_function(tau), sym.as_function(sym.vandijk_branch_threshold())
    f_second, f_third = sym.as_function(second), sym.as_function(third)
    for p_, r_, g_, a_ in POINTS:
        point = {"p": p_, "r": r_, "gamma": g_, "alpha": a_}
        assert rel(f_tau(**point), v.branch_threshold(r=r_, p=p_, gamma=g_, alpha=a_)) < 1e-12
        assert rel(f_thr(**point), f_tau(**point)) < 1e-12
        assert rel(f_second(**point), f_b(**point)) < 1e-12
        assert rel(f_third(**point), f_b(**point)) < 1e-12


# ------------------------------------------------------------------ step 5: A of K⁺

def test_derived_a_equals_constant_a_and_both_printed_forms_L1279():
    a = sym.vandijk_a_from_k_plus()
    rho, _ = sym.vandijk_rho_bounds()
    printed_first = (1 + gamma) ** (1 + p) * (p + 1) ** (1 / (1 + 2 * p)) * (r * rho) ** EXPONENT
    printed_last = (p + 1) ** (-p / (1 + 2 * p)) * (
        r * (2 * p + 1) ** 2 * (1 + gamma) ** (3 * (1 + 2 * p)) / ((3 * p + 1) * (1 - alpha) ** 2)) ** EXPONENT
    assert same(a, printed_first)
    assert same(a, printed_last)
    f_a, f_first, f_last = sym.as_function(a), sym.as_function(printed_first), sym.as_function(printed_last)
    for p_, r_, g_, a_ in POINTS:
        point = {"p": p_, "r": r_, "gamma": g_, "alpha": a_}
        numeric = v.constant_a(r=r_, p=p_, gamma=g_, alpha=a_)
        assert rel(f_a(**point), numeric) < 1e-12
        assert rel(f_first(**point), numeric) < 1e-12
        assert rel(f_last(**point), numeric) < 1e-12


# ------------------------------------------------------------------ step 6: (26), r⋆, Theorem 4's B and A

def test_r_star_is_condition_26_and_r_target():
    r_star = sym.vandijk_r_star()
    printed = ROOT * (3 * p + 1) / ((p + 1) * (2 * p + 1)) * (1 - alpha) ** 2 / (1 + gamma) ** (2 * p)  # L1305
    assert same(r_star, printed)
    assert round(float(ROOT), 2) == 0.37  # the paper's "0.37" (L1263) is (√3−1)/2 rounded
    f = sym.as_function(r_star)
    for p_, _, g_, a_ in POINTS:
        value = f(p=p_, gamma=g_, alpha=a_)
        assert rel(value, v.r_target(r0=a_ * 3.0, sigma=3.0, p=p_, gamma=g_)) < 1e-13
        # r ≥ r⋆ ⟺ 1/(rρ) ≤ x_thr: the direction the derivation decided.
        rho, _ = v.moment_ratio_bounds(p=p_, gamma=g_, alpha=a_)
        for factor, holds in ((1.001, True), (0.999, False)):
            radius = factor * value
            assert v.condition_26(r=radius, p=p_, gamma=g_, alpha=a_).holds is holds
            assert (1 / (radius * rho) <= v.branch_threshold(r=radius, p=p_, gamma=g_, alpha=a_)) is holds


def test_closed_b_is_theorem_4s_and_free_of_gamma_and_alpha():
    b = sym.vandijk_b_closed_form()
    assert b.free_symbols == {p}
    assert same(b, (ROOT * (2 * p + 1)) ** EXPONENT / (1 + p))  # L193, L1311
    assert not same(b, ROOT**EXPONENT / (1 + p))  # L1101 as printed, without (2p+1) (erratum I-19)
    f = sym.as_function(b)
    for p_ in (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 7.0, 10.0):
        assert rel(f(p=p_), v.constant_b_closed(p=p_)) < 1e-13
    # The numeric general B at the numeric r⋆ agrees with the closed form for every γ and α.
    for p_, _, g_, a_ in POINTS:
        r_star = v.r_target(r0=a_ * 5.0, sigma=5.0, p=p_, gamma=g_)
        assert rel(v.constant_b(r=r_star, p=p_, gamma=g_, alpha=a_), v.constant_b_closed(p=p_)) < 1e-12


def test_b_limit_and_the_ratio_to_the_closed_form():
    limit = sym.vandijk_b_limit()
    assert same(limit, (p + sp.Rational(1, 2)) ** EXPONENT / (p + 1))  # L1299
    f = sym.as_function(limit)
    for p_ in (0.0, 0.25, 0.5, 1.0, 2.0):
        assert rel(f(p=p_), v.constant_b_limit(p=p_)) < 1e-13
    ratio = sym.vandijk_b_closed_form() / limit
    assert same(ratio, (sp.sqrt(3) - 1) ** EXPONENT)  # L1313
    # "in [0.73, 0.81] for 0 ≤ p ≤ 1" (L1313): it rises from 0.7321 to 0.8123, the ends rounded down.
    g = sym.as_function(ratio)
    assert g(p=0) == pytest.approx(0.7320508, abs=1e-7)
    assert g(p=1) == pytest.approx(0.8122583, abs=1e-7)


def test_a_over_b_at_r_star_L1317_and_with_the_gamma_free_r0_of_erratum_I26():
    assert same(sym.vandijk_a_over_b_at_r_star(), (1 + gamma) ** ((3 + 4 * p) * (1 + p) / (1 + 2 * p)))
    for p_, _, g_, _a in POINTS:
        assert rel(v.constant_a_closed(p=p_, gamma=g_) / v.constant_b_closed(p=p_),
                   (1 + g_) ** ((3 + 4 * p_) * (1 + p_) / (1 + 2 * p_))) < 1e-13
    # r from the γ = 0 iteration (L1333) but γ > 0 in A and B: the ratio is not (1+γ)^{3(1+p)}.
    mixed = sym.as_function(sym.vandijk_a_over_b_at_r_star_without_gamma())
    for p_, _, g_, a_ in POINTS:
        radius = v.r_target(r0=a_ * 4.0, sigma=4.0, p=p_, gamma=0.0)
        numeric = v.constant_a(r=radius, p=p_, gamma=g_, alpha=a_) / v.constant_b(r=radius, p=p_, gamma=g_, alpha=a_)
        assert rel(mixed(p=p_, gamma=g_), numeric) < 1e-12
        if g_ > 0:
            assert rel(numeric, (1 + g_) ** (3 * (1 + p_))) > 1e-3


# ------------------------------------------------------------------ step 7: (18) → (19) and 1.21

def test_jump_factor_is_1_21():
    jump = sym.vandijk_jump_factor()
    assert jump.free_symbols == set()
    assert sp.simplify(jump - 2 * sp.sqrt(ROOT)) == 0
    assert sp.simplify(2 * sp.sqrt(ROOT) - sp.sqrt(2 * (sp.sqrt(3) - 1))) == 0  # L1475
    assert sp.expand((2 * sp.sqrt(ROOT)) ** 2 - 2 * (sp.sqrt(3) - 1)) == 0
    assert rel(float(jump), v.JUMP_FACTOR) < 1e-15
    assert float(jump) == pytest.approx(1.2100007, abs=5e-8)
    assert float(jump) != v.JUMP_FACTOR_PRINTED


def test_18_at_r_star_is_19():
    at_r_star = sym.vandijk_case2_constant_at_r_star()
    assert same(at_r_star, sym.vandijk_jump_factor() * (1 + gamma) ** (2 + 3 * p) / sp.sqrt(1 - alpha))  # L1145
    f = sym.as_function(at_r_star)
    for p_, _, g_, a_ in POINTS:
        radius = v.r_target(r0=a_ * 3.0, sigma=3.0, p=p_, gamma=g_)
        general = v.case2_factor(p=p_, gamma=g_, alpha=a_, k=1.0, r=radius, variant="paper")
        assert rel(f(p=p_, gamma=g_, alpha=a_), general) < 1e-12
        assert rel(v.case2_factor(p=p_, gamma=g_, alpha=a_, k=1.0, r=radius),
                   v.case2_factor(p=p_, gamma=g_, alpha=a_, k=1.0)) < 1e-12


# ------------------------------------------------------------------ step 8: K*

def test_k_star_coefficient_is_the_corrected_one():
    d = sym.vandijk_k_star_coefficient()
    assert same(d, alpha ** ((1 + p) / p) / (p + 1) * (1 + gamma) ** (-(1 + p)))  # erratum I-20
    printed = sym.vandijk_k_star_coefficient_printed()
    assert same(printed / d, (1 + gamma) ** (2 * (1 + p)))
    f, f_printed = sym.as_function(d), sym.as_function(printed)
    bound = sym.as_function(sym.vandijk_max_sample_rate_bound())
    for p_, _, g_, a_ in POINTS:
        if a_ == 0:
            continue
        value = f(p=p_, gamma=g_, alpha=a_)
        assert rel(value, v.k_star_coefficient(alpha=a_, p=p_, gamma=g_, variant="corrected")) < 1e-12
        assert rel(f_printed(p=p_, gamma=g_, alpha=a_), v.k_star_coefficient(alpha=a_, p=p_, gamma=g_,
                                                                            variant="paper")) < 1e-12
        paper = v.k_star_coefficient(alpha=a_, p=p_, gamma=g_, variant="paper")
        assert (rel(value, paper) > 1e-6) is (g_ > 0)
        # At K = K* the bound on max_i q_i is exactly α; at the printed K* it is α(1+γ)^{2p}.
        n_c, size = 10_000.0, 7.0
        k_star = value * (n_c / size) ** (1 / p_) * n_c
        assert rel(bound(K=k_star, N_c=n_c, s=size, p=p_, gamma=g_), a_) < 1e-12
        k_paper = paper * (n_c / size) ** (1 / p_) * n_c
        assert rel(bound(K=k_paper, N_c=n_c, s=size, p=p_, gamma=g_), a_ * (1 + g_) ** (2 * p_)) < 1e-12
    assert same(sym.vandijk_k_star_printed_overshoot(), alpha * (1 + gamma) ** (2 * p))
    # Example 3 (L1635): D = (1/(8e))²/2, printed 0.0010573069002860367, times (1+m/T)² in the paper.
    assert rel(f(p=1, gamma=0, alpha=1 / (8 * E)), 0.0010573069002860367) < 1e-12


def test_as_function_names_its_arguments():
    f = sym.as_function(sym.vandijk_b_closed_form())
    with pytest.raises(ValueError, match="missing \\['p'\\]"):
        f()
    with pytest.raises(ValueError, match="unexpected \\['gamma'\\]"):
        f(p=1.0, gamma=0.1)
