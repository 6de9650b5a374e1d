"""Rényi DP of the Poisson-subsampled Gaussian mechanism, vectorised over orders.

One step of the mechanism releases ``f(D) + N(0, σ²)`` where every example enters the
batch independently with probability ``q`` (Poisson sampling) and the L2 sensitivity is 1
(``σ`` is the noise multiplier: noise std / clipping norm). Neighbouring data sets differ by
adding or removing one example. With ``μ0 = N(0, σ²)`` and ``μ = (1-q) μ0 + q N(1, σ²)``
the moment ``A_α = E_{z~μ0}[(μ(z)/μ0(z))^α]`` gives the one-step RDP
``R(α) = log A_α / (α - 1)`` (Mironov, Talwar, Zhang 2019, "Rényi DP of the sampled Gaussian
mechanism", §3.3; damaskinos_dpscd.md §4.3 F1, F4, F5).

Why our own code and not dp-accounting's ``RdpAccountant``: that accountant evaluates each of
its 156 orders in a Python loop (17–43 ms per evaluation, anchors.md §2.2); calibration needs
tens of evaluations and the planner must answer in well under a second. Here the integer
orders are one vectorised binomial sum and the fractional orders one vectorised series, and
the tests check the values against dp-accounting and against numerical quadrature.

Fractional orders use the *signed* series (the exact ``A_α``); dp-accounting 0.6.0 sums the
absolute values of the terms, an upper bound that is up to 15 % larger in ``log A_α``
(docs/ERRATA.md, entry ACC-1). Where cancellation in the signed sum could cost accuracy we fall
back to the absolute-value bound, so a computed ``R(α)`` is never below the true one by more
than floating-point rounding.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

#: Default RDP orders: the grid of dp-accounting 0.6.0 and Opacus (1.1 … 10.9 by 0.1, 11 … 63,
#: and four large orders), so our RDP numbers are comparable with theirs.
RDP_ORDERS: tuple[float, ...] = tuple(
    [round(1 + x / 10, 1) for x in range(1, 100)] + [float(a) for a in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)

#: Largest moment order λ of the classic moments accountant used by Abadi et al. (2016) and
#: the Damaskinos thesis code (damaskinos_dpscd.md §4.2): λ = 1 … 128, i.e. RDP orders 2 … 129.
MOMENTS_ACCOUNTANT_MAX_LAMBDA = 128

_MAX_SERIES_TERMS = 1000  # same cap as dp-accounting: an order that does not converge is dropped
_SERIES_CHUNK = 64
_LOG_HALF = math.log(0.5)
_SQRT2 = math.sqrt(2.0)


@functools.lru_cache(maxsize=16)
def _binomial_layout(orders: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded (orders × (max α + 1)) arrays of k, α and log C(α, k); entries with k > α are -inf."""
    alphas = np.asarray(orders, dtype=float)[:, None]
    k = np.arange(int(max(orders)) + 1, dtype=float)[None, :]
    k, alphas = np.broadcast_arrays(k, alphas)
    with np.errstate(invalid="ignore"):
        log_binom = special.gammaln(alphas + 1) - special.gammaln(k + 1) - special.gammaln(alphas - k + 1)
    log_binom = np.where(k <= alphas, log_binom, -np.inf)
    return k.copy(), alphas.copy(), log_binom


