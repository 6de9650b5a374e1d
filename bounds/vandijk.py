"""van Dijk et al., asynchronous FL with increasing sample sizes and DP: Theorems 3, 4 and 6.

Paper: ``vandijk_async_fl_dp.txt``; every docstring cites its lines (``L191`` = line 191).
Spec with errata: ``specs/vandijk_async_fl_dp.md`` (erratum ids ``I-n``; ours in ``docs/ERRATA.md``).

Setting. A client holds N_c records and runs rounds i = 0, 1, …; in round i it computes
s_{i,c} clipped gradients and adds Gaussian noise N(0, C²σ²I) once to their sum (L116).
The sampling ratio is q_i = s_{i,c}/N_c = q (i+m)^p (L191). K is the number of gradient
computations of one client over all rounds, K/N_c = Σ q_i epochs (L1075).

Privacy model of every number here (the paper's, L845-851, L875): each round is a Poisson-
subsampled Gaussian mechanism with sampling probability q_i and L2 sensitivity C, add/remove-one
neighbours. The paper's Algorithm 1 samples with replacement and moves the local model within a
round (spec §9.4, errata I-41/I-42); the bounds below do not cover those deviations.

``variant="paper"`` reproduces the printed numbers of Appendix D.3.2; ``variant="corrected"``
(default) fixes the errata that matter for correctness (sign of the K* factor, γ from the realised
number of rounds, the (1+γ)^{1/2} lost in (31)) and checks every hypothesis on the realised
integer sequence.

Sample-size and step-size recipes (Lemmas 1–3, Theorem 2/5) and the power sequence
⌈N_c q (i+m)^p⌉ live in :mod:`bounds.vandijk_sequences`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from fedplan.bounds.references import cite
from fedplan.bounds.theorem import VARIANTS, Hypothesis, TheoremResult, all_hold, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.bounds.vandijk_sequences import power_sequence

#: log of the largest float: an offset m beyond it is refused by name.
LOG_FLOAT_MAX = math.log(np.finfo(float).max)
SQRT3_MINUS_1_HALF = (math.sqrt(3.0) - 1.0) / 2.0
#: Upper bound (√3−1)/16 of every r0 iterate (L1335).
R0_CAP = (math.sqrt(3.0) - 1.0) / 16.0
#: The factor "1.21" of (19) and of the √Tσ jump: 2√((√3−1)/2) (L1145, L1475).
JUMP_FACTOR = 2.0 * math.sqrt(SQRT3_MINUS_1_HALF)
#: The paper's printed value of :data:`JUMP_FACTOR` (used by ``variant="paper"`` only).
JUMP_FACTOR_PRINTED = 1.21
#: Largest r0 Theorems 3 and 6 allow (L929, L1081; erratum I-15).
R0_MAX = 1.0 / math.e
MAX_EXPONENT = 10.0
#: Smallest growth exponent of an increasing schedule: its offset m = (s₀/(N_c q))^(1/p) overflows below it.
MIN_GROWTH_EXPONENT = 0.01
#: Beyond this m/T the "increasing" sequence is flat ((T+m)/m < 1.1) and the m/T iteration has diverged.
MAX_GAMMA = 10.0
#: Smallest σ of (16)'s r and of r0(σ): exp(3/σ²) ≤ e^300 stays in the float range, and r0(σ) ≈ 1e-136 above 0.
SIGMA_FLOOR = 0.1


def _check_variant(variant: str) -> str:
    return check_choice("variant", variant, VARIANTS)


def _check_p(p, *, allow_zero: bool = True) -> float:
    return check_real("p", p, low=0.0, high=MAX_EXPONENT, low_open=not allow_zero)


def _check_gamma(gamma) -> float:
    return check_real("gamma", gamma, low=0.0)


def _check_alpha(alpha) -> float:
    return check_real("alpha", alpha, low=0.0, high=1.0, high_open=True)


# --------------------------------------------------------------------------------------------
# The privacy budget 𝓑 (L211)
# --------------------------------------------------------------------------------------------

def privacy_budget(*, epsilon: float, delta: float) -> float:
    """𝓑 = √(2 ln(1/δ)/ε), the paper's "privacy budget" (L211)."""
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    return math.sqrt(2.0 * math.log(1.0 / delta) / epsilon)


def delta_from_budget(*, epsilon: float, budget: float) -> float:
    """δ = exp(−ε𝓑²/2), the inverse of :func:`privacy_budget` (L211, L1555)."""
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    budget = check_real("budget", budget, low=0.0, low_open=True)
    return math.exp(-epsilon * budget * budget / 2.0)


# --------------------------------------------------------------------------------------------
# r (16) and r0(σ) (proof of Theorem 6, L1305-1339)
# --------------------------------------------------------------------------------------------

#: The erratum on the bound r0 ≤ 1/e that (16) and Theorem 6 need (docs/ERRATA.md).
R0_BOUND_NOTE = "I-15: r0 <= 1/e (L929), one of three printed bounds on r0 (L177, L853)"


@dataclass(frozen=True)
class RConstant(TheoremResult):
    """r of (16) with u0, u1 (L929-937) for a given r0 and σ, with (16)'s hypotheses r0 ≤ 1/e, u0 < 1, u1 < 1."""

    r0: float
    sigma: float
    r: float
    u0: float
    u1: float
    notes: tuple[str, ...] = (R0_BOUND_NOTE,)
    source: str = cite("vandijk", "(16)", "L929-939")

    @property
    def alpha(self) -> float:
        """α = r0/σ, the largest sampling ratio Theorems 3 and 6 allow (L177, L1081)."""
        return self.r0 / self.sigma


def _u_values(r0: float, sigma: float) -> tuple[float, float]:
    root = math.sqrt(r0 * sigma)
    return 2.0 * root / (sigma - r0), 2.0 * math.e * root / ((sigma - r0) * sigma)


def _r_over_r0(u0: float, u1: float, sigma: float) -> float:
    """R(r0) = 2³(1/(1−u0) + e³/σ³/(1−u1))·exp(3/σ²), so that r = r0·R (16)."""
    return 8.0 * (1.0 / (1.0 - u0) + math.exp(3.0) / sigma**3 / (1.0 - u1)) * math.exp(3.0 / sigma**2)


def r0_limit(*, sigma: float) -> float:
    """The r0 below which (16) defines a finite r at σ: u0 < 1 ⇔ r0 < σ(√2−1)², u1 < 1 ⇔ r0 < (√(e²+σ²)−e)²/σ (L937).

    (Both from the quadratic in √r0 that u = 1 gives.) Above it the geometric series behind r diverge.
    """
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    return min(sigma * (math.sqrt(2.0) - 1.0) ** 2, (math.hypot(math.e, sigma) - math.e) ** 2 / sigma)


