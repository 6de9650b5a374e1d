"""Privacy-loss-distribution (PLD) accounting with an adaptive discretisation.

The PLD itself is dp-accounting's (pessimistic connect-the-dots, Doroshenko et al. 2022, "Connect
the dots: tighter discrete approximations of privacy loss distributions"): at any spacing ``h`` it
is a valid upper bound on ε (or δ). What we add is the choice of ``h``.

dp-accounting uses a fixed ``h = 1e-4``. The discretisation error of the composed PLD grows with
the number of compositions T (anchors.md §2.3: at T = 1e5 a fixed 1e-3 is looser than RDP).
Measured on the grid of anchors.md §2.3, the error of the connect-the-dots bound decays
quadratically, ``ε(h) - ε* ≈ K h²`` with ``K ≈ κ T`` and ``κ`` between 0.08 and 1.2. So we
choose ``h`` by Richardson control: evaluate at ``2h`` and ``h``, estimate ``K`` from the
difference, and shrink ``h`` until the estimated error of the reported value is below the
tolerance (default 0.05 % of ε, half of the 0.1 % promised). The reported number is always the
pessimistic PLD bound at the final spacing, never the extrapolated value. Grids too large to
build are refused (:func:`check_grid_size`), and very long schedules are composed in two stages
(:func:`_self_composed`, docs/ERRATA.md ACC-4).

The single-step PLD is the Poisson-subsampled Gaussian unless the caller passes another builder
(:mod:`bounds.sampling` does, for the other samplings and neighbouring relations).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fedplan.bounds.composition import grouped_segments

#: Relative accuracy the adaptive spacing aims for (the issue promises 0.1 %; half is a margin).
DEFAULT_RELATIVE_TOLERANCE = 5e-4
#: Finest and coarsest spacing we use: finer costs too much memory, coarser is never accurate.
MIN_SPACING = 1e-6
MAX_SPACING = 5e-2
#: Discretisation-error coefficient per composition used for the first guess of h (κ in K = κT).
_KAPPA_GUESS = 1.0


#: Largest PLD grid we build: dp-accounting builds a one-step PLD at roughly 6 µs per point, so
#: this keeps one evaluation to tens of seconds (the grid of anchors.md §2.3 needs < 2e5 points).
MAX_GRID_POINTS = 5 * 10**6


class PLDUnavailableError(Exception):
    """PLD cannot answer within its budget; the message says why, and the caller falls back to RDP."""


class OutOfTimeError(PLDUnavailableError):
    """The PLD computation would exceed its time budget."""


#: The deadline of the PLD work in progress (:func:`deadline_for`), checked between the segments of one composition
#: so that a schedule of thousands of distinct segments cannot overrun its time budget by a whole evaluation.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("fedplan_pld_deadline", default=None)


def check_deadline(deadline: float | None) -> None:
    """Raise :class:`OutOfTimeError` if the monotonic clock is past ``deadline``."""
    if deadline is not None and time.monotonic() > deadline:
        raise OutOfTimeError("PLD did not finish within its time budget")


@contextlib.contextmanager
def deadline_for(deadline: float | None):
    """Every composition inside the block checks ``deadline`` after each segment."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_grid_size(segments, spacing: float, epsilon_scale: float) -> None:
    """Refuse spacings whose PLD grids would be too large to build.

    One step's privacy loss reaches about ``10/σ + 1/(2σ²)`` where dp-accounting truncates the
    noise (mass e^-50 beyond ±10σ), and the composed distribution spans a few times ε; both are
    divided by the spacing. Raises :class:`PLDUnavailableError` above :data:`MAX_GRID_POINTS`.
    """
    widest_step = max(10 / sigma + 1 / (2 * sigma**2) + 1 for _, sigma, _ in segments)
    points = max(widest_step, 4 * epsilon_scale) / spacing
    if points > MAX_GRID_POINTS:
        raise PLDUnavailableError(f"PLD would need about {points:.2g} grid points at spacing {spacing:.2g} "
                                  f"(limit {MAX_GRID_POINTS:.0e})")


@functools.lru_cache(maxsize=16)
def _single_step(sample_rate: float, noise_multiplier: float, spacing: float,
                 neighboring_relation: str = "add_or_remove_one"):
    """PLD of one Poisson-subsampled Gaussian step (cached: calibration of T reuses it).

    ``neighboring_relation="replace_one"`` is dp-accounting's REPLACE_ONE pair: contributions ±C, so
    two neighbours' sums differ by up to 2C. dp-accounting's PLD module is imported here, on first use:
    it pulls in ``scipy.signal`` (about a second), which RDP-only answers never need.
    """
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=noise_multiplier,
        sampling_prob=sample_rate,
        value_discretization_interval=spacing,
        neighboring_relation=NeighboringRelation[neighboring_relation.upper()],
    )


#: Above this many steps, compose in two stages (dp-accounting's one-shot is 3× faster below it for
#: dense PMFs, and ``3 ** 2**20`` costs only ~0.06 s for sparse ones).
_STAGED_COMPOSITION_FROM = 2**20
_FIRST_STAGE = 64


def _self_composed(single, steps: int):
    """``single`` composed ``steps`` times.

    For many steps this is done in two stages, (PLD^64)^(steps // 64) then the remainder:
    dp-accounting's sparse PMF evaluates ``size ** steps`` as an exact integer before composing
    (seconds at 1e7 steps, unbounded at 1e9). The result is the same distribution. Tail mass
    truncated in the first stage is moved to infinity and then counted ``blocks`` times, so the
    first stage truncates only 1e-15 / blocks, keeping the total near dp-accounting's 1e-15.
    """
    if steps == 1:  # dp-accounting's self_compose(1) still computes its truncation bounds (≈ 20 ms)
        return single
    if steps <= _STAGED_COMPOSITION_FROM:
        return single.self_compose(steps)
    blocks, rest = divmod(steps, _FIRST_STAGE)
    result = single.self_compose(_FIRST_STAGE, tail_mass_truncation=1e-15 / blocks).self_compose(blocks)
    return result if rest == 0 else result.compose(single.self_compose(rest))


