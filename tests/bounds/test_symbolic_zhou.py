"""bounds.symbolic.zhou: closed forms derived by sympy from Theorems 3/4 against the printed
formulas (zhou L322, L334-336, L356, L364, L414) and against the numeric functions of bounds.fedsgd_dpc.
"""

import math
from functools import cache

import numpy as np
import pytest
import sympy as sp

from fedplan.bounds import fedsgd_dpc as f
from fedplan.bounds.symbolic import zhou as sym

Z = sym.ZHOU


def zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


@cache
def function(expr: sp.Expr):
    return sym.as_function(expr)


def evaluate(expr: sp.Expr, values: dict) -> float:
    """``expr`` at ``values`` (a superset of its free symbols, by name)."""
    return function(expr)(**{symbol.name: values[symbol.name] for symbol in expr.free_symbols})


def printed_c():
    """C₁, C₂, C₃ as printed at L356."""
    return (4 / Z.mu**2 * 2 * Z.N * Z.G**2 / (Z.N - 1),
            1 / Z.mu**2 * 32 * Z.p * Z.xi**2 / (Z.N * Z.d**2) * Z.Sigma,
            Z.gamma * Z.Y0 + 4 / Z.mu**2 * (2 * Z.lam * Z.Gamma - 2 * Z.G**2 / (Z.N - 1)))


def random_problem(rng, n):
    mu = rng.uniform(0.1, 10)
    return f.Problem(num_clients=n, model_dim=int(rng.integers(1, 10_000)), client_sizes=rng.uniform(10, 1e4, n),
                     strong_convexity=mu, smoothness=mu * rng.uniform(1, 20), gradient_bound=rng.uniform(0, 30),
                     heterogeneity=rng.uniform(0, 2), initial_distance=rng.uniform(0, 20),
                     local_gradient_std=rng.uniform(0, 5, n))


def physical_values(prob, eps, xi):
    return dict(N=prob.num_clients, mu=prob.strong_convexity, lam=prob.smoothness, G=prob.gradient_bound,
                Gamma=prob.heterogeneity, Y0=prob.initial_distance, p=prob.model_dim, d=prob.total_size, xi=xi,
                gamma=prob.gamma, Sigma=float(np.sum(eps**-2.0)))


# ---------------------------------------------------------------- C constants (L354-356)

def test_c_constants_derived_from_theorem_3_are_the_printed_ones():
    derived = sym.zhou_laplace_constants()
    for ours, printed in zip(derived, printed_c(), strict=True):
        assert zero(ours - printed)
    assert not zero(derived[2] - printed_c()[2].subs(Z.Gamma, 2 * Z.Gamma))  # the check can fail
    assert zero(sym.zhou_laplace_bound() - sym.zhou_laplace_bound_in_constants().subs(
        {Z.C1: derived[0], Z.C2: derived[1], Z.C3: derived[2]}))


def test_c_constants_agree_with_laplace_constants_on_random_problems():
    rng = np.random.default_rng(11)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        prob = random_problem(rng, n)
        eps, xi = rng.uniform(0.1, 10, n), rng.uniform(1, 500)
        numeric = f.laplace_constants(problem=prob, epsilon=eps, clipping_norm=xi)
        values = physical_values(prob, eps, xi)
        for expr, ours in zip(sym.zhou_laplace_constants(), (numeric.C1, numeric.C2, numeric.C3), strict=True):
            assert evaluate(expr, values) == pytest.approx(ours, rel=1e-12, abs=1e-12 * numeric.C1)


# ---------------------------------------------------------------- T*(b): Eq. (6), L322, L364

def test_t_star_is_eq6_and_solutions_1_2():
    root, a, c = sym.zhou_rounds_star_generic()
    assert zero(root - (sp.sqrt(Z.gamma**2 + a / c) - Z.gamma))  # Eq. (6) with a = A1 + γY0, c = A2 (L322)
    printed_solution = sp.sqrt(Z.gamma**2 + (Z.C1 / Z.b + Z.C3) / (Z.C2 * Z.b)) - Z.gamma  # L364
    assert zero(sym.zhou_rounds_star() - printed_solution)
    assert not zero(sym.zhou_rounds_star() - printed_solution.subs(Z.C3, 0))


