"""Symbolic derivations (sympy) of the closed forms of Xu, Zhang, Wang, A(DP)²SGD (xu_adp2sgd.txt).

Theorem 2's algebra (xu L171-173, proof L518-532) rewritten in the noise multiplier z = σ/Δ₂, Δ₂ = 2G/B;
the μ that minimises σ² and the RDP order that minimises the certificate; Theorem 1's constants as
functions of ηB (L151-153); Proposition 1's substitution η = K/(B√T) (L163-165) and its staleness term;
Proposition 2's constant C₄ (L185-189) derived with the paper's noise convention and with the consistent
one. ``tests/bounds/test_symbolic_xu.py`` checks them against the printed forms and :mod:`bounds.adp2sgd`.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import sympy as sp

from fedplan.bounds.symbolic.algebra import as_function

__all__ = ["as_function"]  # re-exported for callers that evaluate these derivations

#: Xu symbols, all positive. ``Lam`` = log(1/δ), ``x`` = ηB, ``D0`` = F(w⁰) − F*, ``D`` = D0 + L(ς²/B + 6v²).
XU = SimpleNamespace(**{name: sp.Symbol(name, positive=True) for name in (
    "K", "n", "B", "T", "G", "eps", "mu", "alpha", "Lam", "sigma", "z", "rho", "eta", "x", "L", "tau", "rho_bar",
    "D0", "D", "varsigma2", "v2", "d", "a")})


@cache
def theorem2_sigma_squared() -> sp.Expr:
    """σ² = 20G²Tα/(K²n₍₁₎²με) (xu L171)."""
    s = XU
    return 20 * s.G**2 * s.T * s.alpha / (s.K**2 * s.n**2 * s.mu * s.eps)


def gamma() -> sp.Expr:
    """γ = B/(K n₍₁₎) (xu L520)."""
    return XU.B / (XU.K * XU.n)


@cache
def noise_multiplier_squared() -> sp.Expr:
    """z² = σ²/Δ₂² with Δ₂ = 2G/B (xu L518); equals 5Tγ²α/(με) (spec §3.6)."""
    return sp.simplify(theorem2_sigma_squared() / (2 * XU.G / XU.B) ** 2)


@cache
def noise_condition_epsilon() -> sp.Expr:
    """The ε at which z² = 3/2, α held fixed as the paper does: 10B²Tα/(3K²n₍₁₎²μ) (xu L171, L530)."""
    roots = sp.solve(sp.Eq(noise_multiplier_squared(), sp.Rational(3, 2)), XU.eps)
    if len(roots) != 1:
        raise ArithmeticError(f"expected one root, got {roots}")
    return sp.simplify(roots[0])


def condition7_printed() -> sp.Expr:
    """The argument of the log in (7) as printed: K³n³με/(K²n²μεB + 5TαB³) (xu L173)."""
    s = XU
    return s.K**3 * s.n**3 * s.mu * s.eps / (s.K**2 * s.n**2 * s.mu * s.eps * s.B + 5 * s.T * s.alpha * s.B**3)


@cache
def condition7_in_z() -> sp.Expr:
    """(7)'s argument in z: 1/(γ(1 + z²)), Lemma 2's order condition (xu L508)."""
    return 1 / (gamma() * (1 + noise_multiplier_squared()))


def rdp_order() -> sp.Expr:
    """α(μ) = Λ/((1−μ)ε) + 1 (xu L171, L526)."""
    return XU.Lam / ((1 - XU.mu) * XU.eps) + 1


@cache
def best_mu() -> sp.Expr:
    """The μ ∈ (0, 1) where d/dμ (α(μ)/μ) = 0 (σ² ∝ α/μ), written with a = Λ/ε."""
    ratio = (rdp_order() / XU.mu).subs(XU.Lam, XU.a * XU.eps)
    roots = [root for root in sp.solve(sp.diff(ratio, XU.mu), XU.mu)
             if sp.N(root.subs(XU.a, sp.Rational(23, 2))) < 1]
    if len(roots) != 1:
        raise ArithmeticError(f"expected one root in (0, 1), got {roots}")
    return sp.simplify(roots[0])


@cache
def best_order() -> sp.Expr:
    """The α > 1 minimising ρα + Λ/(α − 1) (composition then Lemma 4, L512, L524): 1 + √(Λ/ρ)."""
    s = XU
    roots = [root for root in sp.solve(sp.diff(s.rho * s.alpha + s.Lam / (s.alpha - 1), s.alpha), s.alpha)
             if (root - 1).is_positive]
    if len(roots) != 1:
        raise ArithmeticError(f"expected one root above 1, got {roots}")
    return roots[0]


def rho_bar(rho: sp.Expr = XU.rho, workers: sp.Expr = XU.K) -> sp.Expr:
    """ρ̄ = (K−1)/K (1/(1−ρ) + 2√ρ/(1−√ρ)²) (xu L155)."""
    return (workers - 1) / workers * (1 / (1 - rho) + 2 * sp.sqrt(rho) / (1 - sp.sqrt(rho)) ** 2)


@cache
def theorem1_constants() -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """(C₁, C₂, C₃) as printed (xu L151-153), in η, B, L, K, τ, ρ̄."""
    s = XU
    spread = s.tau * (s.K - 1) / s.K + s.rho_bar
    c1 = 1 - 24 * s.eta**2 * s.B**2 * s.L**2 * spread
    c3 = (sp.Rational(1, 2) + s.eta * s.B * s.L * s.tau**2 / s.K
          + (6 * s.eta**2 * s.B**2 * s.L**2 + s.eta * s.K * s.B * s.L
             + 12 * s.eta**3 * s.B**3 * s.L**3 * s.tau**2 / s.K) * 2 * s.rho_bar / c1)
    c2 = (-(s.eta * s.B * s.L**2 / s.K + 6 * s.eta**2 * s.B**2 * s.L**3 / s.K**2
            + 12 * s.eta**3 * s.B**3 * s.L**4 * s.tau**2 / s.K**3) * 4 * s.eta**2 * s.B**2 * spread / c1
          + s.eta * s.B / (2 * s.K) - s.eta**2 * s.B**2 * s.L / s.K**2
          - 2 * s.eta**3 * s.B**3 * s.L**2 * s.tau**2 / s.K**3)
    return c1, c2, c3


def theorem1_constants_in_eta_b() -> tuple[sp.Expr, ...]:
    """The constants with η = x/B: B drops out (they depend on η, B only through x = ηB)."""
    return tuple(sp.simplify(c.subs(XU.eta, XU.x / XU.B)) for c in theorem1_constants())


def theorem1_bound() -> sp.Expr:
    """2D0·K/(ηTB) + 2ηL(ς²B + 6v²B² + dσ²)/(BK) (xu L147), σ the std of noise on the sum gradient."""
    s = XU
    return (2 * s.D0 * s.K / (s.eta * s.T * s.B)
            + 2 * s.eta * s.L / (s.B * s.K) * (s.varsigma2 * s.B + 6 * s.v2 * s.B**2 + s.d * s.sigma**2))


def proposition1_rate_printed() -> sp.Expr:
    """(2D0 + 2L(ς²/B + 6v² + dσ²/B²))/√T (xu L165)."""
    s = XU
    return (2 * s.D0 + 2 * s.L * (s.varsigma2 / s.B + 6 * s.v2 + s.d * s.sigma**2 / s.B**2)) / sp.sqrt(s.T)


@cache
def proposition1_rate() -> sp.Expr:
    """Theorem 1's bound at η = K/(B√T) (xu L163)."""
    return sp.simplify(theorem1_bound().subs(XU.eta, XU.K / (XU.B * sp.sqrt(XU.T))))


