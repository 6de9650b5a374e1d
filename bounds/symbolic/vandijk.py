"""Symbolic derivations (sympy) of the closed forms of van Dijk et al., Theorems 4 and 6.

Paper: ``vandijk_async_fl_dp.txt`` (``vandijk L1287`` = line 1287); spec §4.10-4.12 with errata ``I-n``.

Every closed form here is *derived* from the bounds it rests on, not restated: sympy solves the
inequality the proof states, and :mod:`bounds.vandijk` holds the hand-written numeric versions that
``tests/bounds/test_symbolic.py`` checks against these derivations. The chain (proof of Theorem 6,
D.3.1) is

1. the moment bounds on Ŝ_j (vandijk L1207-1211) give ρ and ρ̂ (L1215);
2. K/N_c = Σ q_i (L1219) gives the round bounds (21) (L1227);
3. ε = c_1 T Ŝ_1² (L1231) with 1.-2. gives the bounds (22)/(23) on c_1 (L1243-1247);
4. c_1 ≥ x_thr, with x_thr the branch threshold (24) of c(x) (L1251), solved for K gives K⁻ and B (25)/(28);
5. c_1 ≤ 1/(rρ) solved for K gives K⁺ and A (27) (L1267-1279);
6. 1/(rρ) ≤ x_thr solved for r gives (26) and r⋆ (L1263, L1305); B at r⋆ is Theorem 4's B (L1311);
7. (18) at r⋆ gives (19) and the factor 1.21 (L1135-1145, L1475);
8. q(T+m)^p ≤ α solved for K gives K* (L1187-1197, with the sign of erratum I-20 corrected).

All symbols are positive; ``alpha`` stands for α = r0/σ ∈ (0, 1). Inside the derivations 1 − α is the
positive symbol β, so that √((1−α)²) = 1 − α is known to sympy; the public results are written in α.
Functions are pure and cached (sympy expressions are immutable).
"""

from __future__ import annotations

from functools import cache

import sympy as sp

from fedplan.bounds.symbolic.algebra import as_function, monomial, solve_positive

__all__ = ["as_function", "monomial"]  # re-exported for callers that evaluate these derivations

#: Paper symbols, all positive. ``N_c`` is the client's data set size, ``s = N_c q`` (L1225).
p, r, gamma, alpha = sp.symbols("p r gamma alpha", positive=True)
epsilon, N_c, s, K, T, q = sp.symbols("epsilon N_c s K T q", positive=True)
#: 1 − α, positive; used inside the derivations and replaced by 1 − α in the results.
_beta = sp.Symbol("beta", positive=True)
_x = sp.Symbol("x", positive=True)  # the value c_1 is compared with (x_thr or 1/(rρ))


def _in_alpha(expr: sp.Expr) -> sp.Expr:
    return expr.subs(_beta, 1 - alpha)



# --------------------------------------------------------------------------------------------
# 1.-3. ρ, ρ̂, the round bounds (21) and the c_1 bounds (22)/(23)
# --------------------------------------------------------------------------------------------

def _moment_upper(j: int) -> sp.Expr:
    """Ŝ_j ≤ q^j T^{pj}/(pj+1)·(1+γ)^{1+pj}/(1−α)^{j−1} (vandijk L1207)."""
    return q**j * T ** (p * j) / (p * j + 1) * (1 + gamma) ** (1 + p * j) / _beta ** (j - 1)


def _moment_lower(j: int) -> sp.Expr:
    """Ŝ_j ≳ q^j T^{pj}/(pj+1) (vandijk L1211)."""
    return q**j * T ** (p * j) / (p * j + 1)


@cache
def _rho_bounds() -> tuple[sp.Expr, sp.Expr]:
    rho = monomial(_moment_upper(1) * _moment_upper(3) / _moment_lower(2) ** 2)
    rho_hat = monomial(_moment_upper(1) ** 2 / _moment_lower(2))
    if (rho.free_symbols | rho_hat.free_symbols) & {q, T}:
        raise ArithmeticError("ρ or ρ̂ still depends on q or T")
    return rho, rho_hat


def vandijk_rho_bounds() -> tuple[sp.Expr, sp.Expr]:
    """(ρ, ρ̂) derived as Ŝ_1^up Ŝ_3^up/(Ŝ_2^low)² and (Ŝ_1^up)²/Ŝ_2^low (vandijk L1207-1215).

    Gives ρ = (2p+1)²/((p+1)(3p+1))·(1+γ)^{2+4p}/(1−α)² and ρ̂ = (2p+1)/(p+1)²·(1+γ)^{2+2p} (L1215).
    """
    return tuple(_in_alpha(value) for value in _rho_bounds())


