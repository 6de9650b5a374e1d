"""Privacy-loss-distribution (PLD) accounting with an adaptive discretisation.

The PLD is dp-accounting's pessimistic connect-the-dots PLD (Doroshenko et al. 2022, "Connect the dots: tighter
discrete approximations of privacy loss distributions", arXiv:2207.04380): at any spacing ``h`` it is a valid upper
bound on ε (or δ). What we add is the choice of ``h`` and three faster pieces of the arithmetic.

Spacing. dp-accounting uses a fixed ``h = 1e-4``; the discretisation error of the composed PLD grows with the number
of compositions T (anchors.md §2.3: at T = 1e5 a fixed 1e-3 is looser than RDP). Measured on the grid of anchors.md
§2.3 the error decays quadratically, ``ε(h) − ε* ≈ K h²`` with ``K ≈ κ T``, κ between 0.08 and 1.2. We use spacings
``1e-4 · 2^k`` only (:func:`on_ladder`), no coarser than 1e-4 unless the grid would exceed :data:`GRID_BUDGET` points
(large ε): grids of such spacings are nested, so our answer is never above dp-accounting's own at 1e-4. From the
pair (2h, h) Richardson control estimates K and halves h until the estimated error is below the tolerance (0.05 %
of ε, half of the 0.1 % promised). The reported number is the pessimistic PLD bound at the final spacing, never the
extrapolated value. Grids too large to build are refused (:func:`check_grid_size`; a composition's window above
:data:`MAX_COMPOSED_POINTS`).

Arithmetic (each checked against dp-accounting in tests/bounds/test_pld.py): :func:`_self_composed` composes a step
T times with dp-accounting's Chernoff window computed by products (13 ms instead of 734 ms at 2e5 points), a real FFT
and the power by squaring, in stages above 2^20 steps (docs/ERRATA.md ACC-4); :func:`epsilon_for_delta` and
:func:`delta_for_epsilon` read the composed PMF in numpy instead of a Python loop, and exactly above ε ≈ 745 where
dp-accounting's e^−loss underflows; :func:`from_masses` builds a PLD from dense arrays without a dictionary.

The single-step PLD is the Poisson-subsampled Gaussian unless the caller passes another builder
(:mod:`bounds.sampling` does, for the other samplings and neighbouring relations).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fedplan.bounds.composition import grouped_segments
from fedplan.bounds.imports import import_lazily

#: Relative accuracy the adaptive spacing aims for (the issue promises 0.1 %; half is a margin).
DEFAULT_RELATIVE_TOLERANCE = 5e-4
#: dp-accounting's default spacing. Every spacing we use is this times a power of two (:func:`on_ladder`), and no
#: coarser unless the grid at it would exceed :data:`GRID_BUDGET` points. Grids of such spacings are nested, and
#: connect-the-dots on a refined grid lies below the coarser chords (the privacy profile is convex in e^ε), which
#: composition preserves: so our answer at h ≤ 1e-4 is never above dp-accounting's own PLD at 1e-4.
REFERENCE_SPACING = 1e-4
#: Finest and coarsest spacing we use: finer costs too much memory, coarser is never accurate.
MIN_SPACING = REFERENCE_SPACING * 2.0**-7
MAX_SPACING = REFERENCE_SPACING * 2.0**9
#: Grid points we accept at the reference spacing before going coarser (a loss range wider than 50: ε above about 12
#: or σ below 0.2). Each spacing doubling halves the cost of every evaluation; the tolerance still decides whether
#: the coarser spacing is accurate enough. At q = 1.2e-4, σ = 0.0446, T = 31, δ = 1e-8 (ε ≈ 592) a budget of 2e6
#: took 3.0 s to calibrate σ and 5e5 0.6 s, and ε moved from 591.989806 to 591.989885 (+1.3e-7).
GRID_BUDGET = 5 * 10**5
#: Discretisation-error coefficient per composition used for the first guess of h (κ in K = κT).
_KAPPA_GUESS = 1.0
#: Largest PLD grid we build (a composition of this size takes seconds).
MAX_GRID_POINTS = 5 * 10**6
#: Largest composed window one FFT composes (:func:`_composed_pmfs`). A composition is wider than its step, which
#: :data:`MAX_GRID_POINTS` bounds: a step of 2.9e6 points composed 2794 times (σ = 0.017) asked for a 6.1e7-point
#: window, 3.6 GB, and ran out of memory. At this limit one side holds about six 2^23-point arrays, 0.4 GB.
MAX_COMPOSED_POINTS = 2**23


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


def grid_width(segments, epsilon_scale: float) -> float:
    """Width of the privacy-loss range a PLD of the segments spans (before dividing by the spacing).

    One step's privacy loss reaches about ``10/σ + 1/(2σ²)`` where dp-accounting truncates the noise (mass e^-50
    beyond ±10σ), and the composed distribution spans a few times ε.
    """
    widest_step = max(10 / sigma + 1 / (2 * sigma**2) + 1 for _, sigma, _ in segments)
    return max(widest_step, 4 * epsilon_scale)


def check_grid_size(segments, spacing: float, epsilon_scale: float) -> None:
    """Refuse spacings whose PLD grids would be too large to build: :class:`PLDUnavailableError` above
    :data:`MAX_GRID_POINTS` points of :func:`grid_width`."""
    points = grid_width(segments, epsilon_scale) / spacing
    if points > MAX_GRID_POINTS:
        raise PLDUnavailableError(f"PLD would need about {points:.2g} grid points at spacing {spacing:.2g} "
                                  f"(limit {MAX_GRID_POINTS:.0e})")


#: Seconds dp-accounting takes per grid point to build one subsampled-Gaussian step, at the low end of what was
#: measured (1.4e-6 to 1.2e-5 on two cores: 32 s for the 2.9e6 points of q = 1/840, σ = 0.017 at spacing 8e-4, a
#: build no deadline interrupts), so that only a build sure to overrun is refused (:func:`grid_width` can
#: overestimate the points twofold).
SECONDS_PER_STEP_POINT = 3e-6


def check_build_time(points: float) -> None:
    """Raise :class:`OutOfTimeError` before building a step's PLD of about ``points`` grid points that would end
    past the deadline of the PLD work in progress (:func:`deadline_for`): the build itself cannot be interrupted."""
    deadline = _DEADLINE.get()
    seconds = points * SECONDS_PER_STEP_POINT
    if deadline is not None and time.monotonic() + seconds > deadline:
        raise OutOfTimeError(f"one step's PLD ({points:.2g} grid points) would take about {seconds:.2g} s to build, "
                             "past the time budget")


def import_libraries() -> None:
    """Import dp-accounting's PLD modules and scipy's ``fft`` and ``signal`` (:func:`bounds.imports.import_lazily`):
    on first use, as they take about a second that RDP-only answers never need; every function here that needs them
    calls this first."""
    for name in ("dp_accounting.pld.pld_pmf", "dp_accounting.pld.privacy_loss_distribution", "scipy.fft",
                 "scipy.signal"):
        import_lazily(name)


@functools.lru_cache(maxsize=16)
def _single_step(sample_rate: float, noise_multiplier: float, spacing: float,
                 neighboring_relation: str = "add_or_remove_one"):
    """PLD of one Poisson-subsampled Gaussian step (cached: calibration of T reuses it).

    ``neighboring_relation="replace_one"`` is dp-accounting's REPLACE_ONE pair: contributions ±C, so
    two neighbours' sums differ by up to 2C. dp-accounting's PLD module is imported here, on first use:
    it pulls in ``scipy.signal`` (about a second), which RDP-only answers never need. A build that would end past
    the deadline of the work in progress is refused first (:func:`check_build_time`).
    """
    check_build_time(grid_width([(sample_rate, noise_multiplier, 1)], 0.0) / spacing)
    import_libraries()
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution.from_gaussian_mechanism(
        standard_deviation=noise_multiplier,
        sampling_prob=sample_rate,
        value_discretization_interval=spacing,
        neighboring_relation=NeighboringRelation[neighboring_relation.upper()],
    )


#: Tail mass a self-composition may leave outside its window; it is added to the mass at +∞ (dp-accounting's default).
TAIL_MASS_TRUNCATION = 1e-15
#: Orders k of the Chernoff bounds P(S ≥ u) ≤ M(λ)^T e^{−λu}, λ = ±k / (support size), k = 1…20, that choose the window
#: of a self-composition (dp-accounting's).
_CHERNOFF_ORDERS = 20


def from_masses(spacing: float, remove: tuple[int, np.ndarray, float],
                add: tuple[int, np.ndarray, float] | None = None):
    """A pessimistic dp-accounting PLD from dense arrays: each side is (index of the first mass, masses at the losses
    index × spacing, mass at +∞); ``add=None`` makes it symmetric. Dense directly: dp-accounting's
    ``create_from_rounded_probability`` goes through a dictionary of every grid point (50 ms for 3e5 points)."""
    import_libraries()
    from dp_accounting.pld.pld_pmf import DensePLDPmf
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    def side(first: int, masses: np.ndarray, infinity_mass: float):
        return DensePLDPmf(spacing, int(first), np.asarray(masses, dtype=float), float(infinity_mass), True)

    return PrivacyLossDistribution(side(*remove), None if add is None else side(*add))


#: Grids of at least this many points have their two sides (remove, add) worked on in two threads: the sides are
#: independent until ε is read, and numpy's ufuncs and scipy's FFT release the GIL (on one core the threads take
#: turns, at the cost of a thread switch).
#: At 5e5 points a side this took a one-step build from 0.15 to 0.08–0.10 s and a 24 000-step composition from
#: 0.27 to 0.10–0.17 s on two cores.
PARALLEL_FROM = 1 << 17


def both_sides(remove: Callable[[], object], add: Callable[[], object] | None, points: int) -> tuple:
    """``(remove(), add())`` (``add`` may be None: a symmetric PLD), the add side in a thread of its own while this
    one computes the remove side when ``points`` ≥ :data:`PARALLEL_FROM`. A new thread per call, not a pool: a pool's
    worker does not survive ``fork()`` (the fuzz harness's children, multiprocessing), and its queue then hangs."""
    if add is None:
        return remove(), None
    if points < PARALLEL_FROM:
        return remove(), add()
    outcome = {}

    def run_add() -> None:
        try:
            outcome["add"] = add()
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=run_add, name="fedplan-pld-side", daemon=True)
    worker.start()
    try:
        first = remove()
    finally:
        worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return first, outcome["add"]


