"""Adaptive PLD discretisation: error model, tightness against independent bounds, never looser than RDP."""

from __future__ import annotations

import functools
import math
import time

import mpmath
import numpy as np
import pytest

from fedplan.bounds import pld, rdp

REFERENCE = [(0.01, 1.1, 10_000)]

# σ from the PLD(1e-4) column of anchors.md §2.3 at a spread of grid points (ε_target, q, T).
GRID_SAMPLE = [
    (0.001, 0.641, 1_000), (0.001, 1.366, 100_000), (0.01, 3.813, 10_000), (0.1, 118.1, 100_000),
    (0.1, 6.39, 1_000), (0.01, 2.024, 100_000), (0.001, 0.4503, 10_000), (0.1, 19.0, 100_000),
]


def tight_estimate(segments, spacing: float) -> float:
    """Richardson-extrapolated ε from spacings h/2 and h/4: an estimate of the tight value."""
    half, quarter = (pld.epsilon_at_spacing(segments, 1e-5, spacing / k) for k in (2, 4))
    return quarter - (half - quarter) / 3


def test_discretisation_error_decays_quadratically():
    values = [pld.epsilon_at_spacing(REFERENCE, 1e-5, h) for h in (4e-3, 2e-3, 1e-3)]
    ratio = (values[0] - values[1]) / (values[1] - values[2])
    assert ratio == pytest.approx(4.0, rel=0.15)


def test_fixed_spacing_is_loose_at_many_steps():
    # ERRATA ACC-3: at q=0.1, σ=120, T=1e5 a fixed 1e-3 is looser than RDP and 1e-4 is 0.12 % loose.
    segments = [(0.1, 120.0, 100_000)]
    rdp_epsilon = rdp.epsilon_for_segments(segments, 1e-5)[0]
    assert pld.epsilon_at_spacing(segments, 1e-5, 1e-3) > rdp_epsilon
    tight = tight_estimate(segments, 5e-5)
    assert pld.epsilon_at_spacing(segments, 1e-5, 1e-4) / tight - 1 > 1e-3


def test_reference_point_is_within_the_independent_bounds():
    # anchors.md §2.2: PRV (prv_accountant, eps_error 0.001) certifies ε ≥ 5.1919; tight ε ≤ 5.1926.
    answer = pld.adaptive(lambda h: pld.epsilon_at_spacing(REFERENCE, 1e-5, h),
                          spacing=pld.first_spacing(10_000, 5.6, pld.DEFAULT_RELATIVE_TOLERANCE),
                          tolerance=lambda value: pld.DEFAULT_RELATIVE_TOLERANCE * value)
    assert 5.1919 <= answer.value <= 5.1926 * 1.001


@pytest.mark.parametrize("q, sigma, steps", GRID_SAMPLE)
def test_adaptive_spacing_is_within_a_tenth_of_a_percent(q, sigma, steps):
    segments = [(q, sigma, steps)]
    rdp_epsilon = rdp.epsilon_for_segments(segments, 1e-5)[0]
    answer = pld.adaptive(lambda h: pld.epsilon_at_spacing(segments, 1e-5, h),
                          spacing=pld.first_spacing(steps, rdp_epsilon, pld.DEFAULT_RELATIVE_TOLERANCE),
                          tolerance=lambda value: pld.DEFAULT_RELATIVE_TOLERANCE * value)
    tight = tight_estimate(segments, answer.spacing)
    assert answer.value >= tight  # a pessimistic bound cannot be below the tight value
    assert answer.value <= tight * 1.001
    assert answer.value < rdp_epsilon  # never looser than RDP


def test_heterogeneous_schedule_composes_segments():
    # anchors.md §2.4: batch sizes 64→1024 (×2) over N = 60 000, 2000 steps each, σ = 1:
    # PLD(1e-4) 5.4397, PLD(1e-3) 5.4431, RDP 5.9389.
    schedule = [(b / 60_000, 1.0, 2000) for b in (64, 128, 256, 512, 1024)]
    assert pld.epsilon_at_spacing(schedule, 1e-5, 1e-3) == pytest.approx(5.4431, abs=5e-4)
    merged_first = [(64 / 60_000, 1.0, 1000), (64 / 60_000, 1.0, 1000)] + schedule[1:]
    assert pld.epsilon_at_spacing(merged_first, 1e-5, 1e-3) == pytest.approx(
        pld.epsilon_at_spacing(schedule, 1e-5, 1e-3), rel=1e-6)