@cache
def vandijk_round_bounds() -> tuple[sp.Expr, sp.Expr]:
    """(T_low, T_up) of (21), solved from qT^{p+1}/(p+1) ≤ K/N_c ≤ q(T(1+γ))^{p+1}/(p+1) at q = s/N_c.

    vandijk L1219-1227: T_up = ((p+1)K/s)^{1/(1+p)} and T_low = T_up/(1+γ).
    """
    sums_low = (s / N_c) * T ** (p + 1) / (p + 1)
    sums_up = (s / N_c) * (T * (1 + gamma)) ** (p + 1) / (p + 1)
    t_up, increasing_low = solve_positive(sums_low, K / N_c, T)  # K/N_c ≥ sums_low ⟺ T ≤ t_up
    t_low, increasing_up = solve_positive(sums_up, K / N_c, T)  # K/N_c ≤ sums_up ⟺ T ≥ t_low
    if not (increasing_low and increasing_up):
        raise ArithmeticError("Σ q_i should increase with T")
    return t_low, t_up


@cache
def _c1_bounds() -> tuple[sp.Expr, sp.Expr]:
    t_low, t_up = vandijk_round_bounds()
    q_value = s / N_c
    # c_1 = ε/(T Ŝ_1²) (L1231). T·(Ŝ_1 bound)² increases in T, so the T bound of the same side is used.
    lower = epsilon / (T * _moment_upper(1) ** 2)
    upper = epsilon / (T * _moment_lower(1) ** 2)
    return (monomial(lower.subs(q, q_value).subs(T, t_up)), monomial(upper.subs(q, q_value).subs(T, t_low)))


def vandijk_c1_bounds() -> tuple[sp.Expr, sp.Expr]:
    """(lower, upper) bounds on c_1 = ε/(TŜ_1²) as functions of K, derived from L1207-1211 and (21).

    They are (23) (vandijk L1247) and (22) (L1243):
    (p+1)^{1−p/(1+p)}·εN_c²/s²·(s/K)^{1+p/(1+p)}·(1+γ)^{−(2+2p)} ≤ c_1 ≤ the same·(1+γ)^{1+2p}.
    """
    return _c1_bounds()


# --------------------------------------------------------------------------------------------
# 4.-6. x_thr, B (K⁻), A (K⁺), r⋆ and Theorem 4's closed forms
# --------------------------------------------------------------------------------------------

def _branch_threshold(radius: sp.Expr = r) -> sp.Expr:
    rho, rho_hat = _rho_bounds()
    return ((2 * monomial(radius * rho / rho_hat) + 1) ** 2 - 1) / (2 * monomial(radius * rho))


def vandijk_branch_threshold() -> sp.Expr:
    """x_thr = ((2rρ/ρ̂+1)²−1)/(2rρ), above which c(x) = 2/(ρ̂x) ((24), vandijk L1251; the paper's τ)."""
    return _in_alpha(_branch_threshold())


def _k_scale() -> sp.Expr:
    """ε^{(1+p)/(1+2p)}(N_c/s)^{1/(1+2p)}N_c, the K-scale of K⁻ and K⁺ (vandijk L1275, L1283)."""
    return epsilon ** ((1 + p) / (1 + 2 * p)) * (N_c / s) ** (1 / (1 + 2 * p)) * N_c


@cache
def _b_of_threshold() -> sp.Expr:
    """B as a function of the threshold x: lower(c_1) ≥ x ⟺ K ≤ B(x)·scale (vandijk (25), L1255-1259)."""
    lower, _ = _c1_bounds()
    root, increasing = solve_positive(lower, _x, K)
    if increasing:
        raise ArithmeticError("the lower bound on c_1 should decrease in K")
    b = monomial(root / _k_scale())
    if b.free_symbols & {epsilon, N_c, s, K}:
        raise ArithmeticError(f"K⁻ is not B·ε^((1+p)/(1+2p))(N_c/s)^(1/(1+2p))N_c: {b}")
    return b


@cache
def _b_general() -> sp.Expr:
    return _b_of_threshold().subs(_x, _branch_threshold())