def staleness_factor_at(steps: sp.Expr) -> sp.Expr:
    """ηBLτ²/K, the τ² term of C₃ (L151), at η = K/(B√T) and the given T."""
    s = XU
    return sp.simplify((s.eta * s.B * s.L * s.tau**2 / s.K).subs(s.eta, s.K / (s.B * sp.sqrt(s.T))).subs(s.T, steps))


def proposition2_steps() -> sp.Expr:
    """T = 2D K²n₍₁₎²ε²/(40 d L G² log(1/δ)) (xu L185)."""
    s = XU
    return 2 * s.D * s.K**2 * s.n**2 * s.eps**2 / (40 * s.d * s.L * s.G**2 * s.Lam)


@cache
def proposition2_c4(noise_on_sum: bool) -> sp.Expr:
    """C₄ with L165 = C₄ G√(dL·D·log(1/δ))/(K n₍₁₎ ε) at T of (8) and Theorem 2's σ² (xu L187-189).

    ``noise_on_sum=False``: the paper's substitution, Theorem 2's σ (noise on the mean) into L165's σ (noise on
    the sum). ``True``: the consistent one, std B·σ on the sum.
    """
    s = XU
    sigma2 = theorem2_sigma_squared().subs(s.alpha, rdp_order()) * (s.B**2 if noise_on_sum else 1)
    rate = (2 * s.D + 2 * s.L * s.d * s.sigma**2 / s.B**2) / sp.sqrt(s.T)
    value = rate.subs(s.sigma**2, sigma2).subs(s.T, proposition2_steps())
    return sp.simplify(value * s.K * s.n * s.eps / (s.G * sp.sqrt(s.d * s.L * s.D * s.Lam)))