def _log_sum_exp_rows(log_terms: np.ndarray, signs: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise ``log |Σ_j s_j exp(x_j)|`` and the sign of the sum, with ``-inf`` entries ignored.

    The largest term is taken out and the rest enters through ``log1p``, so a sum like
    ``1 + 1e-12`` keeps its digits (RDP values of 1e-11 are common at small sample rates).
    """
    rows = np.arange(log_terms.shape[0])
    top = np.argmax(log_terms, axis=1)
    peak = log_terms[rows, top]
    scaled = np.exp(log_terms - peak[:, None])
    if signs is None:
        signs = np.ones_like(scaled)
    top_sign = signs[rows, top]
    scaled[rows, top] = 0.0
    rest = (signs * scaled).sum(axis=1) * top_sign
    with np.errstate(invalid="ignore", divide="ignore"):
        magnitude = peak + np.log1p(rest)
    total_sign = np.where(rest > -1.0, top_sign, -top_sign)
    return magnitude, total_sign


def _log_a_integer(q: float, sigma: float, orders: tuple[int, ...]) -> np.ndarray:
    """``log A_α`` for integer α ≥ 2 (damaskinos_dpscd.md §4.3 F1):
    ``A_α = Σ_k C(α,k) (1-q)^{α-k} q^k exp((k² - k) / (2σ²))``.

    Small and large orders are padded separately, so the large orders (128 … 1024) do not make
    every row 1025 terms long.
    """
    result = np.empty(len(orders))
    alphas = np.asarray(orders)
    for group in (alphas <= 64, alphas > 64):
        if not group.any():
            continue
        k, alpha, log_binom = _binomial_layout(tuple(int(a) for a in alphas[group]))
        terms = log_binom + k * math.log(q) + (alpha - k) * math.log1p(-q) + (k * k - k) / (2 * sigma**2)
        result[group] = _log_sum_exp_rows(terms)[0]
    return result


def _log_erfc(x: np.ndarray) -> np.ndarray:
    return math.log(2.0) + special.log_ndtr(-x * _SQRT2)


def _series_terms(q: float, sigma: float, alphas: np.ndarray, i: np.ndarray):
    """Log-magnitudes of the two halves of the fractional-order series and the binomial sign."""
    j = alphas[:, None] - i[None, :]
    ii = np.broadcast_to(i[None, :], j.shape)
    log_binom = special.gammaln(alphas[:, None] + 1) - special.gammaln(ii + 1) - special.gammaln(j + 1)
    sign = special.gammasgn(j + 1)
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    log_q, log_1mq = math.log(q), math.log1p(-q)
    s0 = (log_binom + ii * log_q + j * log_1mq + (ii * ii - ii) / (2 * sigma**2)
          + _LOG_HALF + _log_erfc((ii - z0) / (_SQRT2 * sigma)))
    s1 = (log_binom + j * log_q + ii * log_1mq + (j * j - j) / (2 * sigma**2)
          + _LOG_HALF + _log_erfc((z0 - j) / (_SQRT2 * sigma)))
    return s0, s1, sign


def _log_a_fractional(q: float, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """``log A_α`` for fractional α by the series of Mironov, Talwar, Zhang (2019) §3.3
    (damaskinos_dpscd.md §4.3 F5), summed with the signs of the generalised binomials.

    The series stops, as dp-accounting's does, once both halves decrease and the new terms are
    below ``e^-30`` times the running total; an order that has not converged after 1000 terms
    gets ``inf`` (dropping an order can only raise ε). If the signed sum is not positive or has
    lost more than 1e-6 of relative accuracy in ``log A_α`` to cancellation, the absolute-value
    sum (an upper bound on ``A_α``) is used instead.
    """
    n = alphas.size
    s0_all = np.full((n, _MAX_SERIES_TERMS), -np.inf)
    s1_all = np.full((n, _MAX_SERIES_TERMS), -np.inf)
    sign_all = np.ones((n, _MAX_SERIES_TERMS))
    stop = np.full(n, -1)
    running = np.full(n, -np.inf)
    last0 = np.full(n, -np.inf)
    last1 = np.full(n, -np.inf)
    active = np.arange(n)
    for start in range(0, _MAX_SERIES_TERMS, _SERIES_CHUNK):
        if active.size == 0:
            break
        i = np.arange(start, min(start + _SERIES_CHUNK, _MAX_SERIES_TERMS), dtype=float)
        s0, s1, sign = _series_terms(q, sigma, alphas[active], i)
        cols = slice(start, start + i.size)
        s0_all[active, cols], s1_all[active, cols], sign_all[active, cols] = s0, s1, sign
        total = np.logaddexp.accumulate(np.logaddexp(s0, s1), axis=1)
        total = np.logaddexp(total, running[active, None])
        prev0 = np.concatenate((last0[active, None], s0[:, :-1]), axis=1)
        prev1 = np.concatenate((last1[active, None], s1[:, :-1]), axis=1)
        converged = (s0 < prev0) & (s1 < prev1) & (np.maximum(s0, s1) < total - 30)
        hit = converged.any(axis=1)
        stop[active[hit]] = start + np.argmax(converged[hit], axis=1)
        running[active], last0[active], last1[active] = total[:, -1], s0[:, -1], s1[:, -1]
        active = active[~hit]

    converged_rows = stop >= 0
    width = int(stop.max()) + 1
    beyond = np.arange(width)[None, :] > stop[:, None]
    s0_all, s1_all, sign_all = s0_all[:, :width], s1_all[:, :width], sign_all[:, :width]
    s0_all[beyond], s1_all[beyond] = -np.inf, -np.inf
    terms = np.concatenate((s0_all, s1_all), axis=1)[converged_rows]
    signs = np.concatenate((sign_all, sign_all), axis=1)[converged_rows]
    log_abs_sum, _ = _log_sum_exp_rows(terms)
    log_signed, sign_of_sum = _log_sum_exp_rows(terms, signs)
    # Rounding error of the signed sum relative to A: ~ (number of terms) * eps * (|terms| / sum).
    n_terms = 2 * (stop[converged_rows] + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        rounding = n_terms * np.finfo(float).eps * np.exp(np.minimum(log_abs_sum - log_signed, 700.0))
    accurate = (sign_of_sum > 0) & (log_signed > 0) & (rounding <= 1e-6 * log_signed)
    result = np.full(n, np.inf)
    result[converged_rows] = np.where(accurate, log_signed, log_abs_sum)
    return result


def _validate_rate_and_noise(sample_rate: float, noise_multiplier: float) -> None:
    if not (0.0 < sample_rate <= 1.0) or not math.isfinite(sample_rate):
        raise ValueError(f"sample_rate must be a real number in (0, 1]; got {sample_rate:g}")
    if not (noise_multiplier > 0.0) or not math.isfinite(noise_multiplier):
        raise ValueError(f"noise_multiplier must be a real number in (0, inf); got {noise_multiplier:g}")


def rdp_poisson_gaussian(*, sample_rate: float, noise_multiplier: float, orders=RDP_ORDERS) -> np.ndarray:
    """One-step RDP ``R(α) = log A_α / (α - 1)`` of the Poisson-subsampled Gaussian mechanism.

    Add/remove-one neighbouring relation, L2 sensitivity 1. ``q = 1`` gives the plain Gaussian
    mechanism ``R(α) = α / (2σ²)``. Orders must be > 1; an entry is ``inf`` where the
    fractional series did not converge.
    """
    q, sigma = float(sample_rate), float(noise_multiplier)
    _validate_rate_and_noise(q, sigma)
    alphas = np.asarray(orders, dtype=float)
    if alphas.ndim != 1 or np.any(alphas <= 1):
        raise ValueError("orders must be a one-dimensional sequence of numbers > 1")
    if q == 1.0:
        return alphas / (2 * sigma**2)
    is_integer = alphas == np.floor(alphas)
    log_a = np.empty_like(alphas)
    if is_integer.any():
        log_a[is_integer] = _log_a_integer(q, sigma, tuple(int(a) for a in alphas[is_integer]))
    if (~is_integer).any():
        log_a[~is_integer] = _log_a_fractional(q, sigma, alphas[~is_integer])
    return np.maximum(log_a, 0.0) / (alphas - 1)


def epsilon_from_rdp(*, rdp, orders, delta: float, conversion: str = "improved") -> tuple[float, float]:
    """Smallest ε over the orders, with the order that attains it.

    ``conversion="improved"``: ε = R + log((α-1)/α) - (log δ + log α)/(α-1) for α > 1.01, and ε = 0
    where δ² ≥ 1 - e^{-R} (Canonne, Kamath, Steinke 2020, Prop. 12; Balle et al. 2020, Thm 21).
    ``conversion="classic"``: ε = R + log(1/δ)/(α-1) (Mironov 2017, Prop. 3).
    """
    r = np.maximum(np.asarray(rdp, dtype=float), 0.0)
    a = np.asarray(orders, dtype=float)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be a real number in (0, 1); got {delta:g}")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if conversion == "classic":
            eps = r + math.log(1 / delta) / (a - 1)
        elif conversion == "improved":
            eps = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
            eps = np.where(a > 1.01, eps, np.inf)
            eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)
        else:
            raise ValueError(f"conversion must be one of 'improved', 'classic'; got {conversion!r}")
    eps = np.where(np.isnan(eps), np.inf, eps)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(a[best])


def delta_from_rdp(*, rdp, orders, epsilon: float) -> tuple[float, float]:
    """Smallest δ over the orders for a given ε, with the order that attains it.

    log δ ≤ (α-1)(R - ε + log(1 - 1/α)) - log α for α > 1.01 (Canonne, Kamath, Steinke 2020,
    Prop. 12), and δ ≤ sqrt(1 - e^{-R}) at every order (Rényi divergence bounds KL).
    """
    r = np.maximum(np.asarray(rdp, dtype=float), 0.0)
    a = np.asarray(orders, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kl_bound = 0.5 * np.log1p(-np.exp(-r))
        rdp_bound = np.where(a > 1.01, (a - 1) * (r - epsilon + np.log1p(-1 / a)) - np.log(a), np.inf)
    log_delta = np.minimum(kl_bound, rdp_bound)
    log_delta = np.where(np.isnan(log_delta), np.inf, log_delta)
    best = int(np.argmin(log_delta))
    return min(1.0, math.exp(min(float(log_delta[best]), 0.0))), float(a[best])


def _composed_rdp(segments, orders: tuple[float, ...]) -> np.ndarray:
    """Σ_i T_i R_i(α) for segments ``(sample_rate, noise_multiplier, steps)`` (RDP composes additively)."""
    total = np.zeros(len(orders))
    for q, sigma, steps in segments:
        total += steps * rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=orders)
    return total


def epsilon_for_segments(segments, delta: float, orders=RDP_ORDERS) -> tuple[float, float]:
    """RDP ε (improved conversion) of a composition of Poisson-subsampled Gaussian segments.

    Fractional orders are only evaluated next to the best integer order: ε_α is unimodal in α
    for this mechanism, so the minimum lies within one unit of the best integer order, and
    evaluating fewer orders can only raise the minimum, so the result is a valid bound in any
    case (tests check it equals the full-grid value).
    """
    grid = np.asarray(orders, dtype=float)
    integer_orders = tuple(float(a) for a in grid[grid == np.floor(grid)])
    eps_int, best_int = epsilon_from_rdp(
        rdp=_composed_rdp(segments, integer_orders), orders=integer_orders, delta=delta
    )
    window = tuple(float(a) for a in grid[(grid != np.floor(grid)) & (np.abs(grid - best_int) < 1)])
    if not window:
        return eps_int, best_int
    eps_frac, best_frac = epsilon_from_rdp(rdp=_composed_rdp(segments, window), orders=window, delta=delta)
    return (eps_frac, best_frac) if eps_frac < eps_int else (eps_int, best_int)


def delta_for_segments(segments, epsilon: float, orders=RDP_ORDERS) -> tuple[float, float]:
    """RDP δ for a given ε of a composition of Poisson-subsampled Gaussian segments (full order grid)."""
    return delta_from_rdp(rdp=_composed_rdp(segments, tuple(orders)), orders=orders, epsilon=epsilon)


def max_steps_for_epsilon(*, sample_rate: float, noise_multiplier: float, target_epsilon: float,
                          target_delta: float, orders=RDP_ORDERS) -> int:
    """Largest T with RDP ε(T) ≤ target, exactly: for each order α the improved conversion is affine
    in T, so ``T_α = floor((ε - c(α)) / R(α))`` and the answer is ``max_α T_α`` (0 if none)."""
    grid = np.asarray(orders, dtype=float)
    r = rdp_poisson_gaussian(sample_rate=sample_rate, noise_multiplier=noise_multiplier, orders=grid)
    conversion = np.where(grid > 1.01, np.log1p(-1 / grid) - (math.log(target_delta) + np.log(grid)) / (grid - 1), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_order = np.floor((target_epsilon - conversion) / r)
    per_order = np.where(np.isfinite(per_order) & (per_order > 0), per_order, 0)
    steps = int(per_order.max())
    # Guard against rounding at the boundary: the returned T must satisfy the target.
    while steps > 0 and epsilon_for_segments([(sample_rate, noise_multiplier, steps)], target_delta, orders)[0] > target_epsilon:
        steps -= 1
    return steps


def moments_accountant_epsilon(*, sample_rate: float, noise_multiplier: float, steps: int, delta: float,
                               max_lambda: int = MOMENTS_ACCOUNTANT_MAX_LAMBDA) -> tuple[float, int]:
    """Classic moments accountant of Abadi et al. (CCS 2016, Thm 2), integer λ = 1 … max_lambda.

    ε = min_λ (T log A_{λ+1}(q, σ) + ln(1/δ)) / λ, using the identity "Abadi's log moment at λ equals
    log A_{λ+1}" (damaskinos_dpscd.md §4.2–4.3 F2, F3). This is what the Damaskinos thesis calibrates
    DP-SCD with (Eq. 6.2, L1336–1340). Returns (ε, λ*).
    """
    _validate_rate_and_noise(float(sample_rate), float(noise_multiplier))
    lambdas = np.arange(1, max_lambda + 1)
    orders = tuple(float(lam + 1) for lam in lambdas)
    log_moments = steps * rdp_poisson_gaussian(sample_rate=sample_rate, noise_multiplier=noise_multiplier,
                                               orders=orders) * lambdas
    eps = (log_moments + math.log(1 / delta)) / lambdas
    best = int(np.argmin(eps))
    return float(eps[best]), int(lambdas[best])
