"""Sample-size sequences, round step sizes and convergence rates of van Dijk et al.

van Dijk et al., "Asynchronous Federated Learning with Reduced Number of Rounds and with Differential
Privacy from Less Aggregated Gaussian Noise" (paper text ``vandijk_async_fl_dp.txt``; line numbers
``L…`` refer to it, erratum numbers ``I-…`` to §8 of ``specs/vandijk_async_fl_dp.md``).

* Increasing sample sizes: the DP power sequence ``s_{i,c} = ⌈N_c q (i+m)^p⌉`` (L191, L217),
  Lemma 1's sequence from a delay function τ (L446-454) and Theorem 5's ``i/ln i`` recipe (L749).
* Property (3)/(4), ``τ(Σ_{j≤i} s_j) ≥ Σ_{j=i-d}^{i} s_j`` for ``i ≥ d+1`` (L135, L430), checked on a
  realised sequence.
* Round step sizes from per-iteration step sizes: Lemma 2 (L514-532) and Theorem 5 (L767, L783).
* Convergence rates for strongly convex objectives: Lemma 3 (L725), Theorem 5 (L771, L791), the lower
  bound (L773) and the maximal constant sample size of C.2.1 (L693).

Rounds are numbered ``i = 0, 1, …`` and a list of sizes holds rounds ``0 … T-1`` (I-18). Sample sizes
use a tolerant ceiling, ``⌈x − 1e-9·max(1, |x|)⌉``, so that a product that is an integer up to rounding
(``N_c q m = 16.000000000000004`` in Example 1) is not pushed to the next integer (spec §9.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from fedplan.bounds.references import cite
from fedplan.bounds.theorem import VARIANTS, Hypothesis, TheoremResult, hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real

MAX_ROUNDS = 10**7
"""Longest sequence any function here builds; longer requests raise ``ValueError``."""

_CEIL_TOLERANCE = 1e-9
_FIRST_CHUNK = 1024
_GAMMA_GRID_POINTS = 1024
_DIFFERENCE_STEP = 1e-6  # relative step of the central difference for γ'
_ELASTICITY_TOLERANCE = 1e-6  # slack allowed to the finite-difference elasticity z γ'(z) / γ(z)
_THEOREM5_A0 = 12.0  # a_0 of Lemma 2 in Theorem 5 (L753); the step sizes carry an extra 1/μ
_THEOREM5_RATE_ALPHA = 36.0  # α = a_1 = 3 a_0 in Theorem 5's rate (L753, L771)
_LEMMA3_MIN_ALPHA = 12.0  # 12 ≤ α_t ≤ α (L725)


@dataclass(frozen=True)
class Lemma1Sequence(TheoremResult):
    """Lemma 1's sample sizes ``s_i`` with the smallest admissible ``M_0``, ``M_1`` and γ's checked hypotheses.

    :meth:`tau` is the delay function ``τ(x) = M_1 + ((x+M_0)/γ(x+M_0))^{1/g}`` (L448) for which the
    sizes satisfy property (4).
    """

    sizes: np.ndarray
    M0: float
    M1: float
    gamma: Callable
    g: float
    variant: str
    source: str
    notes: tuple[str, ...]

    def tau(self, x):
        """``τ(x) = M_1 + ((x+M_0)/γ(x+M_0))^{1/g}`` (vandijk L448), elementwise for ``x ≥ 0``."""
        shifted = _nonnegative_values("x", x) + self.M0
        return self.M1 + (shifted / _evaluate(self.gamma, shifted)) ** (1.0 / self.g)

    def to_dict(self) -> dict:
        """The contract's mapping with the sizes as a list and γ by its name (a callable is not data)."""
        return super().to_dict() | {"sizes": self.sizes.tolist(),
                                    "gamma": getattr(self.gamma, "__qualname__", repr(self.gamma))}


@dataclass(frozen=True)
class RoundStepSizes(TheoremResult):
    """Round step sizes ``η̄_i`` (one per round), the constant ``a_1`` and Lemma 2's checked hypotheses."""

    step_sizes: np.ndarray
    a1: float
    variant: str
    source: str
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return super().to_dict() | {"step_sizes": self.step_sizes.tolist()}