def r_constant(*, r0: float, sigma: float, rigorous_footnote: bool = False) -> RConstant:
    """r = r0·2³(1/(1−u0) + e³/σ³/(1−u1))·exp(3/σ²) with u0 = 2√(r0σ)/(σ−r0), u1 = e·u0/σ (16), L929-937.

    The hypotheses r0 ≤ 1/e, u0 < 1 and u1 < 1 are checked and reported: r0 > 1/e gives the number without
    guarantee (erratum I-15), while u0 ≥ 1 or u1 ≥ 1 (r0 ≥ :func:`r0_limit`) leaves no finite r and raises
    ``ValueError``. ``rigorous_footnote`` multiplies r by 2 + r0/(σ−r0), the extra factor footnote †† (L939) offers
    for rigour.
    """
    sigma = check_real("sigma", sigma, low=SIGMA_FLOOR)
    r0 = check_real("r0", r0, low=0.0, high=sigma, low_open=True, high_open=True)
    u0, u1 = _u_values(r0, sigma)
    if u0 >= 1.0 or u1 >= 1.0:
        raise ValueError(f"r0 must be a real number in (0, {r0_limit(sigma=sigma):.6g}) at sigma = {sigma:g}, where "
                         f"(16)'s u0 = 2 sqrt(r0 sigma)/(sigma - r0) and u1 = e u0/sigma are below 1 (L937) and r is "
                         f"finite; got {r0:g} (u0 = {u0:.6g}, u1 = {u1:.6g}): lower r0 or raise sigma")
    checks = (
        hypothesis("r0 <= 1/e", r0, "<=", R0_MAX, "L929"),
        hypothesis("u0 < 1", u0, "<", 1.0, "L937"),
        hypothesis("u1 < 1", u1, "<", 1.0, "L937"),
    )
    r = r0 * _r_over_r0(u0, u1, sigma)
    if rigorous_footnote:
        r *= 2.0 + r0 / (sigma - r0)
    return RConstant(r0=r0, sigma=sigma, r=r, u0=u0, u1=u1, hypotheses=checks)


def r_target(*, r0: float, sigma: float, p: float, gamma: float = 0.0) -> float:
    """r⋆ = (√3−1)/2 · (3p+1)/((p+1)(2p+1)) · (1−r0/σ)²/(1+γ)^{2p}: the r that makes (26) tight (L1305)."""
    return (SQRT3_MINUS_1_HALF * (3 * p + 1) / ((p + 1) * (2 * p + 1))
            * (1.0 - r0 / sigma) ** 2 * math.exp(-2 * p * math.log1p(gamma)))


def _sigma_condition_margins(sigma: float) -> tuple[float, float]:
    """The two inequalities of L1337 at r0 = (√3−1)/16 (positive when they hold)."""
    root = math.sqrt(R0_CAP * sigma)
    return sigma - R0_CAP - 2.0 * root, (sigma - R0_CAP) * sigma - 2.0 * math.e * root


def sigma_threshold() -> float:
    """Smallest σ for which the r0 iteration provably keeps u0, u1 < 1 (L1335-1339).

    Both inequalities of L1337 hold for σ above this value; the paper rounds it to 1.137.
    """
    roots = (brentq(lambda s, which: _sigma_condition_margins(s)[which], 2 * R0_CAP, 10.0, args=(which,), xtol=1e-14)
             for which in (0, 1))
    return max(roots)


#: σ ≥ this is required by Theorem 4 (the paper writes 1.137); :func:`r0_of_sigma` states σ ≥ 1.137 as a hypothesis.
SIGMA_MIN = sigma_threshold()


@dataclass(frozen=True)
class R0Result(TheoremResult):
    """r0(σ) and the constants at the fixed point (L1305-1341).

    ``hypotheses``: σ ≥ 1.137, under which the paper proves the iteration converges to an r0 that meets (16) (L1339;
    Theorem 4 states it too, L191), and (16)'s own r0 ≤ 1/e, u0 < 1, u1 < 1 checked at the fixed point.
    """

    sigma: float
    p: float
    gamma: float
    r0: float
    r: float
    u0: float
    u1: float
    iterations: int
    notes: tuple[str, ...] = ()
    source: str = cite("vandijk", "proof of Theorem 6, r0(sigma) as the fixed point of the iteration of L1333",
                       "L1305-1341")

    @property
    def alpha(self) -> float:
        return self.r0 / self.sigma


def r0_of_sigma(*, sigma: float, p: float = 1.0, gamma: float = 0.0, tolerance: float = 1e-15,
                max_iterations: int = 10_000) -> R0Result:
    """r0(σ) by the paper's iteration r0 ← r⋆(r0)/R(r0) from r0 = 0 (L1333), to a relative ``tolerance``.

    The map is decreasing, so the iterates alternate around the fixed point; the paper proves every iterate stays
    in (0, (√3−1)/16] with u0, u1 < 1 for σ ≥ 1.137 (L1335-1339). Below 1.137 the iteration is still run (from
    σ = 0.1, :data:`SIGMA_FLOOR`) and its fixed point checked against (16), but the paper's hypothesis σ ≥ 1.137
    fails: the result says "no guarantee". The paper's iteration uses γ = 0 (erratum I-26, then noted); ``gamma``
    keeps the (1+γ)^{−2p} of r⋆ (L1305). Reference: r0(3) = 0.0109896 for p = 1 (printed 0.0110, L1341; the printed
    r0(5) = 0.0202 and r0(8) = 0.0247 lie below the fixed point, erratum I-27).
    """
    sigma = check_real("sigma", sigma, low=SIGMA_FLOOR)
    p = _check_p(p)
    gamma = _check_gamma(gamma)
    tolerance = check_real("tolerance", tolerance, low=0.0, low_open=True)
    max_iterations = check_int("max_iterations", max_iterations, low=1)
    r0, iterations, converged = 0.0, 0, False
    while not converged:
        if iterations == max_iterations:
            raise ArithmeticError(f"r0(sigma={sigma:g}) did not converge in {max_iterations} iterations")
        updated = r_target(r0=r0, sigma=sigma, p=p, gamma=gamma) / _r_over_r0(*_u_values(r0, sigma), sigma)
        converged = abs(updated - r0) <= tolerance * updated
        r0, iterations = updated, iterations + 1
    if not r0 > 0:
        raise ValueError(f"gamma must be small enough that r0(sigma) = r*/R stays above 0 in floating point; got "
                         f"gamma={gamma:g} with p={p:g}, sigma={sigma:g}, where (1+gamma)^(-2p) underflows")
    constants = r_constant(r0=r0, sigma=sigma)
    notes = (R0_BOUND_NOTE, "I-27: the printed r0(5) = 0.0202 and r0(8) = 0.0247 lie below this fixed point",
             "I-26: r* keeps (1+gamma)^(-2p); the paper iterates with gamma = 0" if gamma > 0 else
             "I-26: the paper's iteration at gamma = 0; Theorem 4's closed B and A assume the gamma of the plan")
    return R0Result(sigma=sigma, p=p, gamma=gamma, r0=r0, r=constants.r, u0=constants.u0, u1=constants.u1,
                    iterations=iterations, notes=notes,
                    hypotheses=(hypothesis("sigma >= 1.137", sigma, ">=", 1.137, "L1339"), *constants.hypotheses))