def _self_composed(single, steps: int):
    """``single`` (a dp-accounting PLD) composed ``steps`` times, side by side (remove, add; :func:`both_sides`)."""
    import_libraries()
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    if steps == 1:
        return single
    remove, add = both_sides(
        lambda: _self_composed_pmf(single._pmf_remove, steps, TAIL_MASS_TRUNCATION),
        None if single._symmetric else lambda: _self_composed_pmf(single._pmf_add, steps, TAIL_MASS_TRUNCATION),
        single._pmf_remove.size)
    return PrivacyLossDistribution(remove, add)


#: Most compositions one spectrum power makes: z^T multiplies the spectrum's rounding error by T (a billion steps in
#: one power moved ε by 4.4e-4 relative, so 2^20 move it by about 5e-7), so longer schedules are composed in stages,
#: (PMF^1024)^(T div 1024) ∘ PMF^(T mod 1024) (docs/ERRATA.md ACC-4).
_ONE_POWER_UP_TO = 2**20
_STAGE = 1024


def _self_composed_pmf(pmf, steps: int, tail: float):
    """One side's PMF composed ``steps`` times, as dp-accounting's ``DensePLDPmf.self_compose`` does it: the window
    of indices that holds all but ``tail`` of the composed mass (Chernoff bounds), the T-th power of the spectrum,
    and the truncated mass (with what wraps around the window) moved to +∞; in stages above :data:`_ONE_POWER_UP_TO`,
    the inner stage truncating tail / (2 × blocks) so that the total stays ``tail``.

    Hand-written because the window is the cost: dp-accounting evaluates 40 moment-generating functions with
    scipy's ``logsumexp`` (90 ms of a 110 ms composition at 2e5 points); :func:`_windows` takes a few ms, the
    spectrum is a real FFT and its power is taken by squaring (:func:`_power`).
    Sparse PMFs are made dense first (dp-accounting's sparse self-composition counts ``size ** steps`` as an exact
    integer: seconds at 1e7 steps, ACC-4). tests/bounds/test_pld.py checks the result against dp-accounting's
    ``self_compose`` and, at a billion steps, against exact repeated squaring.
    """
    dense = pmf.to_dense_pmf()
    if steps > _ONE_POWER_UP_TO:
        blocks, rest = divmod(steps, _STAGE)
        staged = _self_composed_pmf(_self_composed_pmf(dense, _STAGE, tail / (2 * blocks)), blocks, tail / 2)
        return staged if rest == 0 else staged.compose(_self_composed_pmf(dense, rest, tail / 2))
    return _composed_pmfs([(dense, steps)], tail)[-1]