@dataclass(frozen=True)
class RateBound(TheoremResult):
    """An upper bound ``value`` on ``E‖w_t − w_*‖²`` and the hypotheses it was derived under (``variant`` None:
    no variants). ``notes`` name the errata (docs/ERRATA.md) behind what cannot be checked."""

    value: float
    source: str
    notes: tuple[str, ...]


#: The condition t ≥ T_0 that no function here can check (Leblond et al.'s Δ is undefined in the paper).
_T0_NOTE = ("I-13: the bound holds for t >= T_0, and T_0 depends on Leblond et al.'s sparsity Delta, which the "
            "paper never defines (L715): t >= T_0 is not checked")


def _tolerant_ceil(values: np.ndarray) -> np.ndarray:
    """``⌈x − 1e-9·max(1, |x|)⌉`` as floats (spec §9.2); non-finite values stay non-finite."""
    return np.ceil(values - _CEIL_TOLERANCE * np.maximum(1.0, np.abs(values)))


def _frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


def _evaluate(function: Callable, points: np.ndarray) -> np.ndarray:
    """``function(points)`` as a float array of the same shape (a constant function may return a scalar)."""
    return np.broadcast_to(np.asarray(function(points), dtype=float), points.shape)


def _callable(name: str, value: object) -> Callable:
    if not callable(value):
        raise ValueError(f"{name} must be a callable that accepts a numpy array; got {value!r}")
    return value


def _nonnegative_values(name: str, value: object) -> np.ndarray:
    """``value`` (a number or array-like) as a float array of finite numbers ``≥ 0``, or ``ValueError``."""
    try:
        values = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be real numbers in [0, inf); got {value!r}") from None
    if values.size and not (np.all(np.isfinite(values)) and values.min() >= 0):
        worst = values[~(np.isfinite(values) & (values >= 0))].flat[0]
        raise ValueError(f"{name} must be real numbers in [0, inf); got {worst:g}")
    return values


def _sample_sizes(sizes: object) -> np.ndarray:
    """``sizes`` as a non-empty 1-D int64 array of integers ``≥ 1``, or ``ValueError``."""
    allowed = "a non-empty 1-D sequence of integers >= 1"
    try:
        values = np.asarray(sizes, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"sizes must be {allowed}; got {sizes!r}") from None
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"sizes must be {allowed}; got shape {values.shape}")
    bad = ~(np.isfinite(values) & (values >= 1) & (values == np.round(values)))
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(f"sizes must be {allowed}; got sizes[{index}] = {values[index]:g}")
    return values.astype(np.int64)


def _rounds(rounds: object) -> int:
    return check_int("rounds", rounds, low=1, high=MAX_ROUNDS)


def _variant(variant: object) -> str:
    return check_choice("variant", variant, VARIANTS)


def rounds_for_total(*, sizes, total: int) -> int:
    """Realised number of rounds: the smallest ``T`` with ``Σ_{i<T} s_i ≥ total`` (spec TV-9, I-33).

    ``total`` is the gradient budget ``K`` in the units of ``sizes``: per client for ``s_{i,c}`` (DP theorems,
    L191), summed over clients for ``s_i`` (Theorem 2, L153); see I-44. Raises ``ValueError`` when the sizes
    add up to less than ``total``.
    """
    sizes = _sample_sizes(sizes)
    total = check_int("total", total, low=1)
    cumulative = np.cumsum(sizes)
    if cumulative[-1] < total:
        raise ValueError(f"total must be at most the sum of sizes ({int(cumulative[-1])}); got {total}")
    return int(np.searchsorted(cumulative, total)) + 1