def test_delta_at_spacing_is_consistent_with_epsilon():
    epsilon = pld.epsilon_at_spacing(REFERENCE, 1e-5, 1e-3)
    assert pld.delta_at_spacing(REFERENCE, epsilon, 1e-3) == pytest.approx(1e-5, rel=1e-3)


def test_adaptive_stops_at_the_deadline():
    with pytest.raises(pld.OutOfTimeError):
        pld.adaptive(lambda h: 1.0 + h, spacing=1e-3, tolerance=lambda value: 0.0, deadline=0.0)


def test_adaptive_refines_until_the_model_error_is_small():
    calls = []

    def model(h: float) -> float:  # ε* = 2, K = 1000
        calls.append(h)
        return 2.0 + 1000 * h * h

    answer = pld.adaptive(model, spacing=1e-2, tolerance=lambda value: 1e-4 * value)
    assert answer.value - 2.0 <= 1e-4 * answer.value
    assert answer.error_estimate == pytest.approx(answer.value - 2.0, rel=1e-6)
    assert len(calls) <= 5


def dp_accounting_pld(q: float, sigma: float, spacing: float):
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                                             value_discretization_interval=spacing)


@pytest.mark.parametrize("q, sigma, steps, spacing", [
    (1e-3, 0.384, 1000, 1e-4), (2e-4, 0.6, 93_000, 1e-4), (0.5, 0.5, 10, 1e-3), (0.01, 8.0, 5000, 1e-5),
    (1.0, 2.0, 300, 1e-4)])
def test_self_composition_is_dp_accountings(q, sigma, steps, spacing):
    # Our window (Chernoff bounds by products), real FFT and power by squaring against dp-accounting's self_compose.
    single = dp_accounting_pld(q, sigma, spacing)
    ours, theirs = pld._self_composed(single, steps), single.self_compose(steps)
    for mine, reference in ((ours._pmf_remove, theirs._pmf_remove), (ours._pmf_add, theirs._pmf_add)):
        assert mine._lower_loss == reference._lower_loss and mine.size == reference.size  # the same window
        assert mine._infinity_mass == pytest.approx(reference._infinity_mass, rel=1e-12, abs=1e-30)
        assert abs(mine._probs - reference._probs).max() < 1e-13
    # the same PMFs to 1e-13 per entry; ε at δ = 1e-6 also reads the FFTs' rounding noise in the far tail, which
    # differs between a complex power and squared real spectra (1.7e-6 relative at 93 000 steps; the pessimism of
    # connect-the-dots at h = 1e-4 is about 1e-3 there)
    assert pld.epsilon_for_delta(ours, 1e-6) == pytest.approx(pld.epsilon_for_delta(theirs, 1e-6), rel=1e-5)


def test_staged_composition_equals_one_shot_and_stays_pessimistic():
    # ERRATA ACC-4: above 2^20 steps we compose (PMF^1024)^(T // 1024) ∘ PMF^(T % 1024).
    for q, sigma, steps, spacing in [(0.1, 120.0, 2_000_000, 1e-4), (0.01, 10.0, 1_100_001, 2e-4)]:
        one_shot = dp_accounting_pld(q, sigma, spacing).self_compose(steps).get_epsilon_for_delta(1e-5)
        staged = pld.epsilon_at_spacing([(q, sigma, steps)], 1e-5, spacing)
        assert one_shot * (1 - 1e-6) <= staged <= one_shot * (1 + 2e-6)