def _power(spectrum: np.ndarray, steps: int) -> np.ndarray:
    """``spectrum ** steps`` by repeated squaring: about 2 log2(T) complex products, 3–4× faster than numpy's complex
    power (a logarithm and an exponential per entry) at T ≤ 2^20, with the same T·ε rounding."""
    result, base = None, spectrum
    while True:
        if steps & 1:
            result = base.copy() if result is None else np.multiply(result, base, out=result)
        steps >>= 1
        if not steps:
            return result
        base = np.multiply(base, base, out=None if base is spectrum else base)


def _windows(parts: Sequence[tuple[np.ndarray, int]], tail: float) -> list[tuple[int, int]]:
    """For each prefix of the ``(probs, steps)`` parts (``probs`` composed ``steps`` times, indices 0…n−1 each; a
    composition's index is the sum of its parts'), the indices [first, last] outside which lies at most ``tail`` / 2
    of its mass on each side: u = (Σ T_j log M_j(λ) + log(2/τ)) / λ, the best over dp-accounting's orders λ = ±k/n,
    k ≤ 20, n the largest support (for one part exactly dp-accounting's window).

    M(±k/n) = Σ p_i w_i^{±k} with w_i = e^{i/n} ∈ [1, e]: one exponential per entry and then products, where
    dp-accounting takes a ``logsumexp`` per order (40 exponentials per entry); every part's masses sit in one array
    and each part's moment is one ``np.add.reduceat`` per order (a Python loop over 193 parts cost 80 ms a call).
    An order whose moment is 0 (a part with no finite mass), and every higher one, gives no bound.
    """
    sizes = np.array([probs.size for probs, _ in parts])
    steps = np.array([steps for _, steps in parts], dtype=float)
    scale = int(sizes.max())
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    masses = np.maximum(np.concatenate([probs for probs, _ in parts]), 0.0)
    indices = np.arange(masses.size) - np.repeat(starts, sizes)
    orders = np.arange(1, _CHERNOFF_ORDERS + 1)
    firsts, lasts = np.zeros(len(parts)), np.cumsum((sizes - 1) * steps)
    for sign in (1, -1):
        ratio, power = np.exp(sign * indices / scale), masses.copy()
        log_moments = np.empty((len(parts), _CHERNOFF_ORDERS))
        for order in range(_CHERNOFF_ORDERS):
            np.multiply(power, ratio, out=power)
            with np.errstate(divide="ignore"):
                log_moments[:, order] = np.log(np.add.reduceat(power, starts))
        cumulative = np.cumsum(steps[:, None] * log_moments, axis=0)
        usable = np.cumprod(np.isfinite(cumulative), axis=1).astype(bool)
        with np.errstate(invalid="ignore"):
            bounds = (cumulative + math.log(2 / tail)) / (sign * orders / scale)
        if sign > 0:
            lasts = np.minimum(lasts, np.where(usable, np.ceil(bounds), np.inf).min(axis=1))
        else:
            firsts = np.maximum(firsts, np.where(usable, np.floor(bounds), -np.inf).max(axis=1))
    return [(int(first), int(last)) for first, last in zip(firsts, lasts, strict=True)]