def power_sequence(
    *,
    client_size: int,
    sample_rate: float,
    offset: float,
    exponent: float,
    total: int | None = None,
    rounds: int | None = None,
) -> np.ndarray:
    """Client sample sizes ``s_{i,c} = ⌈N_c q (i+m)^p⌉`` for ``i = 0, 1, …`` (vandijk L191, L217).

    Parameters
    ----------
    client_size : ``N_c``, the client's number of examples.
    sample_rate : ``q``, so that ``q_i = s_{i,c}/N_c ≈ q (i+m)^p``.
    offset : ``m ≥ 0`` (real, e.g. ``m = s_{0,c}/(N_c q)``); must be ``> 0`` when ``exponent > 0``,
        since otherwise ``s_0 = 0`` (I-35).
    exponent : ``p ≥ 0``.
    total : stop at the first ``T`` with ``Σ_{i<T} s_{i,c} ≥ total`` (the per-client budget ``K``, I-44).
    rounds : or return exactly this many rounds. Give exactly one of ``total`` and ``rounds``.

    The ceiling is tolerant (module docstring). Every ``s_{i,c}`` must be ``≤ N_c`` (``q_i ≤ 1``), and at most
    :data:`MAX_ROUNDS` rounds are built; otherwise ``ValueError``.
    """
    client_size = check_int("client_size", client_size, low=1)
    sample_rate = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
    offset = check_real("offset", offset, low=0.0)
    exponent = check_real("exponent", exponent, low=0.0)
    if (total is None) == (rounds is None):
        raise ValueError(f"exactly one of total and rounds must be given; got total={total!r}, rounds={rounds!r}")
    if exponent > 0 and offset == 0:
        raise ValueError("offset must be > 0 when exponent > 0 (s_0 = ceil(N_c q 0^p) = 0, vandijk I-35); got 0")
    scale = client_size * sample_rate

    def sizes_at(rounds_index):
        return _tolerant_ceil(scale * (rounds_index + offset) ** exponent)

    if rounds is not None:
        sizes = sizes_at(np.arange(_rounds(rounds)))
    else:
        total = check_int("total", total, low=1)
        count = _FIRST_CHUNK
        sizes = sizes_at(np.arange(count))
        while sizes.sum() < total:
            # The sizes are nondecreasing: MAX_ROUNDS rounds hold at most MAX_ROUNDS·s_{MAX_ROUNDS−1} iterations.
            if count == MAX_ROUNDS or MAX_ROUNDS * sizes_at(MAX_ROUNDS - 1) < total:
                raise ValueError(f"total needs more than {MAX_ROUNDS} rounds with these sizes; got {total}")
            count = min(2 * count, MAX_ROUNDS)
            sizes = sizes_at(np.arange(count))
        sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), total)) + 1]
    too_large = np.flatnonzero(sizes > client_size)
    if too_large.size:
        index = int(too_large[0])
        raise ValueError(
            f"sample_rate·(i + offset)^exponent must be <= 1 in every round; at round i={index} it is "
            f"{sample_rate * (index + offset) ** exponent:g} (s_i = {sizes[index]:g} > client_size = {client_size})"
        )
    return sizes.astype(np.int64)


def _gamma_hypotheses(gamma: Callable, derivative: Callable | None, g: float, arguments: np.ndarray):
    """γ ≥ 1, γ' ≥ 0 and γ ≥ zγ'g/(g−1) (L446) on a geometric grid spanning ``arguments``.

    The last two are checked through the elasticity ``e(z) = zγ'(z)/γ(z)``: with γ > 0 they read
    ``e ≥ 0`` and ``e ≤ (g−1)/g``. γ' is ``derivative`` or a central difference.
    """
    grid = np.geomspace(arguments.min(), arguments.max(), _GAMMA_GRID_POINTS)
    values = _evaluate(gamma, grid)
    if derivative is None:
        upper = _evaluate(gamma, grid * (1 + _DIFFERENCE_STEP))
        lower = _evaluate(gamma, grid * (1 - _DIFFERENCE_STEP))
        slopes = (upper - lower) / (2 * _DIFFERENCE_STEP * grid)
    else:
        slopes = _evaluate(derivative, grid)
    with np.errstate(all="ignore"):
        elasticity = grid * slopes / values
    where = f" for z in [{grid[0]:.6g}, {grid[-1]:.6g}]"
    source = "vandijk Lemma 1, L446"
    return (
        hypothesis("γ(z) >= 1" + where, float(values.min()), ">=", 1.0, source),
        hypothesis("γ'(z) >= 0, as z·γ'(z)/γ(z) >= 0 (finite-difference slack 1e-6)" + where,
                   float(elasticity.min()), ">=", -_ELASTICITY_TOLERANCE, source),
        hypothesis("γ(z) >= z·γ'(z)·g/(g−1), as z·γ'(z)/γ(z) <= (g−1)/g (slack 1e-6)" + where,
                   float(elasticity.max()), "<=", (g - 1) / g + _ELASTICITY_TOLERANCE, source),
    )