def repeated_squaring(losses_index: int, probs: np.ndarray, infinity_mass: float, steps: int, spacing: float):
    """The ``steps``-fold composition by direct convolutions (no FFT): exact up to rounding of positive sums."""
    result, first = np.array([1.0]), 0
    base, base_first = probs, losses_index
    while steps:
        if steps & 1:
            result, first = np.convolve(result, base), first + base_first
            keep = np.flatnonzero(result > 1e-40)
            result, first = result[keep[0]:keep[-1] + 1], first + keep[0]
        steps >>= 1
        if steps:
            base, base_first = np.convolve(base, base), 2 * base_first
            keep = np.flatnonzero(base > 1e-40)
            base, base_first = base[keep[0]:keep[-1] + 1], base_first + keep[0]
    return (first + np.arange(result.size)) * spacing, result


def test_a_billion_steps_of_a_tiny_sample_rate():
    # A 3-point PMF: dp-accounting's sparse self-composition would evaluate 3 ** 1e9 as an integer first, and one
    # spectrum power of 1e9 moves ε by 4.4e-4. Reference: exact repeated squaring of the same PMF.
    epsilon = pld.epsilon_at_spacing([(1e-7, 5.0, 10**9)], 1e-5, 1e-4)
    references = []
    for side in (dp_accounting_pld(1e-7, 5.0, 1e-4)._pmf_remove, dp_accounting_pld(1e-7, 5.0, 1e-4)._pmf_add):
        dense = side.to_dense_pmf()
        losses, probs = repeated_squaring(dense._lower_loss, np.asarray(dense._probs), dense._infinity_mass, 10**9,
                                          1e-4)
        infinity = -math.expm1(10**9 * math.log1p(-dense._infinity_mass))
        references.append(pld._epsilon_for_delta(losses, probs, infinity, 1e-5))
    assert max(references) == pytest.approx(0.1251267785, rel=1e-9)  # the exact value, checked by mpmath below
    assert epsilon == pytest.approx(max(references), rel=1e-7)
    assert epsilon >= max(references) * (1 - 1e-9)


def random_composed(rng):
    q, sigma = 10 ** rng.uniform(-4, 0), 10 ** rng.uniform(math.log10(0.3), math.log10(20))
    steps, spacing = int(10 ** rng.uniform(0, 4)), 10 ** rng.uniform(-4, -2)
    return pld.composed_pld([(q, sigma, steps)], spacing)


def test_vectorised_readers_are_dp_accountings():
    # ε(δ) and δ(ε) read from the composed PMFs in numpy, against dp-accounting's loops (below ε ≈ 700, where its
    # e^-loss does not underflow). Ours drops the FFT's negative rounding noise (±1e-16 per entry), which only raises
    # δ(ε): never below theirs, and equal to 1e-5 where δ ≥ 1e-8 (below, the noise floor decides the digits).
    rng = np.random.default_rng(3)
    compared = 0
    for _ in range(40):
        composed = random_composed(rng)
        delta = 10 ** rng.uniform(-10, -3)
        theirs = composed.get_epsilon_for_delta(delta)
        if not 1e-6 < theirs < 500:
            continue
        compared += 1
        ours = pld.epsilon_for_delta(composed, delta)
        assert theirs * (1 - 1e-10) <= ours <= theirs * (1 + (1e-5 if delta >= 1e-8 else 1e-3))
        epsilon = theirs * rng.uniform(0.5, 1.5)
        reference = composed.get_delta_for_epsilon(epsilon)
        if reference > 1e-8:
            assert pld.delta_for_epsilon(composed, epsilon) == pytest.approx(reference, rel=1e-5)
        assert pld.delta_for_epsilon(composed, epsilon) >= reference * (1 - 1e-10)
    assert compared >= 25


