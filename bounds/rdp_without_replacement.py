"""Rényi DP of the Gaussian mechanism under sampling without replacement, replace-one neighbours.

One step releases ``f(S) + N(0, σ²)`` on a uniformly random subset ``S`` of ``m`` of the ``n``
records (sample rate ``q = m/n``); neighbouring data sets have the same size and differ by
*replacing* one record. :func:`rdp_without_replacement_gaussian` is the one-step RDP bound of
Wang, Balle, Kasiviswanathan, "Subsampled Rényi differential privacy and analytical moments
accountant" (AISTATS 2019, arXiv:1808.00087), Theorem 27, at integer orders 2 … 256, vectorised
over the orders.

``noise_multiplier`` is σ = noise std / the *replace-one* L2 sensitivity of the base mechanism
``f`` (for a sum of per-record gradients clipped to C that sensitivity is 2C, for their mean 2C/m),
exactly as dp-accounting uses it in ``SampledWithoutReplacementDpEvent(n, m, GaussianDpEvent(σ))``
under ``NeighboringRelation.REPLACE_ONE``. The base mechanism then has RDP ε(α) = α/(2σ²), and we
write cgf(x) = x(x+1)/(2σ²) = (α-1)ε(α) at α = x + 1.

Theorem 27 (as dp-accounting 0.6.0 evaluates it). With F(x) = e^{(x-1)ε(x)} = e^{cgf(x-1)} and the
forward differences Δ^k F(0) = Σ_{i=0..k} (-1)^{k-i} C(k, i) F(i),

    log A_α = log(1 + q² C(α,2) min(4(e^{ε(2)} - 1), 2 e^{ε(2)})
                    + Σ_{j=3..α} q^j C(α,j) min(4 √(Δ^{2⌊j/2⌋}F(0) Δ^{2⌈j/2⌉}F(0)), 2 e^{cgf(j-1)})),

and R(α) = log A_α / (α - 1). Only *even* differences enter. (They are differences of
x ↦ e^{cgf(x-1)} at 0, i.e. of e^{cgf} at -1, not of e^{cgf} at 0: dp-accounting's
``_get_forward_diffs`` prepends F(0) = 1 to e^{cgf(0)}, e^{cgf(1)}, …)

Why our own differences. dp-accounting differences the 257 values F(0 … 256) in floating point,
256 times over. The values reach e^{cgf(255)} while for large σ the even differences are tiny
(Δ^k F(0) ≈ (k-1)!! / σ^k), so the cancellation ratio Σ C(k,i) F(i) / Δ^k F(0) reaches e^{18} at
σ = 5 (k = 20) and e^{264} at σ = 20 (k = 256): its Δ^k are then rounding noise (2e-8 relative at
σ = 5 from k = 20 on, wrong by a factor up to 10^98 at σ = 20; accurate to 1e-10 for σ ≤ 2), while
Theorem 27 selects exactly those values in its min. We use an integral with a positive integrand instead: with a = 1/σ,
e^{cgf(i-1)} = e^{-a²/8} E[e^{a(i-1/2)Z}] for Z ~ N(0, 1), so

    Δ^k F(0) = e^{-a²/8} E[e^{-aZ/2} (e^{aZ} - 1)^k] = e^{cgf(k-1)} E[(1 - e^{-a(Z+μ)})^k],  μ = a(k - 1/2),

nonnegative for even k, and evaluated in log space by the trapezoidal rule on a lattice z = n·h
(no cancellation: every summand is positive). Error control, all rigorous:

* aliasing: the integrand is Σ_i ± C(k,i) F(i) × (a shifted standard normal density), and the
  trapezoidal rule with step h integrates each such density to relative error ≤ 2.01 e^{-2π²/h²};
  h is chosen so that this times the cancellation ratio (bounded above with two lower bounds of
  Δ^k F(0)) is ≤ e^{-60};
* truncation: on z > 0 and on z < 0 the log-integrand has second derivative ≤ -1, so a window of
  ±10 around each peak (peaks located in closed-form intervals) loses < e^{-45} of the mass;
* rounding: a margin of 1e-12 plus 45 ulp of |log Δ| is added to each log Δ^k F(0), and log A_α is
  raised by 1e-12 relative (the rounding of log C(α, j) and of the sum is ≤ 1e-13), so the returned
  values stay upper bounds of the exact ones (the tests check both against mpmath at 400 digits).

Measured against mpmath at 400 digits, σ ∈ {0.3, 0.7, 1, 2, 5, 20}, q ∈ {1e-4, 1e-3, 0.01, 0.05, 0.3, 0.9},
orders 2 … 256 (never below the exact value; worst relative excess):

    σ                          0.3      0.7      1        2        5        20
    Δ^k F(0), ours             3.6e-9   6.6e-10  3.3e-10  8.3e-11  1.4e-11  2.0e-12   (margin 1e-14·|log Δ|)
    Δ^k F(0), dp-accounting    2.6e-11  6.8e-12  8.1e-13  1.3e-11  1.9e-8   6.6e98
    R(α), ours                 1.0e-12  1.0e-12  1.0e-12  1.3e-12  1.4e-12  1.5e-12
    R(α), dp-accounting        6.9e-16  7.2e-15  1.6e-14  5.3e-14  7.3e-10  7.1 (i.e. ×8.1)

dp-accounting's R(α) is also *below* the exact value in places (by up to 2.2e-8 at σ = 20, 7.3e-10 at σ = 5).

Time per call of :func:`rdp_without_replacement_gaussian` with the 255 default orders (best of 5 × 200 calls
on the 2-core development machine, under load): 0.9 ms for σ = 0.3 … 5, 2 ms at σ = 20, 4 ms at σ = 1e3 and
7 ms at σ = 1e8 (the aliasing bound shrinks the step); dp-accounting's RdpAccountant needs 4.8 s for the same
255 orders (an O(α²) Python loop per order).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from fedplan.bounds import rdp
from fedplan.bounds.validation import check_int, check_real

#: Largest order: Theorem 27 is evaluated exactly up to 256 (as in dp-accounting); fewer orders can
#: only raise ε.
MAX_ORDER = 256
ORDERS: tuple[float, ...] = tuple(float(order) for order in range(2, MAX_ORDER + 1))

_WINDOW = 10.0  # half-width of each quadrature window around a peak (log-integrand curvature ≤ -1)
_ALIASING_EXPONENT = 60.0  # the step makes aliasing ≤ e^{-60} of the differences
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_MARGIN_ABSOLUTE = 1e-12
_LOG_MARGIN_RELATIVE = 1e-14  # 45 ulp of |log Δ|: rounding of cgf and of the log-sum
_SUM_MARGIN = 1e-12  # relative, on log A_α: rounding of log C(α, j) and of the sum over j (≤ 1e-13)


def _check_orders(orders: Sequence[float]) -> np.ndarray:
    try:
        alphas = np.asarray(orders, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"orders must be integers in [2, {MAX_ORDER}]; got {orders!r}") from None
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError(f"orders must be a non-empty one-dimensional sequence of integers in [2, {MAX_ORDER}]; "
                         f"got {orders!r}")
    bad = ~((alphas == np.floor(alphas)) & (alphas >= 2) & (alphas <= MAX_ORDER))
    if bad.any():
        raise ValueError(f"orders must be integers in [2, {MAX_ORDER}]; got {alphas[bad][0]:g}")
    return alphas


def log_even_forward_differences(*, noise_multiplier: float, max_difference: int = MAX_ORDER) -> np.ndarray:
    """log Δ^k F(0) for k = 2, 4, …, ``max_difference`` (rounded up to even), F(x) = e^{(x-1)x/(2σ²)}.

    Element j is log Δ^{2j+2} F(0). Quadrature of the positive integral representation (module
    docstring), plus a rounding margin: never below the exact value.
    """
    sigma = check_real("noise_multiplier", noise_multiplier, low=rdp.MIN_NOISE_MULTIPLIER,
                       high=rdp.MAX_NOISE_MULTIPLIER)
    top = check_int("max_difference", max_difference, low=2, high=MAX_ORDER)
    top += top % 2
    a = 1.0 / sigma
    k = np.arange(2, top + 1, 2, dtype=float)[:, None]
    log_f_k = (k - 1) * k / (2 * sigma**2)  # log F(k) = cgf(k - 1)
    mu = a * (k - 0.5)
    # Step: aliasing ≤ 2.01 e^{-2π²/h²} Σ_i C(k,i) F(i) ≤ 2.01 e^{-2π²/h²} 2^k F(k), relative to lower bounds of
    # Δ^k F(0): e^{-a²/8} E[(aZ)^k; Z > 0] = e^{-a²/8} a^k (k-1)!!/2 (as e^{-x/2}(e^x-1)^k ≥ x^k for x > 0), and
    # F(k) P(Z > 0) (1 - e^{-aμ})^k (the integrand of the second form is ≥ 0 and increasing in Z for Z + μ > 0).
    log_double_factorial = special.gammaln(k + 1) - (k / 2) * math.log(2) - special.gammaln(k / 2 + 1)
    low_small_a = -a * a / 8 + k * math.log(a) + log_double_factorial - math.log(2)
    low_large_a = log_f_k - math.log(2) + k * np.log(-np.expm1(-a * mu))
    log_ratio = k * math.log(2) + log_f_k - np.maximum(low_small_a, low_large_a)
    h = min(0.5, math.pi * math.sqrt(2.0 / (float(log_ratio.max()) + _ALIASING_EXPONENT)))
    width = int(math.ceil((math.sqrt(top + 1) + 2 * _WINDOW) / h)) + 2
    steps = np.arange(width, dtype=float)[None, :]
    # z > 0: peak of -u²/2 + k log(1 - e^{-a(u+μ)}) at u = z - μ in (0, √k].
    z = (np.maximum(np.ceil((mu - _WINDOW) / h), 1.0) + steps) * h
    u = z - mu
    log_positive = log_f_k - 0.5 * u * u + k * np.log(-np.expm1(-a * z))
    # z < 0: peak of -z²/2 - az/2 + k log(1 - e^{az}) in [-(a/4 + √(a²/16 + k)), -a/2].
    z = (np.floor((-(a / 4 + np.sqrt(a * a / 16 + k)) - _WINDOW) / h) + steps) * h
    with np.errstate(divide="ignore"):
        log_negative = -a * a / 8 - 0.5 * z * z - 0.5 * a * z + k * np.log(-np.expm1(np.minimum(a * z, 0.0)))
    log_negative = np.where(z < 0, log_negative, -np.inf)  # z ≥ 0 belongs to the positive window (or is 0)
    log_diff = rdp.log_sum_exp_rows(np.concatenate([log_positive, log_negative], axis=1)) + math.log(h) - _LOG_SQRT_2PI
    return log_diff + _LOG_MARGIN_ABSOLUTE + _LOG_MARGIN_RELATIVE * np.abs(log_diff)


@functools.lru_cache(maxsize=16)
def _log_binomials(orders: tuple[int, ...]) -> np.ndarray:
    """(orders × (max α - 1)) array of log C(α, j), j = 2 … max α; -inf where j > α."""
    alphas = np.asarray(orders, dtype=float)[:, None]
    j = np.arange(2, max(orders) + 1, dtype=float)[None, :]
    with np.errstate(invalid="ignore"):
        log_binom = special.gammaln(alphas + 1) - special.gammaln(j + 1) - special.gammaln(alphas - j + 1)
    log_binom = np.where(j <= alphas, log_binom, -np.inf)
    log_binom.flags.writeable = False
    return log_binom


def rdp_without_replacement_gaussian(*, sample_rate: float, noise_multiplier: float,
                                     orders: Sequence[float] = ORDERS) -> np.ndarray:
    """One-step RDP of the Gaussian mechanism under sampling without replacement, replace-one neighbours.

    Wang-Balle-Kasiviswanathan 2019 Thm 27 at integer ``orders`` in [2, 256]; ``sample_rate`` q = m/n in
    (0, 1], ``noise_multiplier`` σ = noise std / replace-one L2 sensitivity (module docstring). q = 1 gives
    the plain Gaussian mechanism, α/(2σ²). Never below the exact value of the theorem's bound.
    """
    q = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    sigma = check_real("noise_multiplier", noise_multiplier, low=rdp.MIN_NOISE_MULTIPLIER,
                       high=rdp.MAX_NOISE_MULTIPLIER)
    alphas = _check_orders(orders)
    if q == 1.0:
        return alphas / (2 * sigma**2)
    top = int(alphas.max())
    eps2 = 1 / sigma**2  # ε(2) of the base mechanism
    log_expm1_eps2 = math.log(math.expm1(eps2)) if eps2 < 30 else eps2 + math.log1p(-math.exp(-eps2))
    j = np.arange(2, top + 1)
    moment = np.empty(top - 1)
    moment[0] = min(math.log(4) + log_expm1_eps2, math.log(2) + eps2)
    if top >= 3:
        log_diff = log_even_forward_differences(noise_multiplier=sigma, max_difference=top + top % 2)
        odd_even = j[1:]  # Δ^{2⌊j/2⌋} is element ⌊j/2⌋ - 1, Δ^{2⌈j/2⌉} element ⌈j/2⌉ - 1
        geometric_mean = 0.5 * (log_diff[odd_even // 2 - 1] + log_diff[(odd_even + 1) // 2 - 1])
        moment[1:] = np.minimum(math.log(4) + geometric_mean, math.log(2) + (odd_even - 1) * odd_even / (2 * sigma**2))
    terms = _log_binomials(tuple(int(a) for a in alphas)) + j * math.log(q) + moment
    log_a = np.logaddexp(0.0, rdp.log_sum_exp_rows(terms))
    return log_a * (1 + _SUM_MARGIN) / (alphas - 1)