def _composed_pmfs(parts: Sequence[tuple[object, int]], tail: float, *, every_prefix: bool = False) -> list:
    """The composition of the ``(pmf, steps)`` parts (dp-accounting PMFs on one grid, each composed ``steps`` times)
    in one pass, or (``every_prefix``) of each prefix of them: the windows of :func:`_windows`, the running product
    of the parts' spectra raised to their steps, one inverse FFT per answer, and the mass outside the window (≤
    ``tail``, with what wraps around it) added to the mass at +∞. The total steps are at most
    :data:`_ONE_POWER_UP_TO` (the spectrum's rounding grows with the number of factors, as in one power).

    Hand-written for schedules of many distinct steps (a sample size that grows every round): dp-accounting
    composes them pairwise and truncates each result's tails in a Python loop (``_find_prefix_to_truncate``: 3.3 s
    of the 8.9 s that the default van Dijk plan's σ calibration took, 193 distinct rounds). One pass truncates once,
    so its answer is at most dp-accounting's (less mass moved to +∞) and equal to it up to rounding; tests/bounds/
    test_pld.py checks it against dp-accounting's pairwise ``compose`` and ``self_compose``.
    """
    import_libraries()
    from dp_accounting.pld.pld_pmf import DensePLDPmf
    from scipy import fft

    dense = [(pmf.to_dense_pmf(), int(steps)) for pmf, steps in parts]
    arrays = [(np.asarray(pmf._probs, dtype=float), steps) for pmf, steps in dense]
    windows = _windows(arrays, tail)
    answers = range(len(parts)) if every_prefix else [len(parts) - 1]
    points = max([windows[k][1] - windows[k][0] + 1 for k in answers] + [probs.size for probs, _ in arrays])
    if points > MAX_COMPOSED_POINTS:
        raise PLDUnavailableError(f"the composed PLD would need {points:.2g} grid points at spacing "
                                  f"{dense[0][0]._discretization:.2g} (limit {MAX_COMPOSED_POINTS:.2g})")
    size = fft.next_fast_len(points, real=True)
    spectrum, log_finite_mass, lower_loss, composed = None, 0.0, 0, []
    for k, ((pmf, steps), (probs, _), (first, last)) in enumerate(zip(dense, arrays, windows, strict=True)):
        log_finite_mass += steps * math.log1p(-pmf._infinity_mass)
        lower_loss += pmf._lower_loss * steps
        if k == 0 and steps == 1 and len(parts) == 1:
            return [pmf]
        factor = _power(fft.rfft(probs, size), steps)
        spectrum = factor if spectrum is None else np.multiply(spectrum, factor, out=spectrum)
        if k in answers:
            window = np.roll(fft.irfft(spectrum, size), -first)[:last - first + 1]
            composed.append(DensePLDPmf(pmf._discretization, lower_loss + first, window,
                                        tail - math.expm1(log_finite_mass), True))
    return composed