def lemma1_sequence(
    *,
    gamma: Callable,
    g: float,
    d: int,
    m: int,
    rounds: int,
    gamma_derivative: Callable | None = None,
    variant: str = "corrected",
) -> Lemma1Sequence:
    """Lemma 1's increasing sample sizes for the delay function ``τ(x) = M_1 + ((x+M_0)/γ(x+M_0))^{1/g}``.

    vandijk Lemma 1, L446-454: ``s_i = ⌈S((m+i+1)/(d+1))/(d+1)⌉`` with ``S(x) = (x(g−1)/(g ω(x)))^{1/(g−1)}``
    satisfies property (4) for ``M_0 ≥ ((m+1)(g−1)/g)^{g/(g−1)}`` and ``M_1 ≥ d+1``; the result carries these
    smallest values. ``variant="corrected"`` uses ``ω(x) = γ((x(g−1)/g)^{g/(g−1)})``, the form the proof needs
    (L506); ``"paper"`` the printed ``ω(x) = γ((x/g)^{g/(g−1)})`` (L452). They agree for ``g = 2`` (I-7).

    ``gamma`` (and ``gamma_derivative``, if given; else a central difference is used) must accept numpy
    arrays. γ's hypotheses (γ ≥ 1, γ' ≥ 0, γ ≥ zγ'g/(g−1)) are checked on a grid spanning the arguments
    at which this sequence and its τ evaluate γ: ω's arguments and ``M_0 + Σ_{j≤i} s_j`` (cf. I-10).
    Raises ``ValueError`` when γ is not positive and finite at ω's arguments (no sizes exist there).
    """
    gamma = _callable("gamma", gamma)
    if gamma_derivative is not None:
        gamma_derivative = _callable("gamma_derivative", gamma_derivative)
    g = check_real("g", g, low=1.0, low_open=True)
    d = check_int("d", d, low=0)
    m = check_int("m", m, low=0)
    rounds = _rounds(rounds)
    variant = _variant(variant)
    x = (m + 1 + np.arange(rounds)) / (d + 1)
    omega_scale = (g - 1) / g if variant == "corrected" else 1 / g
    omega_arguments = (x * omega_scale) ** (g / (g - 1))
    omega = _evaluate(gamma, omega_arguments)
    invalid = np.flatnonzero(~(np.isfinite(omega) & (omega > 0)))
    if invalid.size:
        i = int(invalid[0])
        raise ValueError(
            f"gamma must be positive and finite at ω's arguments; got γ({omega_arguments[i]:g}) = {omega[i]:g} "
            f"(round i={i})"
        )
    sizes = _tolerant_ceil((x * (g - 1) / (g * omega)) ** (1 / (g - 1)) / (d + 1))
    if not np.all(np.isfinite(sizes)):
        raise ValueError(f"g must keep S(x) finite for these rounds (try g further from 1); got {g:g}")
    sizes = sizes.astype(np.int64)
    M0 = ((m + 1) * (g - 1) / g) ** (g / (g - 1))
    arguments = np.concatenate((omega_arguments, M0 + np.cumsum(sizes)))
    hypotheses = _gamma_hypotheses(gamma, gamma_derivative, g, arguments)
    if variant == "paper":
        hypotheses += (Hypothesis("g = 2 (printed ω agrees with the proof's, vandijk I-7)", g == 2, f"g = {g:g}",
                                  "vandijk L452, L506"),)
    return Lemma1Sequence(
        sizes=_frozen(sizes),
        M0=M0,
        M1=float(d + 1),
        gamma=gamma,
        g=g,
        variant=variant,
        source=cite("vandijk", "Lemma 1 (ω: L452, proof L506)", "L446-454"),
        notes=("I-7: ω(x) = γ((x(g−1)/g)^{g/(g−1)}) as the proof needs (L506)" if variant == "corrected"
               else "I-7: the printed ω(x) = γ((x/g)^{g/(g−1)}) (L452), which the proof covers only for g = 2",),
        hypotheses=hypotheses,
    )