# --------------------------------------------------------------------------------------------
# Theorem 6 constants (D.3, L1075-1171)
# --------------------------------------------------------------------------------------------

def moment_ratio_bounds(*, p: float, gamma: float, alpha: float) -> tuple[float, float]:
    """(ρ, ρ̂) of Theorem 6: ρ = (2p+1)²/((p+1)(3p+1))·(1+γ)^{2+4p}/(1−α)², ρ̂ = (2p+1)/(p+1)²·(1+γ)^{2+2p} (L1215)."""
    p, gamma, alpha = _check_p(p), _check_gamma(gamma), _check_alpha(alpha)
    rho = (2 * p + 1) ** 2 / ((p + 1) * (3 * p + 1)) * (1 + gamma) ** (2 + 4 * p) / (1 - alpha) ** 2
    rho_hat = (2 * p + 1) / (p + 1) ** 2 * (1 + gamma) ** (2 + 2 * p)
    return rho, rho_hat


def branch_threshold(*, r: float, p: float, gamma: float, alpha: float) -> float:
    """x_thr = ((2rρ/ρ̂+1)²−1)/(2rρ): c(x) = 2/(ρ̂x) for x ≥ x_thr ((24), L1251; the paper calls it τ)."""
    r = check_real("r", r, low=0.0, low_open=True)
    rho, rho_hat = moment_ratio_bounds(p=p, gamma=gamma, alpha=alpha)
    return ((2 * r * rho / rho_hat + 1) ** 2 - 1) / (2 * r * rho)


def constant_a(*, r: float, p: float, gamma: float, alpha: float) -> float:
    """A(p, r0, σ) = (1+γ)^{1+p}(p+1)^{1/(1+2p)}(rρ)^{(1+p)/(1+2p)}, the K⁺ constant (27), L1271-1279."""
    r = check_real("r", r, low=0.0, low_open=True)
    rho, _ = moment_ratio_bounds(p=p, gamma=gamma, alpha=alpha)
    return (1 + gamma) ** (1 + p) * (p + 1) ** (1 / (1 + 2 * p)) * (r * rho) ** ((1 + p) / (1 + 2 * p))


def constant_b(*, r: float, p: float, gamma: float, alpha: float) -> float:
    """B(p, r0, σ) = (1+γ)^{−2(1+p)²/(1+2p)}(p+1)^{1/(1+2p)}/x_thr^{(1+p)/(1+2p)}, the K⁻ constant (28), L1283-1287.

    Example 3: B(1, 1/e, 8; γ = 0, α = 1/(8e)) = 0.1368988621622339 (L1639).
    """
    threshold = branch_threshold(r=r, p=p, gamma=gamma, alpha=alpha)
    exponent = (1 + p) / (1 + 2 * p)
    return (1 + gamma) ** (-2 * (1 + p) ** 2 / (1 + 2 * p)) * (p + 1) ** (1 / (1 + 2 * p)) / threshold**exponent


def constant_b_closed(*, p: float) -> float:
    """B = (1/(1+p))·((√3−1)/2·(2p+1))^{(1+p)/(1+2p)}, B at r0 = r0(σ) (Theorem 4, L193, L1311)."""
    p = _check_p(p)
    return (SQRT3_MINUS_1_HALF * (2 * p + 1)) ** ((1 + p) / (1 + 2 * p)) / (1 + p)


def constant_b_limit(*, p: float) -> float:
    """lim_{r0↓0} B = (p+½)^{(1+p)/(1+2p)}/(p+1), not attainable (L1299)."""
    p = _check_p(p)
    return (p + 0.5) ** ((1 + p) / (1 + 2 * p)) / (p + 1)


def constant_a_closed(*, p: float, gamma: float) -> float:
    """A = B·(1+γ)^{(3+4p)(1+p)/(1+2p)} (Theorem 4, L193, L1317)."""
    gamma = _check_gamma(gamma)
    return constant_b_closed(p=p) * (1 + gamma) ** ((3 + 4 * p) * (1 + p) / (1 + 2 * p))


def condition_26(*, r: float, p: float, gamma: float, alpha: float) -> Hypothesis:
    """(26): r ≥ (√3−1)/2·(3p+1)/((p+1)(2p+1))·(1−α)²/(1+γ)^{2p}, needed for case 2 (L1263)."""
    bound = SQRT3_MINUS_1_HALF * (3 * p + 1) / ((p + 1) * (2 * p + 1)) * (1 - alpha) ** 2 / (1 + gamma) ** (2 * p)
    return hypothesis("r >= (sqrt3-1)/2 (3p+1)/((p+1)(2p+1)) (1-alpha)^2/(1+gamma)^(2p)  (26)", r, ">=", bound,
                      "L1263")


# --------------------------------------------------------------------------------------------
# K⁻, K⁺, K* as limits on q (Theorem 4, L191-199; Theorem 6, L1089, L1271-1287)
# --------------------------------------------------------------------------------------------

def sample_rate_for_k_limit(*, constant: float, epsilon: float, epochs: float, p: float) -> float:
    """Largest q with K ≤ constant·ε^{(1+p)/(1+2p)}q^{−1/(1+2p)}N_c (K⁻ with B, K⁺ with A; L195, L1523).

    ``epochs`` is K/N_c. Solving for q gives q = (constant·ε^{(1+p)/(1+2p)}/epochs)^{1+2p}.
    """
    return (constant * epsilon ** ((1 + p) / (1 + 2 * p)) / epochs) ** (1 + 2 * p)


def k_star_coefficient(*, alpha: float, p: float, gamma: float, variant: str = "corrected") -> float:
    """D with K* = D·q^{−1/p}N_c: D = α^{(1+p)/p}/(p+1)·(1+γ)^{∓(1+p)} (L193, L1089).

    K ≤ K* is meant to imply max_i q_i = q(T+m)^p ≤ α. The paper's factor is (1+γ)^{+(1+p)};
    solving q(T+m)^p ≤ α with T ≤ ((p+1)K/s)^{1/(1+p)} gives (1+γ)^{−(1+p)} (erratum I-20), which
    ``variant="corrected"`` uses.
    """
    return math.exp(_log_k_star_coefficient(alpha=alpha, p=p, gamma=gamma, variant=variant))


def _log_k_star_coefficient(*, alpha: float, p: float, gamma: float, variant: str) -> float:
    """log D (D itself underflows for small p: α^{(1+p)/p})."""
    variant = _check_variant(variant)
    p = _check_p(p, allow_zero=False)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    sign = 1.0 if variant == "paper" else -1.0
    return (1 + p) / p * math.log(alpha) - math.log(p + 1) + sign * (1 + p) * math.log1p(_check_gamma(gamma))