def composed_prefixes(segments: Sequence[tuple[float, float, int]], spacing: float,
                      single_step: Callable | None = None, *, every_prefix: bool = True) -> list:
    """The PLD after each segment of ``(sample_rate, noise_multiplier, steps)`` segments (only after the last one
    with ``every_prefix=False``), composed in order at ``spacing``: in one pass (:func:`_composed_pmfs`) up to
    :data:`_ONE_POWER_UP_TO` steps in all, segment by segment (dp-accounting's ``compose``) above.

    ``single_step(sample_rate, noise_multiplier, spacing)`` builds one step's PLD; the default is the
    Poisson-subsampled Gaussian under add/remove-one (:mod:`bounds.sampling` passes the others).
    """
    import_libraries()
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

    single_step, deadline, singles = single_step or _single_step, _DEADLINE.get(), []
    for sample_rate, noise_multiplier, steps in segments:
        check_deadline(deadline)
        singles.append((single_step(float(sample_rate), float(noise_multiplier), float(spacing)), int(steps)))
    # the spectrum's power and dp-accounting's truncation bounds underflow or overflow for a nearly noiseless step
    # (σ ≫ 1 answers tiny ε); the result is handled (a wider bound), the warning is noise
    with np.errstate(over="ignore", under="ignore"):
        if sum(steps for _, steps in singles) > _ONE_POWER_UP_TO:
            prefixes, total = [], None
            for single, steps in singles:
                check_deadline(deadline)
                part = _self_composed(single, steps)
                total = part if total is None else total.compose(part)
                prefixes.append(total)
            return prefixes if every_prefix else prefixes[-1:]
        removes, adds = both_sides(
            lambda: _composed_pmfs([(single._pmf_remove, steps) for single, steps in singles],
                                   TAIL_MASS_TRUNCATION, every_prefix=every_prefix),
            None if all(single._symmetric for single, _ in singles) else
            lambda: _composed_pmfs([(single._pmf_add, steps) for single, steps in singles],
                                   TAIL_MASS_TRUNCATION, every_prefix=every_prefix),
            max(single._pmf_remove.size for single, _ in singles))
    if adds is None:
        return [PrivacyLossDistribution(remove) for remove in removes]
    return [PrivacyLossDistribution(remove, add) for remove, add in zip(removes, adds, strict=True)]