def property4_violations(*, tau: Callable, sizes, d: int) -> list[int]:
    """Rounds ``i ≥ d+1`` where property (3)/(4) fails: ``τ(Σ_{j≤i} s_j) < Σ_{j=i−d}^{i} s_j`` (vandijk L135, L430).

    ``tau`` must accept a numpy array of iteration counts. An empty list means the property holds on ``sizes``.
    """
    tau = _callable("tau", tau)
    sizes = _sample_sizes(sizes)
    d = check_int("d", d, low=0)
    cumulative = np.cumsum(sizes)
    window_sums = cumulative[d + 1 :] - cumulative[: cumulative.size - d - 1]
    delays = _evaluate(tau, cumulative[d + 1 :].astype(float))
    return (np.flatnonzero(delays < window_sums) + d + 1).tolist()


def _a1_factor(*, m: int, g: float, exponent: float, variant: str) -> float:
    """``a_1/a_0 = max{3, 1 + ((m+2)/(m+1))^{1/(g−1)}}^q`` (proof, L545) or the printed
    ``max{3, (1 + (m+2)/(m+1))^{1/(g−1)}}^q`` (L524) for ``variant="paper"`` (I-8)."""
    ratio = (m + 2) / (m + 1)
    growth = 1 + ratio ** (1 / (g - 1)) if variant == "corrected" else (1 + ratio) ** (1 / (g - 1))
    return max(3.0, growth) ** exponent


def round_step_sizes(
    *,
    sizes,
    E: Callable,
    a0: float,
    exponent: float,
    m: int,
    g: float,
    variant: str = "corrected",
) -> RoundStepSizes:
    """Lemma 2's round step sizes ``η̄_i = a_0/(Σ_{j<i} s_j + Ē_{i−1})^q`` (vandijk L514-532).

    ``Ē_i = E(Σ_{j≤i} s_j)`` and ``Ē_{−1} = E(0)``; ``exponent`` is the paper's ``q`` (not the DP sampling
    ratio, I-8). ``m`` and ``g`` are those of the Lemma 1 sequence and only enter ``a_1`` (see
    :func:`_a1_factor` for the two variants). ``E`` must accept a numpy array of iteration counts and return
    positive finite values (else ``ValueError``).

    Checked hypotheses: ``E_t ≥ 1`` and ``E`` nondecreasing (L514), ``Ē_i ≤ 2Ē_{i−1}`` and
    ``s_0 − 1 ≤ E_0`` (L520), and that ``α_t = η̄_i (t+E_t)^q`` lies in ``[a_0, a_1]`` for every ``t`` of
    every round (L528). For nondecreasing ``E``, ``t + E_t`` increases within a round, so ``α_t`` goes from
    ``a_0`` at the round's first iteration to its maximum at the last; ``α_t`` is therefore evaluated at the
    last iteration of each round, and ``E`` is evaluated (and its monotonicity checked) at the first and
    last iteration of every round.
    """
    sizes = _sample_sizes(sizes)
    E = _callable("E", E)
    a0 = check_real("a0", a0, low=0.0, low_open=True)
    exponent = check_real("exponent", exponent, low=0.0)
    m = check_int("m", m, low=0)
    g = check_real("g", g, low=1.0, low_open=True)
    variant = _variant(variant)
    a1_factor = _a1_factor(m=m, g=g, exponent=exponent, variant=variant)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    points = np.unique(np.concatenate((starts, ends - 1, ends)))
    E_values = _evaluate(E, points.astype(float))
    invalid = np.flatnonzero(~(np.isfinite(E_values) & (E_values > 0)))
    if invalid.size:
        index = int(invalid[0])
        raise ValueError(f"E must return positive finite values; got E({points[index]}) = {E_values[index]:g}")

    def E_at(t: np.ndarray) -> np.ndarray:
        return E_values[np.searchsorted(points, t)]

    E_before = E_at(starts)  # Ē_{i−1}
    step_sizes = a0 / (starts + E_before) ** exponent
    alpha_over_a0 = ((ends - 1 + E_at(ends - 1)) / (starts + E_before)) ** exponent
    smallest_step = float(np.diff(E_values).min()) if E_values.size > 1 else 0.0
    hypotheses = (
        hypothesis("E_t >= 1", float(E_values.min()), ">=", 1.0, "vandijk Lemma 2, L514"),
        hypothesis("E_t nondecreasing (smallest step between evaluated t)", smallest_step, ">=", 0.0,
                   "vandijk Lemma 2, L514"),
        hypothesis("Ē_i <= 2·Ē_{i−1} (largest ratio)", float((E_at(ends) / E_before).max()), "<=", 2.0,
                   "vandijk Lemma 2, L520"),
        hypothesis("s_0 − 1 <= E_0", float(sizes[0] - 1), "<=", float(E_values[0]), "vandijk Lemma 2, L520"),
        hypothesis("α_t >= a_0 (smallest α_t/a_0)", float(alpha_over_a0.min()), ">=", 1.0,
                   "vandijk Lemma 2, L526-528"),
        hypothesis("α_t <= a_1 (largest α_t/a_0 vs a_1/a_0)", float(alpha_over_a0.max()), "<=", a1_factor,
                   "vandijk Lemma 2, L524-528"),
    )
    return RoundStepSizes(
        step_sizes=_frozen(step_sizes),
        a1=a0 * a1_factor,
        variant=variant,
        source=cite("vandijk", "Lemma 2 (a_1: L524 vs proof L545)", "L514-532"),
        notes=("I-8: a_1 from the proof (L545)" if variant == "corrected" else "I-8: a_1 as printed (L524)",),
        hypotheses=hypotheses,
    )