def test_epsilon_reader_keeps_its_digits_where_dp_accounting_underflows():
    # q = 0.99, σ = 0.9, 2489 steps, δ = 4.4e-5: ε ≈ 1717. dp-accounting's e^-loss underflows above 745 and it
    # returns a grid loss (1718.38); δ at our ε, summed in 40-digit mpmath, is the target.
    composed = pld.composed_pld([(0.9910681725343592, 0.9020966866853952, 2489)], 0.0016269203718726137)
    delta = 4.38783161209353e-05
    ours = pld.epsilon_for_delta(composed, delta)
    assert composed.get_epsilon_for_delta(delta) > ours * (1 + 5e-4)
    mpmath.mp.dps = 40

    def exact_delta(epsilon):
        worst = mpmath.mpf(0)
        for losses, probs, infinity in pld._pmfs(composed):
            above = losses > epsilon
            worst = max(worst, mpmath.mpf(infinity) + mpmath.fsum(
                mpmath.mpf(float(p)) * -mpmath.expm1(mpmath.mpf(epsilon) - mpmath.mpf(float(loss)))
                for p, loss in zip(probs[above], losses[above], strict=True)))
        return worst

    assert float(exact_delta(ours)) == pytest.approx(delta, rel=1e-12)
    assert exact_delta(ours * (1 - 1e-9)) > delta  # and no smaller ε meets δ


def test_spacings_are_on_the_ladder_and_never_looser_than_dp_accounting_at_its_default():
    # Spacings 1e-4 · 2^k ≤ 1e-4 refine dp-accounting's grid, so our PLD is below its own at 1e-4.
    from fedplan.bounds import accounting

    for q, sigma, steps in [(1e-3, 0.641, 1000), (0.01, 3.813, 10_000), (0.002544, 2.239, 1), (0.1, 6.39, 1000)]:
        ours = accounting.get_epsilon(delta=1e-5, sample_rate=q, noise_multiplier=sigma, steps=steps)
        assert ours.accountant == "pld"
        exponent = math.log2(ours.pld_spacing / pld.REFERENCE_SPACING)
        assert exponent == round(exponent) and exponent <= 0
        theirs = dp_accounting_pld(q, sigma, 1e-4).self_compose(steps).get_epsilon_for_delta(1e-5)
        assert ours.epsilon <= theirs * (1 + 1e-7)  # the same spacing at best: equal up to FFT rounding


def test_sides_in_two_threads_are_the_sides_in_one(monkeypatch):
    # both_sides runs the add side in a worker thread above PARALLEL_FROM points: the same arrays, bit for bit
    from fedplan.bounds import sampling

    def build():
        step = sampling._PoissonPair(3e-3, 0.4).pld(1e-4)
        return step, pld._self_composed(step, 300)

    monkeypatch.setattr(pld, "PARALLEL_FROM", 1)
    threaded = build()
    monkeypatch.setattr(pld, "PARALLEL_FROM", 10**12)
    serial = build()
    for mine, reference in zip(threaded, serial, strict=True):
        for side in ("_pmf_remove", "_pmf_add"):
            a, b = getattr(mine, side), getattr(reference, side)
            assert a._lower_loss == b._lower_loss and np.array_equal(a._probs, b._probs)
            assert a._infinity_mass == b._infinity_mass


