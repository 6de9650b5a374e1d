"""Symbolic derivations (sympy) of the closed forms of Zhou et al., FedSGD-DPC (zhou_queries_replies_fl_dp.txt).

The closed forms of Sec. V-B and VI-B are derived from the bounds they rest on: the C and E constants are
read off Theorem 3/4's right-hand side (zhou L298, L401), T*(b) and b*(T) solve the first-order
conditions of U(T, b) (L322, L336) and the regime criterion of spec D2 is the sign of U's slope along
the stationary curve bT = √(C₁/C₂). ``tests/bounds/test_symbolic_zhou.py`` checks them against the
printed formulas and the numeric functions of :mod:`bounds.fedsgd_dpc`.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import sympy as sp

from fedplan.bounds.symbolic.algebra import as_function

__all__ = ["as_function"]  # re-exported for callers that evaluate these derivations

#: Zhou symbols. T, b, C₁, C₂, γ and the problem constants are positive; C₃ and E₂ may have either sign.
#: ``N_minus_1`` = N − 1 > 0 is used inside the derivations so that √(N − 1) can be pulled out.
ZHOU = SimpleNamespace(
    **{name: sp.Symbol(name, positive=True) for name in (
        "T", "b", "N", "gamma", "C1", "C2", "E1", "E3", "mu", "lam", "G", "Gamma", "Y0", "p", "d", "xi",
        "Sigma", "Sigma_G", "c2", "Lambda_term", "n")},
    C3=sp.Symbol("C3", real=True), E2=sp.Symbol("E2", real=True),
)
_zhou_n1 = sp.Symbol("N_minus_1", positive=True)


def _zhou_with_n1(expr: sp.Expr) -> sp.Expr:
    return expr.subs(ZHOU.N, _zhou_n1 + 1)


def _zhou_with_n(expr: sp.Expr) -> sp.Expr:
    return expr.subs(_zhou_n1, ZHOU.N - 1)


def _zhou_positive_root(expr: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """The one root of expr = 0 in var that sympy cannot prove non-positive."""
    roots = [root for root in sp.solve(sp.Eq(expr, 0), var) if root.is_positive is not False]
    if len(roots) != 1:
        raise ArithmeticError(f"expected one positive root of {expr} = 0 in {var}, got {roots}")
    return roots[0]


def _zhou_omega0(extra: sp.Expr = sp.S.Zero) -> sp.Expr:
    z = ZHOU
    return 2 * (z.N - z.b) / (z.N - 1) * z.G**2 / z.b + extra + 2 * z.lam * z.Gamma


@cache
def zhou_laplace_bound() -> sp.Expr:
    """Theorem 3 at t = T: (1/(T+γ))((4/μ²)ω₀ + γY₀) + ω₁/(μ²(T+γ)) (zhou L296-298).

    ω₀ = 2(N−b)G²/((N−1)b) + 2λΓ and ω₁ = 32pbT²ξ₁²Σ/(Nd²) with Σ = Σ_i ε_i⁻² (Proposition 1, L210).
    """
    z = ZHOU
    omega1 = 32 * z.p * z.b * z.T**2 * z.xi**2 / (z.N * z.d**2) * z.Sigma
    return (4 / z.mu**2 * _zhou_omega0() + z.gamma * z.Y0) / (z.T + z.gamma) + omega1 / (z.mu**2 * (z.T + z.gamma))


@cache
def zhou_laplace_constants() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(C₁, C₂, C₃) read off b·(T+γ)·U = C₁ + C₂b²T² + C₃b, U from Theorem 3 (zhou L354-356).

    Gives C₁ = 8NG²/(μ²(N−1)), C₂ = 32pξ₁²Σ/(μ²Nd²), C₃ = γY₀ + (4/μ²)(2λΓ − 2G²/(N−1)) (L356).
    """
    z = ZHOU
    scaled = sp.Poly(sp.expand(sp.cancel(zhou_laplace_bound() * (z.T + z.gamma) * z.b)), z.T, z.b)
    coefficients = dict(zip(scaled.monoms(), scaled.coeffs(), strict=True))
    if set(coefficients) - {(0, 0), (2, 2), (0, 1)}:
        raise ArithmeticError(f"b(T+γ)U is not C1 + C2 b²T² + C3 b: {scaled}")
    return tuple(sp.factor(coefficients.get(key, sp.S.Zero)) for key in ((0, 0), (2, 2), (0, 1)))


def zhou_laplace_bound_in_constants() -> sp.Expr:
    """U(T, b) = (C₁/b + C₂bT² + C₃)/(T + γ) (zhou L354)."""
    z = ZHOU
    return (z.C1 / z.b + z.C2 * z.b * z.T**2 + z.C3) / (z.T + z.gamma)


