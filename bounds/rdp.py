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
the tests check the values against dp-accounting, 60-digit arithmetic and 40-digit quadrature.

Integer orders sum the excess ``A_α - 1`` (positive terms), so tiny values keep their digits.
Fractional orders use the *signed* series (the exact ``A_α``; dp-accounting 0.6.0 sums absolute
values, up to 15 % larger in ``log A_α``, docs/ERRATA.md ACC-1) with a stopping rule relative to
``log A_α`` (ACC-5), and report the smaller of two upper bounds: the series plus its rounding
bound and its tail bound, and the convexity chord between neighbouring integer orders. A computed ``R(α)`` is
therefore never below the true one.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from fedplan.bounds.composition import grouped_segments
from fedplan.bounds.validation import check_int, check_real

#: Default RDP orders: the grid of dp-accounting 0.6.0 and Opacus (1.1 … 10.9 by 0.1, 11 … 63,
#: and four large orders), so our RDP numbers are comparable with theirs.
RDP_ORDERS: tuple[float, ...] = tuple(
    [round(1 + x / 10, 1) for x in range(1, 100)] + [float(a) for a in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)

#: Largest moment order λ of the classic moments accountant used by Abadi et al. (2016) and
#: the Damaskinos thesis code (damaskinos_dpscd.md §4.2): λ = 1 … 128, i.e. RDP orders 2 … 129.
MOMENTS_ACCOUNTANT_MAX_LAMBDA = 128

#: Noise multipliers accepted: below 1e-3 ε is astronomically large (σ² underflows near 1e-154),
#: above 1e8 nothing is gained; no useful schedule comes near either end.
MIN_NOISE_MULTIPLIER = 1e-3
MAX_NOISE_MULTIPLIER = 1e8

_MAX_SERIES_TERMS = 2**17  # an order whose series has not converged by then gets the chord bound
_SERIES_CHUNK = 64


@functools.lru_cache(maxsize=16)
def _binomial_layout(orders: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded (orders × max α - 1) arrays of k = 2 … α, α and log C(α, k); padding has log C = -inf."""
    alphas = np.asarray(orders, dtype=float)[:, None]
    k = np.arange(2, int(max(orders)) + 1, dtype=float)[None, :]
    k, alphas = np.broadcast_arrays(k, alphas)
    with np.errstate(invalid="ignore"):
        log_binom = special.gammaln(alphas + 1) - special.gammaln(k + 1) - special.gammaln(alphas - k + 1)
    log_binom = np.where(k <= alphas, log_binom, -np.inf)
    return k.copy(), alphas.copy(), log_binom


def log_sum_exp_rows(x: np.ndarray) -> np.ndarray:
    """log Σ_j e^{x_ij} of each row (−∞ for a row of −∞), as max + log1p(Σ of the others relative to it), so the
    digits of a sum near its largest term are kept. Hand-written: scipy 1.17's ``special.logsumexp`` spends about
    700 µs per call on its array-API checks (16× this on a 2000 × 2 array), and the accountants call it per PLD
    build and per RDP curve."""
    top = np.argmax(x, axis=1)[:, None]
    peak = np.take_along_axis(x, top, axis=1)[:, 0]
    shift = np.where(np.isfinite(peak), peak, 0.0)
    others = np.exp(x - shift[:, None])
    np.put_along_axis(others, top, 0.0, axis=1)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(peak), peak + np.log1p(others.sum(axis=1)), peak)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x - 1) for x > 0 without overflow or loss of digits."""
    with np.errstate(over="ignore"):
        return np.where(x > 30, x + np.log1p(-np.exp(-np.minimum(x, 700))), np.log(np.expm1(np.minimum(x, 30))))


def _log_a_integer(q, sigma: float, orders: tuple[int, ...]) -> np.ndarray:
    """``log A_α`` for integer α ≥ 2 (damaskinos_dpscd.md §4.3 F1):
    ``A_α = Σ_k C(α,k) (1-q)^{α-k} q^k exp((k² - k) / (2σ²))``.

    Since ``Σ_k C(α,k) (1-q)^{α-k} q^k = 1`` and the k = 0, 1 terms have exponent 0, the excess
    ``A_α - 1 = Σ_{k≥2} C(α,k) (1-q)^{α-k} q^k (e^{(k²-k)/(2σ²)} - 1)`` is a sum of positive terms:
    computed in log space and added to 1 with ``log1p``, ``log A_α`` keeps its digits even at 1e-20
    (sample rates of 1e-7), where summing ``A_α`` itself would round to exactly 1. Small and large
    orders are padded separately, so the large orders (128 … 1024) do not widen every row. ``q`` may be an
    array of rates (one row each, sharing the σ-only factor: a schedule whose rate changes every round).
    """
    rates = np.atleast_1d(np.asarray(q, dtype=float))
    result = np.empty((len(rates), len(orders)))
    alphas = np.asarray(orders)
    for group in (alphas <= 64, alphas > 64):
        if not group.any():
            continue
        k, alpha, log_binom = _binomial_layout(tuple(int(a) for a in alphas[group]))
        shared = log_binom + _log_expm1((k * k - k) / (2 * sigma**2))
        for start in range(0, len(rates), _RATE_CHUNK):
            chunk = rates[start:start + _RATE_CHUNK, None, None]
            terms = shared + k * np.log(chunk) + (alpha - k) * np.log1p(-chunk)
            peak = terms.max(axis=2)
            log_excess = peak + np.log(np.exp(terms - peak[..., None]).sum(axis=2))
            result[start:start + _RATE_CHUNK, group] = np.logaddexp(0.0, log_excess)
    return result[0] if np.ndim(q) == 0 else result


#: Rates evaluated together by :func:`_log_a_integer` (bounds its memory: rates × orders × terms).
_RATE_CHUNK = 64


def _log_a_chord(q, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """Upper bound on ``log A_α`` from the integer orders around α (``q`` a rate, or one rate per order).

    ``log A_α = log E_{μ0}[e^{α log(μ/μ0)}]`` is a cumulant generating function, hence convex in α,
    with ``log A_1 = 0``; so it lies below the chord between ⌊α⌋ and ⌊α⌋ + 1.
    """
    below = np.floor(alphas)
    rates, row = np.unique(np.broadcast_to(np.asarray(q, dtype=float), alphas.shape), return_inverse=True)
    needed = tuple(sorted({int(a) for a in np.concatenate((below, below + 1)) if a >= 2}))
    known = np.zeros((rates.size, len(needed) + 1))  # column 0: log A_1 = 0
    if needed:
        known[:, 1:] = _log_a_integer(rates, sigma, needed).reshape(rates.size, len(needed))
    column = {order: index + 1 for index, order in enumerate(needed)} | {1: 0}
    low = known[row, [column[int(a)] for a in below]]
    high = known[row, [column[int(a) + 1] for a in below]]
    return (below + 1 - alphas) * low + (alphas - below) * high


def _plateau_center(q: np.ndarray, sigma: float) -> np.ndarray:
    """z0 = σ² ln(1/q − 1) + ½, where the series' terms stop falling; ln(1/q − 1) is taken as ln(1 − q) − ln q, which
    has no 1/q to overflow (at q = 5e-324)."""
    return sigma**2 * (np.log1p(-q) - np.log(q)) + 0.5


def _series_terms(q: np.ndarray, sigma: float, alphas: np.ndarray, i: np.ndarray):
    """Log-magnitudes of the two halves of the fractional-order series and the binomial sign (one row per order
    ``alphas[r]`` at rate ``q[r]``)."""
    j = alphas[:, None] - i[None, :]
    ii = np.broadcast_to(i[None, :], j.shape)
    log_binom = special.gammaln(alphas[:, None] + 1) - special.gammaln(ii + 1) - special.gammaln(j + 1)
    sign = special.gammasgn(j + 1)
    z0 = _plateau_center(q, sigma)[:, None]
    log_q, log_1mq = np.log(q)[:, None], np.log1p(-q)[:, None]
    # ½ erfc(y) = Φ(-√2 y): one log_ndtr call, so a factor ≈ 1 keeps its digits (log ½ + log 2 would not).
    s0 = log_binom + ii * log_q + j * log_1mq + (ii * ii - ii) / (2 * sigma**2) + special.log_ndtr((z0 - ii) / sigma)
    s1 = log_binom + j * log_q + ii * log_1mq + (j * j - j) / (2 * sigma**2) + special.log_ndtr((j - z0) / sigma)
    return s0, s1, sign


class _StreamingLogSum:
    """Row-wise ``log |Σ s_j e^{x_j}|`` accumulated chunk by chunk, keeping the digits of sums near 1.

    Holds, per row, the largest term seen (``peak``) and the other terms relative to it, both
    signed and in absolute value, so memory does not grow with the number of terms.
    """

    def __init__(self, rows: int):
        self.peak = np.full(rows, -np.inf)
        self.peak_sign = np.ones(rows)
        self.rest_signed = np.zeros(rows)
        self.rest_abs = np.zeros(rows)
        self.count = np.zeros(rows)

    def add(self, rows: np.ndarray, terms: np.ndarray, signs: np.ndarray) -> None:
        top = np.argmax(terms, axis=1)
        chunk_peak = terms[np.arange(rows.size), top]
        new_peak = chunk_peak > self.peak[rows]
        with np.errstate(invalid="ignore"):  # -inf - -inf where a row has no terms yet
            scale = np.where(new_peak, np.exp(np.minimum(self.peak[rows] - chunk_peak, 0.0)), 1.0)
        scale = np.where(np.isnan(scale), 0.0, scale)
        old_peak_weight = np.where(new_peak & np.isfinite(self.peak[rows]), scale, 0.0)
        self.rest_signed[rows] = self.rest_signed[rows] * scale + self.peak_sign[rows] * old_peak_weight
        self.rest_abs[rows] = self.rest_abs[rows] * scale + old_peak_weight
        self.peak[rows] = np.where(new_peak, chunk_peak, self.peak[rows])
        self.peak_sign[rows] = np.where(new_peak, signs[np.arange(rows.size), top], self.peak_sign[rows])
        scaled = np.exp(terms - self.peak[rows][:, None])
        scaled[np.arange(rows.size)[new_peak], top[new_peak]] = 0.0  # the new peak is held apart
        self.rest_signed[rows] += (signs * scaled).sum(axis=1)
        self.rest_abs[rows] += scaled.sum(axis=1)
        self.count[rows] += np.isfinite(terms).sum(axis=1)

    def rounding_bound(self) -> np.ndarray:
        """Bound on the absolute rounding error of the log of the signed sum.

        The peak's log and the final addition carry ε_mach·|peak| each; the rest, summed relative
        to the peak with pairwise sums, carries ε_mach·log2(terms)·Σ|rest|, plus ε_mach·|log term| for
        each term's own logarithm (built from pieces such as i·log q, up to ~50 in size). When
        A ≈ 1 these are small numbers (q·α), not 1, so log A ~ 1e-13 is still resolved.
        """
        log_terms = np.log2(np.maximum(self.count, 2.0))
        return np.finfo(float).eps * (2 * np.abs(self.peak) + self.rest_abs * (log_terms + 50))

    def log_signed_sum(self) -> tuple[np.ndarray, np.ndarray]:
        """(log of the signed sum, whether it is positive with a positive peak, the only case we trust)."""
        positive = (self.peak_sign > 0) & (self.rest_signed > -1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.peak + np.log1p(self.rest_signed), positive


def _log_a_fractional(q, sigma: float, alphas: np.ndarray) -> np.ndarray:
    """``log A_α`` for fractional α (``q`` a rate, or one rate per order: the orders of many segments sharing σ
    summed together, row by row as if apart) by the series of Mironov, Talwar, Zhang (2019) §3.3
    (damaskinos_dpscd.md §4.3 F5), summed with the signs of the generalised binomials.

    Stopping: dp-accounting stops once a term is below e^-30 times ``A``, but what matters is
    ``log A ≈ A - 1``, which can be 1e-13 while ``A ≈ 1`` (the rule then loses 3e-7 of it, checked
    against 40-digit quadrature). The terms fall until ``i ≈ z0 = σ² ln(1/q - 1) + 1/2``, then form
    an alternating plateau that decays polynomially (slowly when q is large and σ small). So the
    first 64 terms are always summed to estimate ``L = log A``, and the series stops at the first
    ``i > α + 1`` where both halves decrease and a bound on the rest (twice the term on the
    alternating plateau, ``10 (z0 - i + 2)`` times it before) is below ``e^-21 A L``, i.e. 1e-9 of
    ``log A``. Chunks double up to 2^17 terms (dp-accounting stops at 1000 and
    drops the order, which makes ε jump as σ changes). The result is the smaller of two upper
    bounds: the series sum plus its rounding bound and the bound on the terms it left out (when the series
    converged to a positive sum),
    and the convexity chord between the integer orders around α (:func:`_log_a_chord`), which
    takes over where ``L`` is too small for double precision (sample rates around 1e-7).
    """
    n = alphas.size
    rates = np.broadcast_to(np.asarray(q, dtype=float), alphas.shape)
    sums = _StreamingLogSum(n)
    done = np.zeros(n, dtype=bool)
    last0 = np.full(n, -np.inf)
    last1 = np.full(n, -np.inf)
    tail = np.full(n, -np.inf)  # log of the bound on the terms left out after the stop
    z0 = _plateau_center(rates, sigma)
    active = np.arange(n)
    start, chunk = 0, _SERIES_CHUNK
    while active.size and start < _MAX_SERIES_TERMS:
        i = np.arange(start, min(start + chunk, _MAX_SERIES_TERMS), dtype=float)
        s0, s1, sign = _series_terms(rates[active], sigma, alphas[active], i)
        if start > 0:
            estimate, _ = sums.log_signed_sum()
            estimate = estimate[active]
            threshold = estimate + np.log(np.maximum(estimate, 1e-300)) - 21
            previous0 = np.concatenate((last0[active, None], s0[:, :-1]), axis=1)
            previous1 = np.concatenate((last1[active, None], s1[:, :-1]), axis=1)
            # Past the plateau's start the tail alternates with shrinking terms: at most the next term
            # (2 as margin). Before it, at most (z0 - i + 2) terms no larger than this one, ×10 for the
            # small rise just after z0.
            plateau = z0[active, None]
            terms = i[None, :]
            rest_factor = np.where(terms > plateau + 2 * sigma, 2.0, 10 * (np.maximum(plateau - terms, 0) + 2))
            rest_bound = np.maximum(s0, s1) + np.log(rest_factor)
            stops = ((i[None, :] > alphas[active, None] + 1) & (s0 < previous0) & (s1 < previous1)
                     & (rest_bound < threshold[:, None]))
            hit = stops.any(axis=1)
            first_stop = np.where(hit, np.argmax(stops, axis=1), i.size - 1)
            beyond = np.arange(i.size)[None, :] > first_stop[:, None]
            s0[beyond], s1[beyond] = -np.inf, -np.inf
            tail[active[hit]] = rest_bound[hit, first_stop[hit]]
        else:
            hit = np.zeros(active.size, dtype=bool)
        sums.add(active, np.concatenate((s0, s1), axis=1), np.concatenate((sign, sign), axis=1))
        done[active[hit]] = True
        last0[active], last1[active] = s0[:, -1], s1[:, -1]
        if start == 0:  # values below what doubles resolve go to the chord bound without more terms
            estimate, _ = sums.log_signed_sum()
            unresolvable = ~(estimate[active] > 10 * sums.rounding_bound()[active])
            hit = hit | unresolvable
        active = active[~hit]
        start += i.size
        chunk *= 2
    log_signed, positive = sums.log_signed_sum()
    with np.errstate(over="ignore", invalid="ignore"):
        # log(A + rest) ≤ log A + log1p(rest / A): the stopping rule keeps rest / A below 1e-9 log A,
        # yet leaving it out put R(1.5) at q = 0.08, σ = 0.8 3.8e-10 below 50-digit quadrature.
        truncation = np.log1p(np.exp(tail - log_signed))
        series_bound = np.where(done & positive & (log_signed > 0),
                                log_signed + truncation + sums.rounding_bound(), np.inf)
    return np.minimum(series_bound, _log_a_chord(rates, sigma, alphas))


def rdp_poisson_gaussian(*, sample_rate: float, noise_multiplier: float, orders=RDP_ORDERS) -> np.ndarray:
    """One-step RDP ``R(α) = log A_α / (α - 1)`` of the Poisson-subsampled Gaussian mechanism.

    Add/remove-one neighbouring relation, L2 sensitivity 1. ``q = 1`` gives the plain Gaussian
    mechanism ``R(α) = α / (2σ²)``. Orders must be > 1.
    """
    q = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    sigma = check_real("noise_multiplier", noise_multiplier, low=MIN_NOISE_MULTIPLIER, high=MAX_NOISE_MULTIPLIER)
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


def _epsilon_per_order(r: np.ndarray, a: np.ndarray, delta: float, conversion: str) -> np.ndarray:
    """ε at each order (broadcast over leading axes of ``r``); see :func:`epsilon_from_rdp`."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if conversion == "classic":
            eps = r + math.log(1 / delta) / (a - 1)
        elif conversion == "improved":
            eps = r + np.log1p(-1 / a) - (math.log(delta) + np.log(a)) / (a - 1)
            eps = np.where(a > 1.01, eps, np.inf)
            eps = np.where(delta**2 + np.expm1(-r) > 0, 0.0, eps)
        else:
            raise ValueError(f"conversion must be one of 'improved', 'classic'; got {conversion!r}")
    return np.where(np.isnan(eps), np.inf, eps)


def epsilon_from_rdp(*, rdp, orders, delta: float, conversion: str = "improved") -> tuple[float, float]:
    """Smallest ε over the orders, with the order that attains it.

    ``conversion="improved"``: ε = R + log((α-1)/α) - (log δ + log α)/(α-1) for α > 1.01, and ε = 0
    where δ² ≥ 1 - e^{-R} (Canonne, Kamath, Steinke 2020, Prop. 12; Balle et al. 2020, Thm 21).
    ``conversion="classic"``: ε = R + log(1/δ)/(α-1) (Mironov 2017, Prop. 3).
    """
    r = np.maximum(np.asarray(rdp, dtype=float), 0.0)
    a = np.asarray(orders, dtype=float)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    eps = _epsilon_per_order(r, a, delta, conversion)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(a[best])


def epsilon_after_each_step(segments, delta: float, orders=RDP_ORDERS) -> np.ndarray:
    """RDP ε (improved conversion, integer orders of the grid) after each step of a schedule.

    Cumulative ε of a long heterogeneous schedule in one vectorised pass: the RDP of each distinct
    (q, σ) is computed once. Integer orders only, so each value is an upper bound on the full-grid ε.
    """
    grid = np.asarray(orders, dtype=float)
    integer_orders = tuple(float(a) for a in grid[grid == np.floor(grid)])
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    per_segment = {}
    rows = []
    for q, sigma, steps in segments:
        if (q, sigma) not in per_segment:
            per_segment[(q, sigma)] = rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma,
                                                           orders=integer_orders)
        rows.append(np.broadcast_to(per_segment[(q, sigma)], (int(steps), len(integer_orders))))
    cumulative = np.cumsum(np.concatenate(rows), axis=0)
    eps = _epsilon_per_order(cumulative, np.asarray(integer_orders), delta, "improved")
    return np.maximum(eps.min(axis=1), 0.0)


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
    """Σ_i T_i R_i(α) for segments ``(sample_rate, noise_multiplier, steps)`` (RDP composes additively). The orders
    of segments sharing a σ are evaluated together: integer orders by :func:`_log_a_integer` over their rates,
    fractional ones by one :func:`_log_a_fractional` over every (rate, order) pair (each row summed as if alone: the
    same numbers as segment by segment; the 193 rates of the default increasing-sizes plan, 2-3 fractional orders
    each, took 1.2 s a σ one by one)."""
    segments = grouped_segments(segments)  # a repeated (q, σ) is one term: T_i R(α) is linear in T_i
    total = np.zeros(len(orders))
    alphas = np.asarray(orders, dtype=float)
    if len(segments) < 2:
        for q, sigma, steps in segments:
            with np.errstate(over="ignore"):  # T·R(α) beyond the float range is +∞: that order certifies nothing
                total += steps * rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma, orders=orders)
        return total
    if np.any(alphas <= 1):
        raise ValueError("orders must be a one-dimensional sequence of numbers > 1")
    integer = alphas == np.floor(alphas)
    by_sigma: dict[float, list[tuple[float, int]]] = {}
    for q, sigma, steps in segments:
        check_real("sample_rate", q, low=0.0, high=1.0, low_open=True)
        check_real("noise_multiplier", sigma, low=MIN_NOISE_MULTIPLIER, high=MAX_NOISE_MULTIPLIER)
        by_sigma.setdefault(float(sigma), []).append((float(q), int(steps)))
    for sigma, group in by_sigma.items():
        rates = np.array([q for q, _ in group])
        counts = np.array([steps for _, steps in group], dtype=float)
        full = rates == 1.0
        total += counts[full].sum() * alphas / (2 * sigma**2)
        if (~full).any():
            partial = rates[~full]
            log_a = np.empty((partial.size, alphas.size))
            if integer.any():
                log_a[:, integer] = _log_a_integer(partial, sigma, tuple(int(a) for a in alphas[integer]))
            if (~integer).any():
                fractional = alphas[~integer]
                log_a[:, ~integer] = _log_a_fractional(np.repeat(partial, fractional.size), sigma, np.tile(
                    fractional, partial.size)).reshape(partial.size, fractional.size)
            with np.errstate(over="ignore"):  # T·R(α) beyond the float range is +∞: that order certifies nothing
                total += counts[~full] @ (np.maximum(log_a, 0.0) / (alphas - 1))
    return total


def _epsilon_zero_possible(segments, delta: float) -> bool:
    """Whether the KL shortcut (ε = 0) can apply at all.

    It needs δ² ≥ 1 - e^{-KL}, hence total variation < δ. One step's total variation,
    q (2Φ(1/(2σ)) - 1), is a lower bound on the composition's, so if it reaches δ the shortcut
    cannot apply and the smallest order need not be evaluated.
    """
    return max(q * (2 * special.ndtr(1 / (2 * sigma)) - 1) for q, sigma, _ in segments) < delta


def epsilon_for_segments(segments, delta: float, orders=RDP_ORDERS) -> tuple[float, float]:
    """RDP ε (improved conversion) of a composition of Poisson-subsampled Gaussian segments.

    Fractional orders are only evaluated next to the best integer order, plus the smallest order:
    the conversion's ε_α is unimodal in α except for the KL shortcut (ε = 0 where δ² ≥ 1 - e^{-R}),
    which, R being nondecreasing in α, holds first at the smallest order. Evaluating fewer orders
    can only raise the minimum, so the result is a valid bound in any case (tests check it equals
    the full-grid value).
    """
    grid = np.asarray(orders, dtype=float)
    needed = (grid == np.floor(grid)) | ((grid == grid.min()) & _epsilon_zero_possible(segments, delta))
    integer_orders = tuple(float(a) for a in grid[needed])
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
    conversion = np.where(grid > 1.01,
                          np.log1p(-1 / grid) - (math.log(target_delta) + np.log(grid)) / (grid - 1), np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # ∞ steps at an order: dropped below
        per_order = np.floor((target_epsilon - conversion) / r)
    per_order = np.where(np.isfinite(per_order) & (per_order > 0), per_order, 0)
    steps = int(per_order.max())
    # Guard against rounding at the boundary: the returned T must satisfy the target.
    def epsilon_after(t: int) -> float:
        return epsilon_for_segments([(sample_rate, noise_multiplier, t)], target_delta, orders)[0]

    while steps > 0 and epsilon_after(steps) > target_epsilon:
        steps -= 1
    return steps


def moments_accountant_epsilon(*, sample_rate: float, noise_multiplier: float, steps: int, delta: float,
                               max_lambda: int = MOMENTS_ACCOUNTANT_MAX_LAMBDA) -> tuple[float, int]:
    """Classic moments accountant of Abadi et al. (CCS 2016, Thm 2), integer λ = 1 … max_lambda.

    ε = min_λ (T log A_{λ+1}(q, σ) + ln(1/δ)) / λ, using the identity "Abadi's log moment at λ equals
    log A_{λ+1}" (damaskinos_dpscd.md §4.2–4.3 F2, F3). This is what the Damaskinos thesis calibrates
    DP-SCD with (Eq. 6.2, L1336–1340). Returns (ε, λ*).
    """
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    max_lambda = check_int("max_lambda", max_lambda, low=1)
    lambdas = np.arange(1, max_lambda + 1)
    orders = tuple(float(lam + 1) for lam in lambdas)
    log_moments = steps * rdp_poisson_gaussian(sample_rate=sample_rate, noise_multiplier=noise_multiplier,
                                               orders=orders) * lambdas
    eps = (log_moments + math.log(1 / delta)) / lambdas
    best = int(np.argmin(eps))
    return float(eps[best]), int(lambdas[best])