def _theorem5_offset(*, d: int, m: int) -> tuple[int, int]:
    """Validated ``(d, m)`` with ``(m+1)/(2(d+1)) > 1``, i.e. ``m ≥ 2d+2``, which Theorem 5's ``ln`` needs (L749)."""
    d = check_int("d", d, low=0)
    return d, check_int("m", m, low=2 * d + 2)


def _theorem5_sizes(d: int, m: int, rounds: int) -> np.ndarray:
    x = m + 1 + np.arange(rounds, dtype=float)
    return _tolerant_ceil(x / (16 * (d + 1) ** 2) / np.log(x / (2 * (d + 1)))).astype(np.int64)


def theorem5_sequence(*, d: int, m: int, rounds: int) -> np.ndarray:
    """Theorem 5's sizes ``s_i = ⌈(m+i+1)/(16(d+1)²)/ln((m+i+1)/(2(d+1)))⌉ = Θ(i/ln i)`` (vandijk L749, L779).

    Lemma 1 with ``g = 2`` and ``γ(z) = 4 ln z`` (L727). Requires ``m ≥ 2d+2`` so that ``(m+1)/(2(d+1)) > 1``.
    The paper's example "``s_0 = 50`` for ``m = 2(d+1)·1450``" (L751) is wrong (I-9): see
    :func:`smallest_offset_for_first_size`.
    """
    d, m = _theorem5_offset(d=d, m=m)
    return _theorem5_sizes(d, m, _rounds(rounds))


def smallest_offset_for_first_size(*, d: int, target: int) -> int:
    """Smallest ``m`` for which Theorem 5's first size ``s_0`` equals ``target`` (vandijk L749, I-9).

    ``f(x) = x/(16(d+1)²ln(x/(2(d+1))))`` is below 1 from the first admissible ``x = m+1 = 2d+3`` to its
    minimum at ``x = 2e(d+1)`` and increases after it by less than ``1/(64(d+1)²)`` per unit of ``x``, so
    ``s_0 = ⌈f(m+1)⌉`` is nondecreasing in ``m`` and takes every integer value: bisection finds it.
    """
    d = check_int("d", d, low=0)
    target = check_int("target", target, low=1, high=MAX_ROUNDS)

    def first_size(m: int) -> int:
        return int(_theorem5_sizes(d, m, 1)[0])

    low = 2 * d + 2  # s_0 = 1 here
    if first_size(low) >= target:
        return low
    high = 2 * low
    while first_size(high) < target:
        low, high = high, 2 * high
    while high - low > 1:  # first_size(low) < target <= first_size(high)
        middle = (low + high) // 2
        low, high = (low, middle) if first_size(middle) >= target else (middle, high)
    return high


def theorem5_M0(*, m: int) -> float:
    """``M_0 = ((m+1)(g−1)/g)^{g/(g−1)} = (m+1)²/4`` for ``g = 2`` (vandijk L733)."""
    m = check_int("m", m, low=0)
    return (m + 1) ** 2 / 4


def theorem5_M1(*, d: int, L: float, alpha: float, mu: float, m: int) -> float:
    """``M_1 = max{d+1, 2Lα/μ, s_0/2}`` with Theorem 5's first size ``s_0`` (vandijk L729, L787)."""
    d, m = _theorem5_offset(d=d, m=m)
    L = check_real("L", L, low=0.0, low_open=True)
    alpha = check_real("alpha", alpha, low=0.0, low_open=True)
    mu = check_real("mu", mu, low=0.0, low_open=True)
    return float(max(d + 1, 2 * L * alpha / mu, _theorem5_sizes(d, m, 1)[0] / 2))