def test_eq6_a_constants_are_the_c_constants_at_fixed_b():
    """A₁ + γY₀ = C₁/b + C₃ and A₂ = C₂b (L320 vs L356), so Eq. (6) and Solutions 1 & 2 agree."""
    c1, c2, c3 = sym.zhou_laplace_constants()
    a1 = 4 / Z.mu**2 * (2 * (Z.N - Z.b) / (Z.N - 1) / Z.b * Z.G**2 + 2 * Z.lam * Z.Gamma)  # L320
    a2 = 32 / Z.mu**2 * Z.p * Z.b * Z.xi**2 / (Z.N * Z.d**2) * Z.Sigma
    assert zero(a1 + Z.gamma * Z.Y0 - (c1 / Z.b + c3)) and zero(a2 - c2 * Z.b)


def test_t_star_agrees_with_optimal_rounds():
    rng = np.random.default_rng(12)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        c1 = 10 ** rng.uniform(-2, 2)
        c = f.LaplaceConstants(C1=c1, C2=10 ** rng.uniform(-5, 1), C3=-c1 / n + 10 ** rng.uniform(-3, 2),
                               gamma=rng.uniform(2, 30), num_clients=n)
        b = int(rng.integers(1, n + 1))
        assert f.optimal_rounds(constants=c, clients_per_round=b).continuous == pytest.approx(
            evaluate(sym.zhou_rounds_star(), dict(C1=c.C1, C2=c.C2, C3=c.C3, gamma=c.gamma, b=b)), rel=1e-12, abs=1e-12)


# ---------------------------------------------------------------- b*(T): L334-336

def test_b_star_is_sqrt_b1_over_b2():
    assert zero(sym.zhou_clients_star() - sp.sqrt(Z.C1 / Z.C2) / Z.T)
    b1 = Z.C1 / (Z.T + Z.gamma)  # B₁ = (4/μ²)(G²/(T+γ))(2N/(N−1)) = C₁/(T+γ) (L334)
    b2 = Z.C2 * Z.T**2 / (Z.T + Z.gamma)  # B₂ = C₂T²/(T+γ)
    assert zero(sym.zhou_clients_star() - sp.sqrt(b1 / b2))
    c1, c2, _ = printed_c()
    assert zero(b1.subs(Z.C1, c1) - 4 / Z.mu**2 * Z.G**2 / (Z.T + Z.gamma) * 2 * Z.N / (Z.N - 1))
    assert zero(b2.subs(Z.C2, c2) - 32 * Z.p * Z.T**2 * Z.xi**2 * Z.Sigma / (Z.mu**2 * (Z.T + Z.gamma) * Z.N * Z.d**2))


def test_b_star_in_problem_constants_has_capital_n_where_gnd_is_printed():
    """Erratum Z-3: L336 prints "Gnd"; the derivation gives G·N·d."""
    derived = sym.zhou_clients_star_physical()
    printed = Z.G * Z.n * Z.d / (2 * Z.T * Z.xi) / sp.sqrt(Z.p * (Z.N - 1)) / sp.sqrt(Z.Sigma)
    assert zero(derived - printed.subs(Z.n, Z.N))
    assert not zero(derived - printed)


def test_b_star_agrees_with_optimal_clients():
    rng = np.random.default_rng(13)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        prob = random_problem(rng, n)
        eps, xi, t = rng.uniform(0.1, 10, n), rng.uniform(1, 500), int(rng.integers(1, 500))
        c = f.laplace_constants(problem=prob, epsilon=eps, clipping_norm=xi)
        values = physical_values(prob, eps, xi)
        expected = evaluate(sym.zhou_clients_star_physical(), values | {"T": t})
        assert f.optimal_clients(constants=c, rounds=t).continuous == pytest.approx(expected, rel=1e-12)


# ---------------------------------------------------------------- the regime criterion (spec D2)