@cache
def zhou_rounds_star_generic() -> tuple[sp.Expr, sp.Symbol, sp.Symbol]:
    """(T*, a, c): the minimiser over T ≥ 0 of (a + cT²)/(T + γ), a ≥ 0, c > 0; Eq. (6) has a = A₁ + γY₀, c = A₂.

    The stationary point solves cT² + 2cγT − a = 0 (zhou L322); the second derivative 2(a + cγ²)/(T+γ)³
    is positive, so U is convex in T (L322) and the positive root is the minimiser.
    """
    z = ZHOU
    a, c = sp.symbols("a c", positive=True)
    u = (a + c * z.T**2) / (z.T + z.gamma)
    root = _zhou_positive_root(sp.numer(sp.together(sp.diff(u, z.T))), z.T)
    if not sp.factor(sp.diff(u, z.T, 2)).is_positive:
        raise ArithmeticError("U(T) should be convex")
    return root, a, c


@cache
def zhou_rounds_star() -> sp.Expr:
    """T*(b) = √(γ² + (C₁/b + C₃)/(C₂b)) − γ: Eq. (6) with A₁ + γY₀ = C₁/b + C₃, A₂ = C₂b (zhou L322, L364)."""
    z = ZHOU
    root, a, c = zhou_rounds_star_generic()
    return root.subs({a: z.C1 / z.b + z.C3, c: z.C2 * z.b})


@cache
def zhou_clients_star() -> sp.Expr:
    """b*(T) = √(C₁/C₂)/T, the root of ∂U/∂b = (C₂T² − C₁/b²)/(T+γ) (zhou L336; U convex in b, L336)."""
    z = ZHOU
    u = zhou_laplace_bound_in_constants()
    if not sp.factor(sp.diff(u, z.b, 2)).is_positive:
        raise ArithmeticError("U(b) should be convex")
    return _zhou_positive_root(sp.numer(sp.together(sp.diff(u, z.b))), z.b)


@cache
def zhou_clients_star_physical() -> sp.Expr:
    """b*(T) in the problem constants: GNd/(2Tξ₁√(p(N−1)Σ)) (zhou L336, where "Gnd" is printed)."""
    z = ZHOU
    c1, c2, _ = zhou_laplace_constants()
    value = zhou_clients_star().subs({z.C1: _zhou_with_n1(c1), z.C2: _zhou_with_n1(c2)})
    return _zhou_with_n(sp.powsimp(sp.factor(value), force=True))


@cache
def zhou_regime_curve() -> sp.Expr:
    """U along the stationary curve b = √(C₁/C₂)/T: (2√(C₁C₂)T + C₃)/(T + γ) (spec D2)."""
    z = ZHOU
    return sp.factor(sp.simplify(zhou_laplace_bound_in_constants().subs(z.b, zhou_clients_star())))


@cache
def zhou_regime_slope() -> sp.Expr:
    """(T+γ)²·dU/dT along bT = √(C₁/C₂): 2γ√(C₁C₂) − C₃, free of T (spec D2).

    Negative ⟺ C₃ > 2γ√(C₁C₂): U keeps falling towards b = 1, so b* = 1; positive: b* = N.
    """
    z = ZHOU
    slope = sp.simplify(sp.diff(zhou_regime_curve(), z.T) * (z.T + z.gamma) ** 2)
    if z.T in slope.free_symbols:
        raise ArithmeticError(f"the slope factor depends on T: {slope}")
    return sp.expand(slope)


@cache
def zhou_gaussian_bound() -> sp.Expr:
    """Theorem 4 at t = T with ω'₀ = 2(N−b)G²/((N−1)b) + Λ + 2λΓ, ω'₁ = 4c₂²pTξ₂²Σ_G/d² (zhou L401).

    Λ = Σ_i d_iΛ_i²/(qd²) is the symbol ``Lambda_term``; Σ_G = Σ_i ln(1/δ_i)/ε_i².
    """
    z = ZHOU
    omega1 = 4 * z.c2**2 * z.p * z.T * z.xi**2 / z.d**2 * z.Sigma_G
    return ((4 / z.mu**2 * _zhou_omega0(z.Lambda_term) + z.gamma * z.Y0) / (z.T + z.gamma)
            + omega1 / (z.mu**2 * (z.T + z.gamma)))


@cache
def zhou_gaussian_constants() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(E₁, E₂, E₃) with U = (E₁/b + E₂)/(T + γ) + E₃, E₃ = lim_{T→∞} U, from Theorem 4 (zhou L414)."""
    z = ZHOU
    u = zhou_gaussian_bound()
    e3 = sp.factor(sp.limit(u, z.T, sp.oo))
    scaled = sp.Poly(sp.expand(sp.cancel((u - e3) * (z.T + z.gamma) * z.b)), z.T, z.b)
    coefficients = dict(zip(scaled.monoms(), scaled.coeffs(), strict=True))
    if set(coefficients) - {(0, 0), (0, 1)}:
        raise ArithmeticError(f"b(T+γ)(U − E3) is not E1 + E2 b: {scaled}")
    return sp.factor(coefficients[(0, 0)]), sp.expand(coefficients[(0, 1)]), e3


@cache
def zhou_gaussian_slope() -> sp.Expr:
    """(T+γ)²·∂U/∂T of U = (E₁/b + E₂)/(T+γ) + E₃: −(E₁/b + E₂), so T* ∈ {0, T_max} (zhou L418-419; spec D5)."""
    z = ZHOU
    u = (z.E1 / z.b + z.E2) / (z.T + z.gamma) + z.E3
    return sp.simplify(sp.diff(u, z.T) * (z.T + z.gamma) ** 2)