def theorem5_tau(*, t, M0: float, M1: float):
    """Theorem 5's delay function ``τ(t) = M_1 + sqrt((t+M_0)/(4 ln(t+M_0)))`` (vandijk L737).

    ``t`` may be a number or an array (``≥ 0``); the result has the same shape. Requires ``M_0 > 1``.
    """
    values = _nonnegative_values("t", t)
    M0 = check_real("M0", M0, low=1.0, low_open=True)
    M1 = check_real("M1", M1, low=0.0)
    shifted = values + M0
    delays = M1 + np.sqrt(shifted / (4 * np.log(shifted)))
    return float(delays) if delays.ndim == 0 else delays


def theorem5_round_step_sizes(*, mu: float, d: int, m: int, L: float, alpha: float, rounds: int) -> RoundStepSizes:
    """Theorem 5's round step sizes (vandijk L767, L783)

    ``η̄_i = (12/μ)/(Σ_{j<i}s_j + 2M_1 + sqrt((M_0+Σ_{j<i}s_j)/ln(M_0+Σ_{j<i}s_j)))``,

    i.e. Lemma 2 with ``a_0 = 12/μ``, ``q = 1``, ``g = 2`` and ``E_t = 2τ(t)`` (L745-765), whose hypotheses
    the result carries, plus Lemma 3's ``α_t ≤ α`` in the form ``μ·a_1 ≤ α`` (L725, L753).
    """
    d, m = _theorem5_offset(d=d, m=m)
    mu = check_real("mu", mu, low=0.0, low_open=True)
    alpha = check_real("alpha", alpha, low=0.0, low_open=True)
    M0 = theorem5_M0(m=m)
    M1 = theorem5_M1(d=d, L=L, alpha=alpha, mu=mu, m=m)
    lemma2 = round_step_sizes(
        sizes=theorem5_sequence(d=d, m=m, rounds=rounds),
        E=lambda t: 2 * theorem5_tau(t=t, M0=M0, M1=M1),
        a0=_THEOREM5_A0 / mu,
        exponent=1.0,
        m=m,
        g=2.0,
    )
    largest_alpha = _THEOREM5_A0 * _a1_factor(m=m, g=2.0, exponent=1.0, variant="corrected")
    lemma3 = hypothesis("μ·a_1 <= α (Lemma 3: α_t <= α)", largest_alpha, "<=", alpha, "vandijk L725, L753")
    return replace(
        lemma2,
        source=cite("vandijk", "Theorem 5 (Lemma 2 with a_0 = 12/μ, E_t = 2τ(t), L745-765)", "L767, L783"),
        hypotheses=lemma2.hypotheses + (lemma3,),
    )


def theorem5_rate_bound(*, t: float, N: float, mu: float, M0: float, M1: float) -> RateBound:
    """Theorem 5's bound ``8·36²N/μ² · t/(t + 2M_1 + sqrt((M_0+t)/ln(M_0+t)) − 1)²`` (vandijk L771, L791).

    It holds for ``t ≥ T_0``; ``T_0`` depends on Leblond et al.'s sparsity Δ, which the paper does not define
    (L715, I-13), so only the condition ``t ≥ max{M_0, e²}`` under which τ meets Lemma 3's delay bound (L739)
    is checked. The printed ``(1/t)(1 − O(1/t))`` is really ``1 − O(1/sqrt(t ln t))`` (I-11).
    """
    t = check_real("t", t, low=1.0)
    N = check_real("N", N, low=0.0)
    mu = check_real("mu", mu, low=0.0, low_open=True)
    M0 = check_real("M0", M0, low=1.0, low_open=True)
    M1 = check_real("M1", M1, low=0.0)
    denominator = t + 2 * M1 + math.sqrt((M0 + t) / math.log(M0 + t)) - 1
    value = 8 * _THEOREM5_RATE_ALPHA**2 * N / mu**2 * t / denominator**2
    large_t = hypothesis("t >= max{M_0, e²}", t, ">=", max(M0, math.e**2), "vandijk L739")
    notes = (_T0_NOTE, "I-11: the printed rate (1/t)(1 − O(1/t)) is (1/t)(1 − O(1/sqrt(t ln t))) (L771, L791)")
    return RateBound(value=value, source=cite("vandijk", "Theorem 5", "L771, L791"), notes=notes,
                     hypotheses=(large_t,))