def composed_prefixes(segments: Sequence[tuple[float, float, int]], spacing: float,
                      single_step: Callable | None = None):
    """The PLD after each segment of ``(sample_rate, noise_multiplier, steps)`` segments, composed in order at
    ``spacing`` (a generator: one composition per segment, so every prefix costs what the whole schedule does).

    ``single_step(sample_rate, noise_multiplier, spacing)`` builds one step's PLD; the default is the
    Poisson-subsampled Gaussian under add/remove-one (:mod:`bounds.sampling` passes the others).
    """
    single_step = single_step or _single_step
    total, deadline = None, _DEADLINE.get()
    for sample_rate, noise_multiplier, steps in segments:
        check_deadline(deadline)
        # dp-accounting's truncation bounds take logsumexp of moment-generating terms that overflow to +inf for a
        # nearly noiseless step (σ ≫ 1 answers tiny ε); the inf is handled (a wider bound), the warning is noise
        with np.errstate(over="ignore"):
            part = _self_composed(single_step(float(sample_rate), float(noise_multiplier), float(spacing)),
                                  int(steps))
            total = part if total is None else total.compose(part)
        yield total


def composed_pld(segments: Sequence[tuple[float, float, int]], spacing: float, single_step: Callable | None = None):
    """PLD of the composition of the segments at ``spacing``, identical segments composed as one
    (:func:`~fedplan.bounds.composition.grouped_segments`)."""
    total = None
    for total in composed_prefixes(grouped_segments(segments), spacing, single_step):  # noqa: B007 (the last prefix is the answer)
        pass
    return total


def epsilon_at_spacing(segments, delta: float, spacing: float, single_step: Callable | None = None) -> float:
    """Pessimistic PLD ε of the schedule at a fixed spacing (a valid upper bound)."""
    return float(composed_pld(segments, spacing, single_step).get_epsilon_for_delta(delta))


def delta_at_spacing(segments, epsilon: float, spacing: float, single_step: Callable | None = None) -> float:
    """Pessimistic PLD δ of the schedule at a fixed spacing (a valid upper bound)."""
    return float(composed_pld(segments, spacing, single_step).get_delta_for_epsilon(epsilon))


def first_spacing(total_steps: int, epsilon_scale: float, relative_tolerance: float) -> float:
    """Spacing expected to meet the tolerance: ``κ T h² = tol · ε``, clipped to the allowed range."""
    wanted = math.sqrt(relative_tolerance * max(epsilon_scale, 1e-3) / (_KAPPA_GUESS * max(total_steps, 1)))
    return min(MAX_SPACING, max(MIN_SPACING, wanted))


def quadratic_coefficient(coarse_value: float, coarse_spacing: float, fine_value: float, fine_spacing: float) -> float:
    """``K`` of the error model ``value(h) = value* + K h²`` from two spacings (0 if the values do not decrease)."""
    return max(coarse_value - fine_value, 0.0) / (coarse_spacing**2 - fine_spacing**2)


def spacing_for_error(k_coefficient: float, allowed_error: float) -> float:
    """The spacing whose modelled error ``K h²`` is 81 % of ``allowed_error`` (a 0.9 margin on h)."""
    return 0.9 * math.sqrt(allowed_error / k_coefficient)


@dataclass(frozen=True)
class AdaptiveValue:
    """A PLD bound with the spacing that produced it and its estimated discretisation error."""

    value: float
    spacing: float
    error_estimate: float


def adaptive(
    evaluate: Callable[[float], float],
    *,
    spacing: float,
    tolerance: Callable[[float], float],
    deadline: float | None = None,
) -> AdaptiveValue:
    """Richardson-controlled refinement of ``evaluate(h)``, a pessimistic bound decreasing in h.

    Starts with the pair (2h, h); while the estimated error of the finer value exceeds
    ``tolerance(value)``, shrinks h by the factor the quadratic model asks for (between 0.1 and 0.5)
    and re-estimates from the last pair. Raises :class:`OutOfTimeError` past the deadline.
    """
    with deadline_for(deadline):
        return _adaptive(evaluate, spacing=spacing, tolerance=tolerance, deadline=deadline)


def _adaptive(evaluate, *, spacing: float, tolerance, deadline: float | None) -> AdaptiveValue:
    check_deadline(deadline)
    coarse_spacing, coarse = min(2 * spacing, MAX_SPACING), evaluate(min(2 * spacing, MAX_SPACING))
    fine_spacing = coarse_spacing / 2
    check_deadline(deadline)
    fine = evaluate(fine_spacing)
    while True:
        k_coefficient = quadratic_coefficient(coarse, coarse_spacing, fine, fine_spacing)
        error = k_coefficient * fine_spacing**2
        allowed = tolerance(fine)
        if error <= allowed or fine_spacing <= MIN_SPACING or not math.isfinite(fine):
            return AdaptiveValue(value=fine, spacing=fine_spacing, error_estimate=error)
        check_deadline(deadline)
        wanted = spacing_for_error(k_coefficient, allowed)
        next_spacing = max(MIN_SPACING, min(0.5 * fine_spacing, max(0.1 * fine_spacing, wanted)))
        coarse, coarse_spacing = fine, fine_spacing
        fine, fine_spacing = evaluate(next_spacing), next_spacing