def _dp_accounting_pairwise(segments, spacing: float, relation: str = "ADD_OR_REMOVE_ONE"):
    """The reference: dp-accounting's own PLDs, composed pairwise with its ``compose`` and ``self_compose``."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as dp_pld

    total = None
    for q, sigma, steps in segments:
        part = dp_pld.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                              value_discretization_interval=spacing,
                                              neighboring_relation=NeighboringRelation[relation])
        part = part.self_compose(steps) if steps > 1 else part
        total = part if total is None else total.compose(part)
    return total


#: A sample size that grows every round (van Dijk's schedules), a repeated segment, and a multi-step one.
GROWING = [(0.001 * (1 + k / 4), 1.3, 1) for k in range(40)] + [(0.02, 1.3, 25), (0.002, 0.9, 3)]


@pytest.mark.parametrize("relation", ["ADD_OR_REMOVE_ONE", "REPLACE_ONE"])  # asymmetric and symmetric PLDs
def test_one_pass_composition_of_distinct_segments_is_dp_accountings_pairwise(relation):
    spacing, delta = 1e-4, 1e-6
    step = functools.partial(pld._single_step, neighboring_relation=relation.lower())
    ours = pld.composed_pld(GROWING, spacing, lambda q, s, h: step(q, s, h))
    theirs = _dp_accounting_pairwise(GROWING, spacing, relation)
    ours_epsilon, theirs_epsilon = pld.epsilon_for_delta(ours, delta), theirs.get_epsilon_for_delta(delta)
    # one truncation instead of 42: never above dp-accounting's (less mass at +∞), equal up to rounding
    assert ours_epsilon <= theirs_epsilon + 1e-12
    assert ours_epsilon == pytest.approx(theirs_epsilon, rel=1e-9)
    for epsilon in (0.1, 0.5, 1.0):  # δ differs by the 41 truncations' mass at +∞ (≤ 41 × 1e-15)
        ours_delta, theirs_delta = pld.delta_for_epsilon(ours, epsilon), theirs.get_delta_for_epsilon(epsilon)
        assert theirs_delta - 5e-14 <= ours_delta <= theirs_delta + 1e-18


def test_every_prefix_of_a_one_pass_composition_is_that_prefix_composed_alone():
    spacing, delta = 2e-4, 1e-6
    prefixes = pld.composed_prefixes(GROWING, spacing)
    assert len(prefixes) == len(GROWING)
    for k in (0, 1, 7, 39, 40, 41):
        alone = _dp_accounting_pairwise(GROWING[:k + 1], spacing)
        assert pld.epsilon_for_delta(prefixes[k], delta) == pytest.approx(alone.get_epsilon_for_delta(delta),
                                                                          rel=1e-9)


def test_windows_of_one_part_are_dp_accountings_self_convolve_bounds():
    from dp_accounting.pld import common

    probs = np.asarray(pld._single_step(0.05, 0.8, 1e-3)._pmf_remove.to_dense_pmf()._probs)
    for steps in (2, 100, 5_000):
        assert pld._windows([(probs, steps)], 1e-15) == [common.compute_self_convolve_bounds(probs, steps, 1e-15)]


def test_a_step_too_slow_to_build_in_the_time_left_is_refused_before_it_is_built():
    # dp-accounting built the 2.9e6 points of q = 1/840, σ = 0.017 at spacing 8e-4 in 32 s, and nothing interrupts a
    # build: a deadline 5 s away refused it only after. Now the estimate (about 8.7 s) refuses it at once.
    start = time.monotonic()
    with pld.deadline_for(start + 5), pytest.raises(pld.OutOfTimeError, match=r"one step's PLD \(2\.9e\+06 grid"):
        pld._single_step(1 / 840, 0.0169352, 8e-4)
    assert time.monotonic() - start < 1
    with pld.deadline_for(time.monotonic() + 5):  # a step that fits in the time left is built
        assert pld._single_step(0.01, 1.0, 1e-3)._pmf_remove.size > 1000


#: A fresh interpreter in which three threads take the PLD code's first steps at once (each lazily imports a part of
#: dp-accounting and scipy); it prints what they raised.
CONCURRENT_FIRST_USE = r"""
import threading
import numpy as np
from fedplan.bounds import pld

def spectrum():
    pld.epsilon_at_spacing([(0.01, 1.0, 10)], 1e-5, 1e-3)

def masses():
    pld.epsilon_for_delta(pld.from_masses(1e-3, (0, np.array([0.5, 0.5]), 0.0)), 1e-5)

def composed():
    pld.composed_prefixes([(0.02, 1.2, 3), (0.01, 1.0, 2)], 1e-3)

raised = []
def run(function):
    try:
        function()
    except BaseException as error:
        raised.append(repr(error))

threads = [threading.Thread(target=run, args=(function,)) for function in (spectrum, masses, composed)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(raised)
"""


@pytest.mark.parametrize("attempt", range(3))
def test_first_use_from_several_threads_at_once_imports_safely(attempt):
    """Two page threads of the app planning at once on a fresh server met scipy.signal half-imported ("NameError:
    name '_signal_api' is not defined"): Python's import deadlock avoidance hands one thread a half-initialised
    module when two threads import parts of the same packages crosswise. The lazy imports of dp-accounting and
    scipy now happen under one lock (:func:`pld.import_libraries`); without it this raised every time."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", CONCURRENT_FIRST_USE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