def test_u_along_the_stationary_curve_and_its_slope():
    assert zero(sym.zhou_regime_curve() - (2 * sp.sqrt(Z.C1 * Z.C2) * Z.T + Z.C3) / (Z.T + Z.gamma))
    assert zero(sym.zhou_regime_slope() - (2 * Z.gamma * sp.sqrt(Z.C1 * Z.C2) - Z.C3))


def test_regime_margin_is_minus_the_derived_slope():
    rng = np.random.default_rng(14)
    slope = sym.as_function(sym.zhou_regime_slope())
    for _ in range(50):
        c1 = 10 ** rng.uniform(-2, 2)
        c = f.LaplaceConstants(C1=c1, C2=10 ** rng.uniform(-4, 0), C3=-c1 / 10 + 10 ** rng.uniform(-2, 2),
                               gamma=rng.uniform(2, 20), num_clients=10)
        regime = f.laplace_regime(constants=c)
        value = slope(C1=c.C1, C2=c.C2, C3=c.C3, gamma=c.gamma)
        assert regime.margin == pytest.approx(-value, rel=1e-12, abs=1e-12)
        assert regime.clients_per_round == (1 if value < 0 else 10)


# ---------------------------------------------------------------- Gaussian: E constants (L414) and D5

def test_e_constants_derived_from_theorem_4_are_the_printed_ones():
    e1, e2, e3 = sym.zhou_gaussian_constants()
    noise = Z.c2**2 * Z.p * Z.xi**2 / Z.d**2 * Z.Sigma_G
    assert zero(e1 - 8 * Z.G**2 / Z.mu**2 * Z.N / (Z.N - 1))
    assert zero(e2 - (4 / Z.mu**2 * (-2 * Z.G**2 / (Z.N - 1) + Z.Lambda_term + 2 * Z.lam * Z.Gamma) + Z.gamma * Z.Y0
                      - 4 / Z.mu**2 * Z.gamma * noise))
    assert zero(e3 - 4 / Z.mu**2 * noise)
    assert not zero(e2 - (4 / Z.mu**2 * (-2 * Z.G**2 / (Z.N - 1) + Z.Lambda_term + 2 * Z.lam * Z.Gamma)
                          + Z.gamma * Z.Y0))


def test_e_constants_agree_with_gaussian_constants():
    rng = np.random.default_rng(15)
    for _ in range(20):
        n = int(rng.integers(2, 30))
        prob = random_problem(rng, n)
        eps, deltas = rng.uniform(0.05, 2, n), 10 ** rng.uniform(-8, -3, n)
        xi, q, c2 = rng.uniform(0.1, 20), rng.uniform(0.001, 0.5), rng.uniform(0.5, 5)
        numeric = f.gaussian_constants(problem=prob, epsilon=eps, delta=deltas, clipping_norm=xi, sample_rate=q, c2=c2)
        values = physical_values(prob, eps, xi) | dict(
            c2=c2, Sigma_G=float(np.sum(np.log(1 / deltas) / eps**2)),
            Lambda_term=float(np.sum(np.asarray(prob.client_sizes) * np.asarray(prob.local_gradient_std) ** 2))
            / (q * prob.total_size**2))
        for expr, ours in zip(sym.zhou_gaussian_constants(), (numeric.E1, numeric.E2, numeric.E3), strict=True):
            assert evaluate(expr, values) == pytest.approx(ours, rel=1e-10, abs=1e-12 * numeric.E1)


def test_gaussian_slope_decides_t_star():
    assert zero(sym.zhou_gaussian_slope() + Z.E1 / Z.b + Z.E2)
    slope = sym.as_function(sym.zhou_gaussian_slope())
    for e2, expected in ((1.0, 50), (-3.0, 0)):
        c = f.GaussianConstants(E1=8.0, E2=e2, E3=0.5, gamma=2.0, num_clients=4)
        assert (slope(E1=8.0, E2=e2, b=4) < 0) == (expected == 50)
        assert f.gaussian_choice(constants=c, max_rounds=50).rounds == expected
    assert math.isclose(slope(E1=8.0, E2=-2.0, b=4), 0.0, abs_tol=1e-15)  # flat: E1/N + E2 = 0