def _k_star_note(variant: str) -> str:
    return ("I-20: K* with (1+gamma)^-(1+p) (corrected)" if variant == "corrected"
            else "I-20: K* with the printed (1+gamma)^+(1+p)")


def sample_rate_for_k_star(*, alpha: float, p: float, gamma: float, epochs: float, variant: str = "corrected") -> float:
    """Largest q with K ≤ K* = D·q^{−1/p}N_c, i.e. q = (D/epochs)^p (L1527, L1643), from log D: D itself underflows
    to 0 for small p (α = 1.25e-4, p = 0.0117: log D = −778) while q = 1.1e-4 does not."""
    log_d = _log_k_star_coefficient(alpha=alpha, p=p, gamma=gamma, variant=variant)
    return math.exp(p * (log_d - math.log(epochs)))


# --------------------------------------------------------------------------------------------
# σ lower bounds (Theorem 4, L197-199; Theorem 6 (29), (18), (19), (30))
# --------------------------------------------------------------------------------------------

def case1_factor(*, p: float, gamma: float, alpha: float) -> float:
    """F = (1+γ)^{2+3p}/√(1−α): case 1 requires σ ≥ 𝓑·F ((29), L1113, L197). Example 3: 1.38361486085 (L1677)."""
    p, gamma, alpha = _check_p(p), _check_gamma(gamma), _check_alpha(alpha)
    return (1 + gamma) ** (2 + 3 * p) / math.sqrt(1 - alpha)


def case2_factor(*, p: float, gamma: float, alpha: float, k: float, r: float | None = None,
                 variant: str = "corrected") -> float:
    """F₂ with σ ≥ 𝓑·F₂ for K = k·K⁺, k ≥ 1 (case 2).

    * ``r`` given (any r0): (18), L1135: k^{(1+2p)/(2+2p)}·2/(1−α)^{3/2}·√(r(p+1)(2p+1)/(3p+1))·(1+γ)^{2(1+2p)};
    * ``r`` None (r0 = r0(σ), r = r⋆): (19), L1145: k^{(1+2p)/(2+2p)}·1.21/√(1−α)·(1+γ)^{2+3p}.

    ``variant="corrected"`` multiplies by the (1+γ)^{1/2} that the derivation (31) drops (erratum I-22)
    and uses 1.21 = 2√((√3−1)/2) unrounded.
    """
    variant = _check_variant(variant)
    p, gamma, alpha = _check_p(p), _check_gamma(gamma), _check_alpha(alpha)
    k = check_real("k", k, low=1.0)
    growth = k ** ((1 + 2 * p) / (2 + 2 * p))
    if r is None:
        jump = JUMP_FACTOR_PRINTED if variant == "paper" else JUMP_FACTOR
        factor = growth * jump / math.sqrt(1 - alpha) * (1 + gamma) ** (2 + 3 * p)
    else:
        r = check_real("r", r, low=0.0, low_open=True)
        factor = (growth * 2 / (1 - alpha) ** 1.5 * math.sqrt(r * (p + 1) * (2 * p + 1) / (3 * p + 1))
                  * (1 + gamma) ** (2 * (1 + 2 * p)))
    return factor * (math.sqrt(1 + gamma) if variant == "corrected" else 1.0)


def case2_aggregated_noise(*, epochs: float, epsilon: float, delta: float, p: float, gamma: float,
                           alpha: float) -> float:
    """Lower bound on σ√T in case 2: 2√2·(p+1)/√(2p+1)·(K/N_c)·√ln(1/δ)/ε·(1+γ)^{(1+2p)/2}/√(1−α) ((30), L1434)."""
    epochs = check_real("epochs", epochs, low=0.0, low_open=True)
    budget = privacy_budget(epsilon=epsilon, delta=delta)
    p, gamma, alpha = _check_p(p), _check_gamma(gamma), _check_alpha(alpha)
    log_inverse_delta = budget**2 * epsilon / 2
    return (2 * math.sqrt(2) * (p + 1) / math.sqrt(2 * p + 1) * epochs * math.sqrt(log_inverse_delta) / epsilon
            * (1 + gamma) ** ((1 + 2 * p) / 2) / math.sqrt(1 - alpha))


# --------------------------------------------------------------------------------------------
# Theorem 4 evaluated at a point (L191-201)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Theorem4Result(TheoremResult):
    """B, A, D, K⁻, K⁺, K*, the case that applies and the σ lower bound (Theorem 4, L191-199).

    In the gap K⁻ < K < K⁺ Theorem 4 states no bound: ``sigma_lower_bound`` is ``None`` there (no number
    exists) and the hypothesis "K <= K- or K >= K+" fails, so the result says "no guarantee".
    """

    B: float
    A: float
    D: float
    k_minus: float
    k_plus: float
    k_star: float
    case: str  # "1" (K ≤ K⁻), "2" (K ≥ K⁺) or "gap" (no bound)
    sigma_lower_bound: float | None
    r0: float
    variant: str
    notes: tuple[str, ...]
    source: str = cite("vandijk", "Theorem 4", "L191-199")


def theorem4(*, p: float, sigma: float, epsilon: float, delta: float, sample_rate: float, client_size: int,
             grad_computations: float, gamma: float, variant: str = "corrected") -> Theorem4Result:
    """Theorem 4 at r0 = r0(σ): the constants, K⁻/K⁺/K*, the regime of K and the σ lower bound.

    ``sample_rate`` is q of q_i = q(i+m)^p, ``gamma`` bounds m/T (the paper plugs in m/T).
    """
    variant = _check_variant(variant)
    p = _check_p(p, allow_zero=False)
    sigma = check_real("sigma", sigma, low=SIGMA_MIN)
    sample_rate = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    client_size = check_int("client_size", client_size, low=1)
    grad_computations = check_real("grad_computations", grad_computations, low=0.0, low_open=True)
    gamma = _check_gamma(gamma)
    budget = privacy_budget(epsilon=epsilon, delta=delta)
    r0 = r0_of_sigma(sigma=sigma, p=p).r0
    alpha = r0 / sigma
    b = constant_b_closed(p=p)
    a = constant_a_closed(p=p, gamma=gamma)
    d = k_star_coefficient(alpha=alpha, p=p, gamma=gamma, variant=variant)
    scale = epsilon ** ((1 + p) / (1 + 2 * p)) * sample_rate ** (-1 / (1 + 2 * p)) * client_size
    log_k_star = (_log_k_star_coefficient(alpha=alpha, p=p, gamma=gamma, variant=variant)
                  + math.log(client_size) - math.log(sample_rate) / p)
    k_minus, k_plus = b * scale, a * scale
    k_star = math.exp(min(log_k_star, 709.0)) if log_k_star < 709.0 else math.inf  # q^{-1/p} overflows for tiny p
    if grad_computations <= k_minus:
        case, bound = "1", budget * case1_factor(p=p, gamma=gamma, alpha=alpha)
    elif grad_computations >= k_plus:
        k = grad_computations / k_plus
        case, bound = "2", budget * case2_factor(p=p, gamma=gamma, alpha=alpha, k=k, variant=variant)
    else:
        case, bound = "gap", None
    checks = (hypothesis("sigma >= 1.137", sigma, ">=", 1.137, "L191"),
              hypothesis("K <= K*", grad_computations, "<=", k_star, "L197"),
              Hypothesis("K <= K- or K >= K+ (no bound in the gap)", case != "gap",
                         f"K = {grad_computations:.6g}, K- = {k_minus:.6g}, K+ = {k_plus:.6g}", "L193-197"))
    notes = (_k_star_note(variant),)
    return Theorem4Result(B=b, A=a, D=d, k_minus=k_minus, k_plus=k_plus, k_star=k_star, case=case,
                          sigma_lower_bound=bound, r0=r0, hypotheses=checks, variant=variant, notes=notes)