def composed_pld(segments: Sequence[tuple[float, float, int]], spacing: float, single_step: Callable | None = None):
    """PLD of the composition of the segments at ``spacing``, identical segments composed as one
    (:func:`~fedplan.bounds.composition.grouped_segments`)."""
    return composed_prefixes(grouped_segments(segments), spacing, single_step, every_prefix=False)[-1]


def epsilon_at_spacing(segments, delta: float, spacing: float, single_step: Callable | None = None) -> float:
    """Pessimistic PLD ε of the schedule at a fixed spacing (a valid upper bound)."""
    return epsilon_for_delta(composed_pld(segments, spacing, single_step), delta)


def delta_at_spacing(segments, epsilon: float, spacing: float, single_step: Callable | None = None) -> float:
    """Pessimistic PLD δ of the schedule at a fixed spacing (a valid upper bound)."""
    return delta_for_epsilon(composed_pld(segments, spacing, single_step), epsilon)


def _pmfs(distribution) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(losses, probabilities, mass at +∞) of each side (remove, add) of a dp-accounting PLD.

    dp-accounting 0.5–0.6 (the range requirements.txt allows) keeps these in private attributes of its dense PMF and
    offers no accessor; tests/bounds/test_pld.py checks the readers below against its own methods on every side.
    """
    sides = [distribution._pmf_remove] if distribution._symmetric else [distribution._pmf_remove,
                                                                          distribution._pmf_add]
    result = []
    for side in sides:
        dense = side.to_dense_pmf()
        losses = (dense._lower_loss + np.arange(dense.size)) * dense._discretization
        # FFT composition leaves rounding noise of either sign; dropping the negative masses only raises δ(ε)
        result.append((losses, np.maximum(np.asarray(dense._probs, dtype=float), 0.0), float(dense._infinity_mass)))
    return result


def _epsilon_for_delta(losses: np.ndarray, probs: np.ndarray, infinity_mass: float, delta: float) -> float:
    """Smallest ε ≥ 0 with δ(ε) = m∞ + Σ_{l_i > ε} p_i (1 − e^{ε − l_i}) ≤ δ, for one discrete PLD on a uniform grid.

    At the loss l_j, δ(l_j) = A_j − C_j with A_j = m∞ + Σ_{i > j} p_i and C_j = Σ_{i > j} p_i e^{l_j − l_i}; C obeys
    C_j = e^{−h} (p_{j+1} + C_{j+1}), one linear filter over the reversed masses (every factor ≤ 1: nothing overflows
    or underflows at any ε). Past the last l_j with δ(l_j) > δ, δ(ε) = A_j − e^{ε − l_j} C_j, solved in closed form.
    The same answer as dp-accounting's ``get_epsilon_for_delta``, which walks the losses one by one in Python
    (0.1 s for a 10⁶-point PMF; this takes 0.01 s) and, computing e^−loss, loses C to underflow above ε ≈ 745.
    """
    import_libraries()
    from scipy import signal

    if infinity_mass > delta:
        return math.inf
    # ε ≥ 0: δ(0) ≤ δ is answered by ε = 0, and below 0 nothing is needed. And δ(ε) ≥ B(ε + log 2) / 2 with B(x) the
    # mass above x, so ε ≥ x − log 2 wherever B(x) > 2δ: only the losses from there up are read.
    start = int(np.searchsorted(losses, 0.0, side="right"))
    losses, probs = losses[start:], probs[start:]
    top_masses = np.cumsum(probs[::-1])
    crossing = int(np.searchsorted(top_masses, 2 * delta - infinity_mass, side="right"))  # B(l_j) > 2δ at j = n−2−it
    if crossing < len(probs) - 1:
        first = max(0, len(probs) - 2 - crossing - math.ceil(math.log(2) / (losses[1] - losses[0])) - 1)
        losses, probs = losses[first:], probs[first:]
    if probs.size == 0:
        return 0.0
    decay = math.exp(-(losses[1] - losses[0])) if probs.size > 1 else 0.0
    masses = probs[::-1]  # index k is the loss l_{n−1−k}
    weighted = signal.lfilter([0.0, decay], [1.0, -decay], masses)  # C at l_{n−1−k}
    above = infinity_mass + np.concatenate(([0.0], top_masses[:len(masses) - 1]))  # A: the slice kept the top
    exceeding = np.flatnonzero(above - weighted > delta)
    if exceeding.size:
        k = int(exceeding[0])
        mass, scaled, base = above[k], weighted[k], losses[-1 - k]
    else:  # ε lies below the first positive loss
        mass, scaled, base = infinity_mass + float(masses.sum()), masses[-1] + weighted[-1], losses[0]
    if mass <= delta:
        return 0.0
    if scaled <= 0:  # every mass above is too small to register: the next loss up is a valid answer
        return float(losses[min(len(losses) - 1, len(losses) - k)]) if exceeding.size else float(losses[0])
    return max(float(base + math.log((mass - delta) / scaled)), 0.0)


def _delta_for_epsilon(losses: np.ndarray, probs: np.ndarray, infinity_mass: float, epsilon: float) -> float:
    """δ(ε) = m∞ + Σ_{l_i > ε} p_i (1 − e^{ε − l_i}) of one discrete PLD (dp-accounting's formula, vectorised)."""
    above = losses > epsilon
    return float(min(infinity_mass + np.sum(probs[above] * -np.expm1(epsilon - losses[above])), 1.0))


def epsilon_for_delta(distribution, delta: float) -> float:
    """ε of a dp-accounting PLD at δ: the larger of its sides' (:func:`_epsilon_for_delta`)."""
    return max(_epsilon_for_delta(*side, delta) for side in _pmfs(distribution))


def delta_for_epsilon(distribution, epsilon: float) -> float:
    """δ of a dp-accounting PLD at ε: the larger of its sides' (:func:`_delta_for_epsilon`)."""
    return max(_delta_for_epsilon(*side, epsilon) for side in _pmfs(distribution))


def on_ladder(spacing: float) -> float:
    """The largest ``REFERENCE_SPACING · 2^k`` (k an integer) not above ``spacing``, within the allowed range."""
    steps = math.floor(math.log2(spacing / REFERENCE_SPACING) + 1e-9)
    return min(MAX_SPACING, max(MIN_SPACING, REFERENCE_SPACING * 2.0**steps))


def first_spacing(total_steps: int, epsilon_scale: float, relative_tolerance: float, segments=None,
                  capped: bool = True) -> float:
    """Spacing expected to meet the tolerance, ``κ T h² = tol · ε``, on the ladder and (``capped``) no coarser than
    the reference spacing unless the grid of ``segments`` at it, times their number of distinct segments, would
    exceed :data:`GRID_BUDGET` points (193 one-step segments at 1e-4 overran the 30 s budget of a calibration)."""
    wanted = math.sqrt(relative_tolerance * max(epsilon_scale, 1e-3) / (_KAPPA_GUESS * max(total_steps, 1)))
    coarsest = REFERENCE_SPACING if capped else MAX_SPACING
    if segments is not None:  # every distinct segment is one more composition of the whole grid
        distinct = len(grouped_segments(segments))
        coarsest = max(coarsest, grid_width(segments, epsilon_scale) * distinct / GRID_BUDGET)
    return on_ladder(min(wanted, coarsest))


def quadratic_coefficient(coarse_value: float, coarse_spacing: float, fine_value: float, fine_spacing: float) -> float:
    """``K`` of the error model ``value(h) = value* + K h²`` from two spacings (0 if the values do not decrease)."""
    return max(coarse_value - fine_value, 0.0) / (coarse_spacing**2 - fine_spacing**2)


def spacing_for_error(k_coefficient: float, allowed_error: float) -> float:
    """The ladder spacing whose modelled error ``K h²`` is at most 81 % of ``allowed_error`` (a 0.9 margin on h)."""
    return on_ladder(0.9 * math.sqrt(allowed_error / k_coefficient))


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
    ``tolerance(value)``, shrinks h along the ladder by the factor the quadratic model asks for (2, 4 or 8)
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
        next_spacing = max(MIN_SPACING, fine_spacing / 8, min(fine_spacing / 2, wanted))
        coarse, coarse_spacing = fine, fine_spacing
        fine, fine_spacing = evaluate(next_spacing), next_spacing