def vandijk_b_from_k_minus() -> sp.Expr:
    """B(p, r, γ, α) of K⁻ = B·ε^{(1+p)/(1+2p)}(N_c/s)^{1/(1+2p)}N_c, derived from c_1^low ≥ x_thr.

    Solving (23) ≥ (24) for K (vandijk L1247-1259) gives K ≤ K⁻ ((28), L1283-1287) with
    B = (1+γ)^{−2(1+p)²/(1+2p)}(p+1)^{1/(1+2p)}·x_thr^{−(1+p)/(1+2p)}.
    """
    return _in_alpha(_b_general())


@cache
def vandijk_b_of_threshold() -> tuple[sp.Expr, sp.Symbol]:
    """(B(x), x): B with the threshold left as the positive symbol x, to compare with (25) (vandijk L1259)."""
    return _b_of_threshold(), _x


@cache
def _a_general() -> sp.Expr:
    _, upper = _c1_bounds()
    rho, _ = _rho_bounds()
    root, increasing = solve_positive(upper, _x, K)  # x = 1/(rρ) substituted below
    if increasing:
        raise ArithmeticError("the upper bound on c_1 should decrease in K")
    a = monomial(root / _k_scale())
    if a.free_symbols & {epsilon, N_c, s, K}:
        raise ArithmeticError(f"K⁺ is not A·ε^((1+p)/(1+2p))(N_c/s)^(1/(1+2p))N_c: {a}")
    return monomial(a.subs(_x, 1 / (r * rho)))


def vandijk_a_from_k_plus() -> sp.Expr:
    """A(p, r, γ, α) of K⁺, derived from c_1^up ≤ 1/(rρ) ((22), (27), vandijk L1265-1279).

    A = (1+γ)^{1+p}(p+1)^{1/(1+2p)}(rρ)^{(1+p)/(1+2p)} (L1279).
    """
    return _in_alpha(_a_general())


@cache
def _r_star() -> sp.Expr:
    rho, _ = _rho_bounds()
    root, increasing = solve_positive(_branch_threshold() * r * rho, sp.S.One, r)
    if not increasing:
        raise ArithmeticError("x_thr·rρ should increase in r")
    return root


def vandijk_r_star() -> sp.Expr:
    """r⋆ solving 1/(rρ) = x_thr; 1/(rρ) ≤ x_thr ⟺ r ≥ r⋆, which is (26) (vandijk L1261-1263).

    r⋆ = (√3−1)/2·(3p+1)/((p+1)(2p+1))·(1−α)²/(1+γ)^{2p}, the r that r0(σ) is built for (L1305).
    The paper writes the constant as 0.37 ((√3−1)/2 = 0.3660…, L1263).
    """
    return _in_alpha(_r_star())


@cache
def vandijk_b_closed_form() -> sp.Expr:
    """B at r = r⋆: (1/(1+p))·((√3−1)/2·(2p+1))^{(1+p)/(1+2p)}, free of γ and α (vandijk L1305-1313, L193)."""
    b = monomial(_b_general().subs(r, _r_star()))
    if b.free_symbols - {p}:
        raise ArithmeticError(f"B(r⋆) still depends on {b.free_symbols - {p}}")
    return b


@cache
def vandijk_b_limit() -> sp.Expr:
    """lim_{r↓0} B = (p+½)^{(1+p)/(1+2p)}/(p+1), free of γ (vandijk L1297-1301, L1407)."""
    threshold = sp.cancel(_branch_threshold())  # a polynomial in r once the removable 1/r is cancelled
    b = monomial(_b_of_threshold().subs(_x, sp.limit(threshold, r, 0, "+")))
    if b.free_symbols - {p}:
        raise ArithmeticError(f"lim B still depends on {b.free_symbols - {p}}")
    return b


@cache
def vandijk_a_over_b_at_r_star() -> sp.Expr:
    """A/B at r = r⋆: (1+γ)^{(3+4p)(1+p)/(1+2p)} (vandijk L1317, L193)."""
    return _in_alpha(monomial((_a_general() / _b_general()).subs(r, _r_star())))