@dataclass(frozen=True)
class NoisePoint:
    """Theorem 4 at one growth exponent p, with the aggregated noise √T·σ_min it implies (L1163-1171)."""

    p: float
    sample_rate: float
    rounds: float  # T_up = ((p+1)K/s)^{1/(1+p)}
    theorem: Theorem4Result

    @property
    def aggregated_noise(self) -> float | None:
        bound = self.theorem.sigma_lower_bound
        return None if bound is None else math.sqrt(self.rounds) * bound


def _theorem4_at_exponent(p: float, *, initial_size: int, offset: float, client_size: int, epsilon: float,
                          delta: float, sigma: float, grad_computations: float, gamma: float,
                          variant: str) -> NoisePoint:
    q = initial_size / (client_size * offset**p)  # s_{0,c} = N_c q m^p fixes q for each p (L1151)
    rounds = ((p + 1) * grad_computations / (client_size * q)) ** (1 / (1 + p))
    result = theorem4(p=p, sigma=sigma, epsilon=epsilon, delta=delta, sample_rate=q, client_size=client_size,
                      grad_computations=grad_computations, gamma=gamma, variant=variant)
    return NoisePoint(p=p, sample_rate=q, rounds=rounds, theorem=result)


def aggregated_noise_curve(*, exponents, initial_size: int, offset: float, client_size: int, epsilon: float,
                           delta: float, sigma: float, grad_computations: float, gamma: float = 0.0,
                           variant: str = "corrected") -> list[NoisePoint]:
    """√T·σ_min against p for fixed K, s_{0,c}, m (Theorem 4 discussion, L199-201, L1163-1171).

    For each p, q = s_{0,c}/(N_c m^p), T = T_up and σ_min is Theorem 4's bound: case 1 up to p⁻,
    no bound in the gap (K⁻, K⁺), case 2 from p⁺ on, where √T·σ jumps by 1.21.
    """
    offset = check_real("offset", offset, low=1.0, low_open=True)
    return [_theorem4_at_exponent(float(p), initial_size=initial_size, offset=offset, client_size=client_size,
                                  epsilon=epsilon, delta=delta, sigma=sigma, grad_computations=grad_computations,
                                  gamma=gamma, variant=variant) for p in exponents]


def transition_exponents(*, initial_size: int, offset: float, client_size: int, epsilon: float, sigma: float,
                         grad_computations: float, gamma: float = 0.0, p_max: float = 1.0,
                         points: int = 200) -> dict[str, list[float]]:
    """p⁻ (K = K⁻(p)) and p⁺ (K = K⁺(p)) for fixed K (L1151-1161): every root in (0, p_max].

    q(p) = s_{0,c}/(N_c m^p); K^±(p) need not be monotone, so the ratio is scanned on ``points``
    exponents and each sign change refined with brentq.
    """
    offset = check_real("offset", offset, low=1.0, low_open=True)
    grad_computations = check_real("grad_computations", grad_computations, low=0.0, low_open=True)
    p_max = check_real("p_max", p_max, low=0.0, high=MAX_EXPONENT, low_open=True)

    def log_ratio(p: float, which: str) -> float:
        result = theorem4(p=p, sigma=sigma, epsilon=epsilon, delta=0.5, client_size=client_size,
                          sample_rate=initial_size / (client_size * offset**p), grad_computations=grad_computations,
                          gamma=gamma)
        return math.log((result.k_minus if which == "minus" else result.k_plus) / grad_computations)

    grid = np.linspace(p_max / points, p_max, points)
    roots: dict[str, list[float]] = {}
    for which in ("minus", "plus"):
        values = [log_ratio(p, which) for p in grid]
        roots[f"p_{which}"] = [float(brentq(log_ratio, a, b, args=(which,), xtol=1e-12))
                               for a, b, fa, fb in zip(grid, grid[1:], values, values[1:], strict=False)
                               if fa == 0 or fa * fb < 0]
    return roots


# --------------------------------------------------------------------------------------------
# Theorem 3 evaluated directly on a realised sequence (L177-185, D.2 L925-1069)
# --------------------------------------------------------------------------------------------

def c_function(x: float, *, r: float, rho: float, rho_hat: float) -> tuple[float, str]:
    """c(x) = min{(√(2rρx+1)−1)/(rρx), 2/(ρ̂x)} and which branch is active (L183, L947)."""
    product = r * rho * x
    # (√(2P+1) − 1)/P → 0 as P → ∞ (a product beyond the float range: r carries exp(3/σ²))
    curved = (math.sqrt(2 * product + 1) - 1) / product if math.isfinite(product) else 0.0
    hyperbolic = 2 / (rho_hat * x)
    return (hyperbolic, "2/(rho_hat x)") if hyperbolic <= curved else (curved, "sqrt")


@dataclass(frozen=True)
class Theorem3Result(TheoremResult):
    """Theorem 3 on an actual sequence s_{i,c}: its moments, constants and the δ it proves."""

    rounds: int
    moments: tuple[float, float, float]  # Ŝ_1, Ŝ_2, Ŝ_3
    rho: float
    rho_hat: float
    r0: float
    r: float
    c1: float
    c0: float
    branch: str
    delta: float
    sigma_lower_bound: float | None
    lambda_max: int
    source: str = cite("vandijk", "Theorem 3, (16) L931, proof L953-1069", "L177-185")


