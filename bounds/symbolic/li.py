"""Symbolic derivations (sympy) of the closed forms of Li et al., AUDP/MAPA (li_mapa_async_fl_dp.txt).

Each closed form of :mod:`bounds.mapa` is derived here from the inequality the paper states: Theorem 3's
sensitivity from Eq. (12) (li L279), MAPA's stage length T₀ (Eq. (15), L318) and P (Eq. (16), L326) from
Theorem 4's right-hand side at γ = 1/(2PL(τ+1)) (L310-314), the step-size thresholds with staleness
(Eq. (13) L293, Eq. (11) L249, the coefficient of L817-819), the corrected Theorem 2 terms from Eq. (25)
(L715-719) and the second moment of the Eq. (6) noise on R^N (L166, L744).
``tests/bounds/test_symbolic_li.py`` checks them against the printed forms and the numeric functions.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import sympy as sp

from fedplan.bounds.symbolic.algebra import as_function, solve_positive

__all__ = ["as_function"]  # re-exported for callers that evaluate these derivations

#: Li symbols (all positive; ``tau`` = τ_max ≥ 0). ``c`` = √(1 − δ) ∈ (0, 1) lets sympy take square roots.
LI = SimpleNamespace(
    **{name: sp.Symbol(name, positive=True) for name in (
        "sigma", "b", "delta", "c", "dS", "eps", "theta", "L", "F0", "Db", "P", "T", "gamma", "G", "R", "lam",
        "r", "C", "u", "t")},
    tau=sp.Symbol("tau", nonnegative=True), N=sp.Symbol("N", positive=True, integer=True),
)


@cache
def theorem3_sensitivity() -> sp.Expr:
    """The admissible root of (1 − 4σ²/(b²ΔS²))² = 1 − δ (li Eq. (12), L279), in terms of δ.

    With u = 4σ²/(b²ΔS²): (1 − u)² = c² (c = √(1−δ)) has roots u = 1 ± c; only u = 1 − c < 1 keeps the
    Chebyshev factor 1 − u positive (L285). Then ΔS = 2σ/(b√(1 − √(1−δ))).
    """
    s = LI
    roots = sp.solve(sp.Eq((1 - s.u) ** 2, s.c**2), s.u)
    admissible = [root for root in roots if (root - 1).is_negative]
    if len(admissible) != 1:
        raise ArithmeticError(f"expected one admissible root of Eq. (12), got {roots}")
    root, increasing = solve_positive(4 * s.sigma**2 / (s.b**2 * s.dS**2), s.u, s.dS)  # u > 0 as a symbol
    if increasing:
        raise ArithmeticError("4σ²/(b²ΔS²) should decrease in ΔS")
    return root.subs(s.u, admissible[0]).subs(s.c, sp.sqrt(1 - s.delta))


def theorem3_stable_sensitivity() -> sp.Expr:
    """2σ√(1+√(1−δ)) / (b√δ): the form :func:`bounds.mapa.theorem3_sensitivity` evaluates."""
    s = LI
    return 2 * s.sigma * sp.sqrt(1 + sp.sqrt(1 - s.delta)) / (s.b * sp.sqrt(s.delta))


def theorem3_failure_probability() -> sp.Expr:
    """δ(ΔS) = 1 − (1 − 4σ²/(b²ΔS²))² (Eq. (12) at equality)."""
    s = LI
    return 1 - (1 - 4 * s.sigma**2 / (s.b**2 * s.dS**2)) ** 2


def theorem4_rhs() -> sp.Expr:
    """2F₀/(Tγ) + 2Δ_bLγ (li Eq. (14), L297)."""
    s = LI
    return 2 * s.F0 / (s.T * s.gamma) + 2 * s.Db * s.L * s.gamma


def mapa_learning_rate() -> sp.Expr:
    """γ = 1/(2PL(τ+1)) (li L310)."""
    s = LI
    return 1 / (2 * s.P * s.L * (s.tau + 1))


@cache
def mapa_rhs_terms() -> tuple[sp.Expr, sp.Expr]:
    """The two terms of Eq. (14) at MAPA's γ: 4PL(τ+1)F₀/T and Δ_b/(P(τ+1)) (li L314)."""
    s = LI
    gamma = mapa_learning_rate()
    return sp.simplify(2 * s.F0 / (s.T * gamma)), sp.simplify(2 * s.Db * s.L * gamma)


@cache
def mapa_stage_length() -> sp.Expr:
    """T₀: the first term of Eq. (14) at MAPA's γ is ≤ the second iff T ≥ T₀ (li Eq. (15), L318)."""
    first, second = mapa_rhs_terms()
    root, increasing = solve_positive(first, second, LI.T)
    if increasing:
        raise ArithmeticError("the optimisation term should decrease in T")
    return root


def mapa_rhs_at_stage_end() -> sp.Expr:
    """Eq. (14)'s right-hand side at T = T₀ (li L320: 2Δ_b/(P(τ+1)))."""
    first, second = mapa_rhs_terms()
    return sp.simplify((first + second).subs(LI.T, mapa_stage_length()))