def lower_bound_rate(*, t: float, N: float, mu: float) -> float:
    """Leading term ``N/(2μ²t)`` of the lower bound on ``E‖w_t − w_*‖²`` (Nguyen et al. 2019b; vandijk L773).

    The paper's factor ``1 − O(ln t/t)`` is dropped.
    """
    t = check_real("t", t, low=1.0)
    N = check_real("N", N, low=0.0)
    mu = check_real("mu", mu, low=0.0, low_open=True)
    return N / (2 * mu**2 * t)


def delay_envelope(*, t: float) -> float:
    """Largest delay Lemma 3 allows, ``sqrt(t/ln t · (1 − 1/ln t))`` for ``t > e`` (vandijk L725, (14) L707)."""
    t = check_real("t", t, low=math.e, low_open=True)
    log_t = math.log(t)
    return math.sqrt(t / log_t * (1 - 1 / log_t))


def lemma3_rate_bound(*, t: float, alpha: float, N: float, mu: float, tau_t: float, L: float) -> RateBound:
    """Lemma 3's bound ``8α²N/μ² · t/(t + 2max{τ(t), 2Lα/μ} − 1)²`` (vandijk L725).

    ``tau_t`` is the delay ``τ(t)``. Checked: ``α ≥ 12`` (step sizes with ``12 ≤ α_t ≤ α``) and
    ``τ(t) ≤ sqrt(t/ln t·(1 − 1/ln t))`` (L725, (14) L707). The bound holds for ``t ≥ T_0``, which cannot be
    evaluated (L715, I-13).
    """
    t = check_real("t", t, low=1.0)
    alpha = check_real("alpha", alpha, low=0.0, low_open=True)
    N = check_real("N", N, low=0.0)
    mu = check_real("mu", mu, low=0.0, low_open=True)
    tau_t = check_real("tau_t", tau_t, low=0.0)
    L = check_real("L", L, low=0.0, low_open=True)
    value = 8 * alpha**2 * N / mu**2 * t / (t + 2 * max(tau_t, 2 * L * alpha / mu) - 1) ** 2
    delay_name = "τ(t) <= sqrt(t/ln t·(1 − 1/ln t))"
    if t > math.e:
        delay = hypothesis(delay_name, tau_t, "<=", delay_envelope(t=t), "vandijk L725, L707")
    else:
        delay = Hypothesis(delay_name, False, f"the bound needs t > e; t = {t:g}", "vandijk L725, L707")
    step = hypothesis("α >= 12 (12 <= α_t <= α)", alpha, ">=", _LEMMA3_MIN_ALPHA, "vandijk L725")
    return RateBound(value=value, source=cite("vandijk", "Lemma 3", "L725"), notes=(_T0_NOTE,),
                     hypotheses=(step, delay))


def max_constant_sample_size(*, step_size: float, mu: float, d: int) -> float:
    """Largest constant sample size ``s ≤ 1/(ημ(d+1))`` for a constant step size η (vandijk C.2.1, L693).

    From the delay bound ``τ ≤ 1/(ημ)`` (13), L683, with ``τ = (d+1)s``; L155's "``a/(Lμ^{(d+1)})``" is a garbled
    form of the same bound (I-12). A real number; the largest admissible integer size is its floor.
    """
    step_size = check_real("step_size", step_size, low=0.0, low_open=True)
    mu = check_real("mu", mu, low=0.0, low_open=True)
    d = check_int("d", d, low=0)
    return 1 / (step_size * mu * (d + 1))


def constant_size_rounds(*, total_iterations: int, clients: int, sample_size: int) -> int:
    """Rounds ``⌈total/(clients·sample size)⌉`` with a constant per-client sample size (vandijk Table 3, L1873-1874)."""
    total_iterations = check_int("total_iterations", total_iterations, low=1)
    clients = check_int("clients", clients, low=1)
    sample_size = check_int("sample_size", sample_size, low=1)
    return -(-total_iterations // (clients * sample_size))