def _sample_sizes(sizes, client_size: int) -> np.ndarray:
    array = np.asarray(sizes, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("sizes must be a non-empty list of per-round sample sizes s_{i,c}")
    if not np.all(np.isfinite(array)) or np.any(array < 1) or np.any(array >= client_size) \
            or np.any(array != np.round(array)):
        raise ValueError(f"sizes must be integers in [1, client_size) = [1, {client_size}); "
                         f"got values from {array.min():g} to {array.max():g}")
    return array


def _smallest_admissible_r0(max_rate: float, sigma: float) -> float:
    """σ·max_i q_i, nudged up by rounding so that max_i q_i ≤ r0/σ holds in floating point."""
    r0 = sigma * max_rate
    while r0 / sigma < max_rate:
        r0 = math.nextafter(r0, math.inf)
    return r0


def theorem3(*, sizes, client_size: int, sigma: float, epsilon: float, delta: float | None = None,
             r0: float | None = None) -> Theorem3Result:
    """Theorem 3 evaluated on the realised sequence (the paper never does this; spec §4.9, §9.1).

    Rounds are i = 0..T−1 (erratum I-18). ρ and ρ̂ take their tightest values Ŝ1Ŝ3/Ŝ2² and Ŝ1²/Ŝ2,
    r0 defaults to σ·max_i s_{i,c}/N_c (the smallest admissible), c1 = ε/(TŜ1²), c0 = c(c1) and
    δ = exp(−c0ε²σ²/(4Ŝ2T)) (L181); with ``delta`` given the σ lower bound
    2/√c0·√(Ŝ2T ln(1/δ))/ε is reported as well. In the 2/(ρ̂x) branch δ = exp(−εσ²/2) exactly.
    """
    client_size = check_int("client_size", client_size, low=2)
    s = _sample_sizes(sizes, client_size)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    n = float(client_size)
    rounds = s.size
    moments = tuple(float(np.mean(s**j / (n * (n - s) ** (j - 1)))) for j in (1, 2, 3))
    s1, s2, s3 = moments
    rho, rho_hat = s1 * s3 / s2**2, s1**2 / s2
    max_rate = float(s.max()) / n
    if r0 is None:
        r0 = _smallest_admissible_r0(max_rate, sigma)
        if r0 >= r0_limit(sigma=sigma):
            raise ValueError(f"sizes must keep max_i s_i/N_c below r0_limit(sigma)/sigma = "
                             f"{r0_limit(sigma=sigma) / sigma:.6g} at sigma = {sigma:g}, so that (16) defines a finite "
                             f"r (u0, u1 < 1, L937) and Theorem 3 proves some delta < 1; got {max_rate:.6g}")
    constants = r_constant(r0=r0, sigma=sigma)
    c1 = epsilon / (rounds * s1**2)
    c0, branch = c_function(c1, r=constants.r, rho=rho, rho_hat=rho_hat)
    delta_proved = math.exp(-c0 * epsilon**2 * sigma**2 / (4 * s2 * rounds))
    bound = None
    if delta is not None:
        delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
        bound = 2 / math.sqrt(c0) * math.sqrt(s2 * rounds * math.log(1 / delta)) / epsilon
    s2_sum = rounds * s2 / sigma**2  # S_2 of the proof (L955)
    lambda_max = min(math.floor(c0 * epsilon / (2 * s2_sum)) - 1, math.floor(sigma**2))
    checks = (*constants.hypotheses,
              hypothesis("max_i s_i/N_c <= r0/sigma", max_rate, "<=", r0 / sigma, "L177"),
              Hypothesis("integer lambda >= 1 with lambda+1 <= c0 eps/(2 S2), lambda <= sigma^2",
                         lambda_max >= 1, f"lambda_max = {lambda_max}", "L1023-1025"))
    return Theorem3Result(rounds=rounds, moments=moments, rho=rho, rho_hat=rho_hat, r0=constants.r0, r=constants.r,
                          c1=c1, c0=c0, branch=branch, delta=delta_proved, sigma_lower_bound=bound,
                          lambda_max=lambda_max, hypotheses=checks)


# --------------------------------------------------------------------------------------------
# Lemma 4 as a numerical moments accountant (spec §9.1, tier 3)
# --------------------------------------------------------------------------------------------

def lemma4_log_moment_bound(*, order: int, size: float, client_size: int, sigma: float, r0: float) -> float:
    """Lemma 4's bound on the log-moment α_i(λ) of one round (L853-867).

    α_i(λ) ≤ s²λ(λ+1)/(N(N−s)σ²) + (r/r0)·s³λ²(λ+1)/(N(N−s)²σ³), with r from (16) at λ = σ²
    (so U0(λ) ≤ u0 and U1(λ) ≤ u1 for λ ≤ σ²). Valid for λ ≤ min(σ², σ² ln(N/(sσ))) (erratum I-14).
    """
    constants = r_constant(r0=r0, sigma=sigma)
    n, lam = float(client_size), float(order)
    return (size**2 * lam * (lam + 1) / (n * (n - size) * sigma**2)
            + constants.r / r0 * size**3 * lam**2 * (lam + 1) / (n * (n - size) ** 2 * sigma**3))


def lemma4_delta(*, sizes, client_size: int, sigma: float, epsilon: float, r0: float | None = None
                 ) -> tuple[float, int]:
    """(δ, λ): min over valid integer λ of exp(Σ_i α_i(λ) − λε) with Lemma 4's bounds (L961-963, L853-867).

    Valid λ: 1 ≤ λ ≤ min(σ², σ² ln(N_c/(s_max σ))). r0 defaults to σ·max_i s_i/N_c. Example 3's
    realised sequence gives δ ≈ 1e-24 at ε = 1 (spec §6 TV-9).
    """
    client_size = check_int("client_size", client_size, low=2)
    s = _sample_sizes(sizes, client_size)
    sigma = check_real("sigma", sigma, low=0.0, low_open=True)
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    r0 = _smallest_admissible_r0(float(s.max()) / client_size, sigma) if r0 is None else r0
    constants = r_constant(r0=r0, sigma=sigma)
    if not all_hold(constants.hypotheses):  # u0, u1 < 1 hold whenever r_constant answers: r0 > 1/e is left
        raise ValueError(f"r0 must be a real number in (0, 1/e] = (0, {R0_MAX:.6g}] for Lemma 4 (L929); got {r0:g}")
    top = math.floor(min(sigma**2, sigma**2 * math.log(client_size / (float(s.max()) * sigma))))
    if top < 1:
        raise ValueError(f"no integer order lambda >= 1 satisfies Lemma 4's condition at sigma = {sigma:g}")
    orders = np.arange(1, top + 1, dtype=float)
    n = float(client_size)
    first = np.sum(s**2 / (n * (n - s))) / sigma**2
    second = constants.r / r0 * np.sum(s**3 / (n * (n - s) ** 2)) / sigma**3
    log_delta = first * orders * (orders + 1) + second * orders**2 * (orders + 1) - orders * epsilon
    best = int(np.argmin(log_delta))
    return math.exp(log_delta[best]), int(orders[best])


# --------------------------------------------------------------------------------------------
# Parameter selection, case 1 and case 2 (L211-219, L1505-1817; spec §5)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SelectionPass:
    """One pass of the m/T iteration: the constant used, the two q limits and the resulting q, m, T, γ."""

    gamma_in: float
    constant: float
    q_theorem: float  # q from K ≤ K⁻ (case 1) or K ≤ k·K⁺ (case 2)
    q_star: float  # q from K ≤ K*
    q: float
    m: float
    rounds: int
    gamma_out: float

    @property
    def binding(self) -> str:
        return "K*" if self.q_star < self.q_theorem else "K-/K+"


def _selection_source(closed: bool) -> str:
    forms = "Theorem 4 closed" if closed else "Theorem 6 general"
    return cite("vandijk", f"parameter selection (Theorem 4/6, D.3.2) with the {forms} B, A", "L211-219, L1505-1817")


@dataclass(frozen=True)
class Selection(TheoremResult):
    """The outcome of the paper's parameter selection (L211-219) for one σ.

    ``sizes`` is the realised integer sequence s_{i,c} = ⌈N_c q (i+m)^p⌉ until Σ ≥ K. ``rounds``
    is ⌈T_up⌉ for the paper variant (erratum I-33) and ``len(sizes)`` for the corrected one. ``hypotheses``
    (checked on the realised sequence) and ``notes`` (the errata of docs/ERRATA.md behind the numbers): see
    :func:`select_parameters`.
    """

    case: int
    sigma: float
    epsilon: float
    p: float
    client_size: int
    initial_size: int
    grad_computations: float
    r0: float
    r: float
    alpha: float
    q: float
    m: float
    rounds: int
    gamma: float
    factor: float
    budget: float
    delta: float
    k_ratio: float | None
    sizes: tuple[int, ...]
    passes: tuple[SelectionPass, ...]
    variant: str
    notes: tuple[str, ...] = ()
    source: str = _selection_source(closed=False)

    @property
    def slope(self) -> float:
        """N_c·q: the sequence grows by this many samples per round for p = 1 (L1689)."""
        return self.client_size * self.q

    @property
    def aggregated_noise(self) -> float:
        """√T·σ, the standard deviation of the summed noise in units of C (L1163)."""
        return math.sqrt(self.rounds) * self.sigma

    @property
    def constant_rounds(self) -> int:
        """⌈K/s_{0,c}⌉ rounds of the constant-sample-size baseline (L221, L1691)."""
        return math.ceil(self.grad_computations / self.initial_size - 1e-9)

    @property
    def constant_aggregated_noise(self) -> float:
        """√T_const·𝓑: the baseline runs at σ = 𝓑 (L221, L1569)."""
        return math.sqrt(self.constant_rounds) * self.budget


def _selection_notes(variant: str, *, closed: bool, case: int) -> tuple[str, ...]:
    """The errata of docs/ERRATA.md behind a selection's numbers, as the variant resolves them."""
    corrected = variant == "corrected"
    notes = [_k_star_note(variant),
             "I-21, I-33: T and gamma = m/T of the realised sequence" if corrected
             else "I-21, I-33: T = ceil(T_up) as printed, gamma = m/T of that T",
             "I-26: Theorem 4's closed B and A (exact at gamma = 0 only)" if closed
             else "I-26: Theorem 6's general B and A at the actual r, gamma, alpha",
             R0_BOUND_NOTE,
             "I-41, I-42: each round a Poisson-subsampled Gaussian, add/remove-one, noise once per round (the paper's "
             "Algorithm 1 samples with replacement)"]
    if case == 2:
        notes.insert(2, "I-22: case-2 factor with the (1+gamma)^(1/2) lost in (31) and 2 sqrt((sqrt3-1)/2)"
                     if corrected else "I-22: case-2 factor as printed (without (31)'s (1+gamma)^(1/2), 1.21)")
    return tuple(notes)


def _resolve_r0(r0, sigma: float, p: float) -> float:
    if r0 == "r0(sigma)":
        return r0_of_sigma(sigma=sigma, p=p).r0
    return check_real("r0", r0, low=0.0, high=R0_MAX, low_open=True)


def _offset(initial_size: int, client_size: int, q: float, p: float) -> float:
    """m from s_{0,c} = N_c q m^p (L1531); refused by name where m exceeds a float (a tiny p)."""
    log_m = (math.log(initial_size) - math.log(client_size * q)) / p
    if not log_m < LOG_FLOAT_MAX:
        raise ValueError(f"p = {p:.6g} gives an offset m = (s0/(N_c q))^(1/p) = e^{log_m:.4g}, beyond a float: "
                         f"p must be larger for initial_size = {initial_size}, client_size = {client_size}")
    return math.exp(log_m)


def _continuous_rounds(epochs: float, q: float, p: float) -> float:
    """T_up = ((p+1)K/(N_c q))^{1/(p+1)}, the upper end of (21) (L1227, L1539)."""
    return ((p + 1) * epochs / q) ** (1 / (p + 1))


def _realised_sizes(client_size: int, q: float, m: float, p: float, total: float) -> np.ndarray:
    return power_sequence(client_size=client_size, sample_rate=q, offset=m, exponent=p, total=math.ceil(total))


def select_parameters(*, initial_size: int, client_size: int, grad_computations: float, p: float,
                      epsilon: float, sigma: float, r0: float | str = "r0(sigma)", case: int = 1,
                      k: float = 1.0, variant: str = "corrected", closed_form: bool | None = None,
                      max_passes: int | None = None, tolerance: float | None = None) -> Selection:
    """The paper's parameter selection for a given σ (L211-219; spec §5.1-5.3).

    Pass n uses γ from pass n−1 (γ = 0 first): it takes the constant (B for case 1, A for case 2;
    the closed forms of Theorem 4 or the general Theorem 6 forms, see ``closed_form``), the largest q
    with K ≤ K⁻ (case 1) or K ≤ k·K⁺ (case 2) and K ≤ K*, then m = (s0/(N_c q))^{1/p}, T and
    γ = m/T. Passes stop when γ changes by at most ``tolerance`` (relative; default 0.01 for the
    paper, its "two most significant digits", L1673, and 1e-6 for the corrected variant) or after
    ``max_passes``.

    ``closed_form`` (paper variant only) uses Theorem 4's closed B and A, which hold at r0 = r0(σ)
    (L191-195). Default: when r0 is the paper's r0(σ), i.e. ``"r0(sigma)"`` or a number
    ≤ (√3−1)/16 = 0.0458, the bound of every r0(σ) iterate (L1335), as the printed r0(σ) = 0.0110,
    0.0202, 0.0247 of Examples 1, 2, 4 (L1521, L1591, L1713; erratum I-27); a larger r0 is the
    paper's "other larger settings for r0" (L1507), with Theorem 6's general forms, as Examples 3 and
    5 do with 1/e (L1631-1639, L1757-1765). ``max_passes`` default: one pass when the paper variant
    uses the closed B in case 1, where the paper stops because "the value m/T does not affect the
    upper bound on q" (L1545, L1615, L1737; Example 1's second pass is its redo at ε = 8, L1557-1567,
    erratum I-28: ``max_passes=2``); else until γ settles, at most 100 passes.

    * ``variant="paper"``: the paper's K* sign, T = ⌈T_up⌉ (errata I-20, I-33). Reproduces
      Examples 1-5 with the defaults (Example 2's q from K⁻, which does not bind, needs the rounded
      0.845, erratum I-29; Example 4's factor needs r0/5 for r0/σ, erratum I-31).
    * ``variant="corrected"``: K* with (1+γ)^{−(1+p)}, T = the realised number of rounds of
      ⌈N_c q (i+m)^p⌉, γ = m/T of that T, the exact 1.21 and (31)'s lost (1+γ)^{1/2}.

    The budget 𝓑 = σ/F follows from case 1's factor (29) or case 2's (18)/(19), and δ = exp(−ε𝓑²/2).
    Hypotheses (r0 ≤ 1/e, u0, u1 < 1, max_i q_i ≤ r0/σ on the realised sequence, σ ≥ 1.137,
    (26) and K ≥ K⁺ for case 2) are checked and reported, never hidden.
    """
    variant = _check_variant(variant)
    initial_size = check_int("initial_size", initial_size, low=1)
    client_size = check_int("client_size", client_size, low=2)
    if initial_size >= client_size:
        raise ValueError(f"initial_size must be an integer in [1, client_size) = [1, {client_size}); "
                         f"got {initial_size}")
    grad_computations = check_real("grad_computations", grad_computations, low=float(initial_size))
    p = check_real("p", p, low=MIN_GROWTH_EXPONENT, high=MAX_EXPONENT)
    epsilon = check_real("epsilon", epsilon, low=0.0, low_open=True)
    sigma = check_real("sigma", sigma, low=SIGMA_FLOOR)
    case = int(check_choice("case", str(case), ("1", "2")))
    k = check_real("k", k, low=1.0)
    tolerance = check_real("tolerance", (0.01 if variant == "paper" else 1e-6) if tolerance is None else tolerance,
                           low=0.0, high=1.0)
    if max_passes is not None:
        max_passes = check_int("max_passes", max_passes, low=1, high=1000)
    r0_value = _resolve_r0(r0, sigma, p)
    constants = r_constant(r0=r0_value, sigma=sigma)
    alpha = r0_value / sigma
    epochs = grad_computations / client_size
    if closed_form and variant == "corrected":
        raise ValueError("closed_form=True needs variant='paper': the closed B and A hold only at gamma = 0 "
                         "(erratum I-26); the corrected variant uses Theorem 6's general forms")
    if closed_form is None:
        closed_form = r0 == "r0(sigma)" or r0_value <= R0_CAP
    closed = variant == "paper" and bool(closed_form)
    if max_passes is None:
        max_passes = 1 if closed and case == 1 else 100

    def pass_from(gamma: float) -> tuple[SelectionPass, np.ndarray | None]:
        if case == 1:
            constant = constant_b_closed(p=p) if closed else constant_b(r=constants.r, p=p, gamma=gamma,
                                                                        alpha=alpha)
        else:
            constant = (constant_a_closed(p=p, gamma=gamma) if closed
                        else constant_a(r=constants.r, p=p, gamma=gamma, alpha=alpha))
        q_theorem = sample_rate_for_k_limit(constant=constant * (k if case == 2 else 1.0), epsilon=epsilon,
                                            epochs=epochs, p=p)
        q_star = sample_rate_for_k_star(alpha=alpha, p=p, gamma=gamma, epochs=epochs, variant=variant)
        q = min(q_theorem, q_star)
        m = _offset(initial_size, client_size, q, p)
        if variant == "paper":
            sizes, rounds = None, math.ceil(_continuous_rounds(epochs, q, p))
        else:
            sizes = _realised_sizes(client_size, q, m, p, grad_computations)
            rounds = int(sizes.size)
        return SelectionPass(gamma, constant, q_theorem, q_star, q, m, rounds, m / rounds), sizes

    passes, gamma = [], 0.0
    for _ in range(max_passes):
        step, sizes = pass_from(gamma)
        passes.append(step)
        close = abs(step.gamma_out - gamma) <= tolerance * step.gamma_out
        if variant == "paper":
            gamma = step.gamma_out
            if close:
                break
        elif step.gamma_out <= gamma:
            break  # the γ that chose q bounds m/T of the sequence it produced
        else:
            # Approach the fixed point from above once close, so that the last pass is valid.
            gamma = step.gamma_out * (1 + tolerance) if close else step.gamma_out
        if gamma > MAX_GAMMA:
            raise ValueError(
                f"no increasing schedule: the m/T iteration diverges (gamma = m/T = {gamma:.3g} after {len(passes)} "
                f"passes): the largest q that K <= K-/K+ and K <= K* allow makes the sequence flat; raise sigma or "
                f"r0, lower grad_computations or p, or try case 2")
    final = passes[-1]
    if sizes is None:
        sizes = _realised_sizes(client_size, final.q, final.m, p, grad_computations)
    gamma = final.gamma_out if variant == "paper" else max(final.gamma_in, final.gamma_out)
    k_ratio = None
    if case == 1:
        factor = case1_factor(p=p, gamma=gamma, alpha=alpha)
    else:
        a_used = constant_a_closed(p=p, gamma=gamma) if closed else constant_a(r=constants.r, p=p, gamma=gamma,
                                                                                alpha=alpha)
        k_plus_epochs = a_used * epsilon ** ((1 + p) / (1 + 2 * p)) * final.q ** (-1 / (1 + 2 * p))
        k_ratio = epochs / k_plus_epochs
        factor = case2_factor(p=p, gamma=gamma, alpha=alpha, k=max(k_ratio, 1.0),
                              r=None if closed else constants.r, variant=variant)
    budget = sigma / factor
    checks = list(constants.hypotheses)
    checks.append(hypothesis("max_i q_i <= r0/sigma (realised sequence)", float(sizes.max()) / client_size, "<=",
                             alpha, "L177, L1081"))
    checks.append(hypothesis("gamma used for q >= m/T (realised T)", final.gamma_in, ">=", final.m / sizes.size,
                             "L1077"))
    if r0 == "r0(sigma)":
        checks.append(hypothesis("sigma >= 1.137", sigma, ">=", 1.137, "L191, L1339"))
    if case == 2:
        checks.append(condition_26(r=constants.r, p=p, gamma=gamma, alpha=alpha))
        checks.append(hypothesis("K >= K+", k_ratio, ">=", 1.0, "L1121"))
    return Selection(variant=variant, case=case, sigma=sigma, epsilon=epsilon, p=p, client_size=client_size,
                     initial_size=initial_size, grad_computations=grad_computations, r0=r0_value, r=constants.r,
                     alpha=alpha, q=final.q, m=final.m, rounds=final.rounds, gamma=gamma, factor=factor,
                     budget=budget, delta=math.exp(-epsilon * budget**2 / 2), k_ratio=k_ratio,
                     sizes=tuple(int(v) for v in sizes), passes=tuple(passes), hypotheses=tuple(checks),
                     notes=_selection_notes(variant, closed=closed, case=case),
                     source=_selection_source(closed))