def mapa_next_sensitivity() -> sp.Expr:
    """ΔS' = 2G'/b with G' = √(RHS at T₀) (li L320, "according to Theorem 1")."""
    return 2 * sp.sqrt(mapa_rhs_at_stage_end()) / LI.b


@cache
def mapa_p() -> sp.Expr:
    """Smallest P with ΔS' ≤ θΔS (li Eq. (16), L322-326)."""
    s = LI
    root, increasing = solve_positive(mapa_next_sensitivity(), s.theta * s.dS, s.P)
    if increasing:
        raise ArithmeticError("ΔS' should decrease in P")
    return root


def repo_p() -> sp.Expr:
    """The authors' code: P = 2Δ_b/(θ²C²(τ+1)) with the per-sample clip C = bΔS/2 (spec [chk A5])."""
    s = LI
    return (2 * s.Db / (s.theta**2 * s.C**2 * (s.tau + 1))).subs(s.C, s.b * s.dS / 2)


@cache
def mapa_first_p() -> sp.Expr:
    """P₁ of Eq. (16) at the Theorem-3 start with the paper noise Δ_b = σ²/b + 2ΔS₀²/ε² (σ cancels)."""
    s = LI
    start = theorem3_sensitivity()
    delta_b = s.sigma**2 / s.b + 2 * start**2 / s.eps**2
    return sp.simplify(mapa_p().subs(s.Db, delta_b).subs(s.dS, start))


def theorem4_step_coefficient() -> sp.Expr:
    """γ²(L/2 + L²τ²γ) − γ/2 at γ = 1/(2L(τ+1)) (li L817-819), divided by γ."""
    s = LI
    gamma = 1 / (2 * s.L * (s.tau + 1))
    return sp.factor(sp.simplify((gamma**2 * (s.L / 2 + s.L**2 * s.tau**2 * gamma) - gamma / 2) / gamma))


def theorem4_staleness_ratio() -> sp.Expr:
    """2L²γ³τ / (Lγ²) at γ = 1/(2L(τ+1)) (li L829): τ/(τ+1) ≤ 1."""
    s = LI
    gamma = 1 / (2 * s.L * (s.tau + 1))
    return sp.simplify(2 * s.L**2 * gamma**3 * s.tau / (s.L * gamma**2))


@cache
def eq11_max_learning_rate() -> sp.Expr:
    """Positive root of γ − Lγ² − L(τ+1)²γ² = 0 (li L249 corrected): 1/(L((τ+1)² + 1))."""
    s = LI
    roots = [root for root in sp.solve(s.gamma - s.L * s.gamma**2 - s.L * (s.tau + 1) ** 2 * s.gamma**2, s.gamma)
             if root.is_positive]
    if len(roots) != 1:
        raise ArithmeticError(f"expected one positive root, got {roots}")
    return sp.factor(roots[0])


def audp_learning_rate() -> sp.Expr:
    """γ_t = 1/(L(τ+1) + √(Δ_b+1)√t) (li Eq. (10), L227)."""
    s = LI
    return 1 / (s.L * (s.tau + 1) + sp.sqrt(s.Db + 1) * sp.sqrt(s.t))


@cache
def theorem2_corrected_tail_terms() -> tuple[sp.Expr, sp.Expr]:
    """The noise and radius terms of the corrected Theorem 2 (erratum LI-7), derived from Eq. (25).

    Noise: (Δ_b/T)·Σγ_t ≤ (Δ_b/T)∫₀ᵀ dt/(√(Δ_b+1)√t) (Eq. (27), L725). Radius: the telescoping sum is at
    most R²/(2γ_T) (not the printed Eq. (28)), divided by T.
    """
    s = LI
    integral = sp.integrate(1 / (sp.sqrt(s.Db + 1) * sp.sqrt(s.t)), (s.t, 0, s.T))
    noise = sp.simplify(s.Db / s.T * integral)
    radius = sp.expand(s.R**2 / (2 * audp_learning_rate().subs(s.t, s.T)) / s.T)
    return noise, radius


@cache
def noise_second_moment() -> tuple[sp.Expr, sp.Expr]:
    """E‖η‖² of the Eq. (6) noise: on R^N (radius density ∝ r^{N−1}e^{−r/λ}) and the paper's 1-D Laplace."""
    s = LI
    radial = sp.exp(-s.r / s.lam) * s.r ** (s.N - 1)
    moment = sp.gammasimp(sp.integrate(s.r**2 * radial, (s.r, 0, sp.oo)) / sp.integrate(radial, (s.r, 0, sp.oo)))
    x = sp.Symbol("x", real=True)
    laplace = sp.integrate(x**2 * sp.exp(-sp.Abs(x) / s.lam) / (2 * s.lam), (x, -sp.oo, sp.oo))
    return sp.factor(moment), sp.simplify(laplace)