@cache
def vandijk_a_over_b_at_r_star_without_gamma() -> sp.Expr:
    """A/B when r is r⋆ of γ = 0 (the paper's iteration, L1333) but A and B use γ > 0 (erratum I-26).

    Equals (1+γ)^{(1+p)(3+4p)/(1+2p)}·(((√3−1)(1+γ)^{2p}+1)²−1)/2)^{(1+p)/(1+2p)}.
    """
    ratio = (_a_general() / _b_general()).subs(r, _r_star().subs(gamma, 0))
    ratio = sp.powsimp(sp.expand_power_base(ratio, force=True), force=True)
    return _in_alpha(ratio.replace(lambda e: e.is_Pow, lambda e: e.base ** sp.factor(sp.cancel(e.exp))))


# --------------------------------------------------------------------------------------------
# 7. (18) at r⋆: (19) and the 1.21 factor
# --------------------------------------------------------------------------------------------

def _case2_constant(radius: sp.Expr = r) -> sp.Expr:
    """2/(1−α)^{3/2}·√(r(p+1)(2p+1)/(3p+1))·(1+γ)^{2(1+2p)}, the constant of (18) (vandijk L1135)."""
    return 2 / _beta ** sp.Rational(3, 2) * sp.sqrt(radius * (p + 1) * (2 * p + 1) / (3 * p + 1)) \
        * (1 + gamma) ** (2 * (1 + 2 * p))


def vandijk_case2_constant() -> sp.Expr:
    """The constant of (18) as printed, in r, p, γ, α (vandijk L1135)."""
    return _in_alpha(_case2_constant())


@cache
def vandijk_case2_constant_at_r_star() -> sp.Expr:
    """(18)'s constant at r = r⋆: 2√((√3−1)/2)/√(1−α)·(1+γ)^{2+3p}, which is (19) (vandijk L1143-1145)."""
    return _in_alpha(monomial(_case2_constant(_r_star())))


@cache
def vandijk_jump_factor() -> sp.Expr:
    """The factor of 1/√(1−α) in (18) at r = r⋆, γ = 0: 2√((√3−1)/2) = 1.2100007… ("1.21", vandijk L1475).

    Independent of p. Also the ratio of the case-2 to the case-1 bound at K = K⁺ (L1167-1169).
    """
    factor = monomial(_case2_constant(_r_star()).subs(gamma, 0) * sp.sqrt(_beta))
    if factor.free_symbols:
        raise ArithmeticError(f"the jump factor depends on {factor.free_symbols}")
    return factor


# --------------------------------------------------------------------------------------------
# 8. K*
# --------------------------------------------------------------------------------------------

@cache
def vandijk_max_sample_rate_bound() -> sp.Expr:
    """q(T+m)^p ≤ qT^p(1+γ)^p ≤ (s/N_c)((p+1)K/s)^{p/(1+p)}(1+γ)^p, using m ≤ γT and (21) (vandijk L1189)."""
    _, t_up = vandijk_round_bounds()
    return monomial((s / N_c) * t_up**p * (1 + gamma) ** p)


@cache
def vandijk_k_star_coefficient() -> sp.Expr:
    """D with K* = D·(N_c/s)^{1/p}N_c, derived from (s/N_c)((p+1)K/s)^{p/(1+p)}(1+γ)^p ≤ α (vandijk L1187-1197).

    D = α^{(1+p)/p}/(p+1)·(1+γ)^{−(1+p)}. The paper prints (1+γ)^{+(1+p)} (L1197, L193; erratum I-20).
    """
    root, increasing = solve_positive(vandijk_max_sample_rate_bound(), alpha, K)
    if not increasing:
        raise ArithmeticError("the bound on q(T+m)^p should increase in K")
    d = monomial(root / ((N_c / s) ** (1 / p) * N_c))
    if d.free_symbols & {epsilon, N_c, s, K}:
        raise ArithmeticError(f"K* is not D·(N_c/s)^(1/p)N_c: {d}")
    return d


def vandijk_k_star_coefficient_printed() -> sp.Expr:
    """The printed D = α^{(1+p)/p}/(p+1)·(1+γ)^{1+p} (vandijk L1197, L193)."""
    return alpha ** ((1 + p) / p) / (p + 1) * (1 + gamma) ** (1 + p)


@cache
def vandijk_k_star_printed_overshoot() -> sp.Expr:
    """The bound on max_i q_i at K = the printed K*: α(1+γ)^{2p}, which exceeds α for γ > 0 (erratum I-20)."""
    k_printed = vandijk_k_star_coefficient_printed() * (N_c / s) ** (1 / p) * N_c
    return monomial(vandijk_max_sample_rate_bound().subs(K, k_printed))
