"""Symbolic derivations (sympy) behind :mod:`bounds.dpscd` and :mod:`bounds.kardam` (Damaskinos thesis).

* AdaSGD's β: the rate at which e^{−βτ} meets 1/(τ+1) at τ_thres/2 (L612, resolved A-1);
* the maximiser of τΛ(τ) and the decay bound χ for exponential and stretched dampening (Eq. 5.3, L1936-1939);
* Theorem 5 made explicit: Theorem 4 (L1879) with Definition 10's γ (L1189);
* the unrolled recursion of Theorem 7 (L1508-1512) and its condition A < ½ ⇔ L(2(1−κ)μλ − 1) > μλN (L1498);
* Lemma 6's constant for ridge regression: the exact expected increase of F* under the perturbation step,
  ½·s²·Σ_{j∈B}(1/N + ‖x_j‖²/(λN²)) (spec §5.4), computed on a small instance with symbolic data.

``tests/bounds/test_symbolic_damaskinos.py`` checks these against the numeric functions.
"""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace

import sympy as sp

from fedplan.bounds.symbolic.algebra import as_function

__all__ = ["as_function"]

DAMASKINOS = SimpleNamespace(**{name: sp.Symbol(name, positive=True) for name in (
    "tau", "tau_thres", "beta", "rate", "root", "A", "c", "S0", "mu", "lam", "N", "L", "kappa_c", "gap", "K", "T",
    "M", "d", "sigma", "chi", "phi", "D", "s")})
_t = sp.Symbol("t", integer=True, nonnegative=True)


@cache
def adasgd_beta() -> sp.Expr:
    """β solving 1/(τ_thres/2 + 1) = e^{−β τ_thres/2} (L612): 2 log(1 + τ_thres/2)/τ_thres."""
    z = DAMASKINOS
    half = z.tau_thres / 2
    (root,) = sp.solve(sp.Eq(1 / (half + 1), sp.exp(-z.beta * half)), z.beta)
    return sp.simplify(root)


@cache
def tau_weight_maximiser(kind: str) -> tuple[sp.Expr, sp.Expr]:
    """(τ*, χ = τ*Λ(τ*)) for ``"exponential"`` Λ = e^{−rate·τ} or ``"stretched"`` e^{−rate·τ^{1/root}}."""
    z = DAMASKINOS
    weight = z.tau * (sp.exp(-z.rate * z.tau) if kind == "exponential" else sp.exp(-z.rate * z.tau ** (1 / z.root)))
    (peak,) = sp.solve(sp.diff(sp.log(weight), z.tau), z.tau)
    return sp.simplify(peak), sp.simplify(weight.subs(z.tau, peak))


@cache
def unrolled_recursion() -> sp.Expr:
    """S_t with S_t = A·S_{t−1} + c and S_0 given (L1508): A^t S_0 + c(1 − A^t)/(1 − A)."""
    z = DAMASKINOS
    s = sp.Function("S")
    solution = sp.rsolve(s(_t + 1) - z.A * s(_t) - z.c, s(_t), {s(0): z.S0})
    return sp.simplify(solution)


def recursion_step() -> sp.Symbol:
    """The step index t of :func:`unrolled_recursion`."""
    return _t


@cache
def theorem7_contraction() -> sp.Expr:
    """A = 1 − (1−κ)μλL/(μλN + L) (L1508), with κ_c = 1 − κ > 0."""
    z = DAMASKINOS
    return 1 - z.kappa_c * z.mu * z.lam * z.L / (z.mu * z.lam * z.N + z.L)


@cache
def theorem7_condition_margin() -> sp.Expr:
    """2(μλN + L)(½ − A), positive exactly when A < ½: L(2(1−κ)μλ − 1) − μλN (L1498, L1519)."""
    z = DAMASKINOS
    return sp.expand(sp.cancel(2 * (z.mu * z.lam * z.N + z.L) * (sp.Rational(1, 2) - theorem7_contraction())))


@cache
def kardam_theorem5(corrected: bool = False) -> sp.Expr:
    """Theorem 4 (L1879) at γ = √(ΔF/(K·T·M·d·σ²)) (Def. 10): the explicit Theorem 5 B(T) (spec §3.4).

    ``corrected`` puts φ² in the χ-term (the factor φ_t lost between L1909 and L1911, K-P1).
    """
    z = DAMASKINOS
    gamma = sp.sqrt(z.gap / (z.K * z.T * z.M * z.d * z.sigma**2))
    phi_in_chi_term = z.phi**2 if corrected else z.phi
    floor = z.d * z.sigma**2 + 2 * z.D * z.K * z.sigma * sp.sqrt(z.d) + z.K**2 * z.D**2
    return sp.expand((2 + z.phi + gamma * z.K * z.M * z.chi * phi_in_chi_term) * gamma * z.K * z.d * z.sigma**2 + floor)


@cache
def ridge_perturbation_increase(examples: int = 3, features: int = 2, batch: tuple[int, ...] = (0, 2)) -> tuple:
    """E[F*(α + η) − F*(α)] for ridge, η ~ N(0, s²) on the coordinates in ``batch`` (Lemma 6, spec §5.4).

    F*(α) = (1/N)Σ(½α_i² − α_i y_i) + ‖Xα‖²/(2λN²) (Eq. 2.5 with ℓ*(−a) = ½a² − a·y). F* is quadratic, so the
    expectation is exact: linear terms in η vanish, η_iη_j → s²·[i = j]. Returns (the expectation, the
    column symbols x_{m,i}) so that tests can impose ‖x_j‖ = 1.
    """
    z = DAMASKINOS
    n = examples
    x = sp.Matrix(features, n, lambda m, i: sp.Symbol(f"x_{m}_{i}", real=True))
    alpha = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"alpha_{i}", real=True))
    y = sp.Matrix(n, 1, lambda i, _: sp.Symbol(f"y_{i}", real=True))
    eta = [sp.Symbol(f"eta_{j}", real=True) for j in batch]

    def dual(a: sp.Matrix) -> sp.Expr:
        data = sum(a[i] ** 2 / 2 - a[i] * y[i] for i in range(n)) / n
        return data + ((x * a).T * (x * a))[0] / (2 * z.lam * n**2)

    moved = alpha.copy()
    for j, noise in zip(batch, eta, strict=True):
        moved[j] += noise
    difference = sp.Poly(sp.expand(dual(moved) - dual(alpha)), *eta)
    expectation = sp.S.Zero
    for powers, coefficient in zip(difference.monoms(), difference.coeffs(), strict=True):
        if sorted(powers) == [0] * (len(eta) - 1) + [2]:
            expectation += coefficient * z.s**2
    return sp.simplify(expectation), x
