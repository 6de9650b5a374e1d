"""Adaptive PLD discretisation: error model, tightness against independent bounds, never looser than RDP."""

from __future__ import annotations

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


def test_staged_composition_equals_one_shot_and_stays_pessimistic():
    # ERRATA ACC-4: many steps are composed as (PLD^64)^(T // 64) ∘ PLD^(T % 64).
    from dp_accounting.pld import privacy_loss_distribution

    for q, sigma, steps, spacing in [(0.1, 120.0, 2_000_000, 1e-4), (0.01, 10.0, 1_100_001, 2e-4)]:
        one_shot = privacy_loss_distribution.from_gaussian_mechanism(
            standard_deviation=sigma, sampling_prob=q, value_discretization_interval=spacing,
        ).self_compose(steps).get_epsilon_for_delta(1e-5)
        staged = pld.epsilon_at_spacing([(q, sigma, steps)], 1e-5, spacing)
        # equal to floating-point noise: dp-accounting 0.6 makes δ(ε) monotone (np.minimum.accumulate) before it
        # searches ε, which moves the two by up to 1.3e-7 relative either way (0.5 gave staged ≥ one-shot exactly)
        assert one_shot * (1 - 1e-6) <= staged <= one_shot * (1 + 2e-6)


def test_a_billion_steps_of_a_tiny_sample_rate():
    # A 3-point sparse PMF: dp-accounting alone would evaluate 3 ** 1e9 as an integer first.
    # Staged differently by hand, (PLD^1000)^(10^6), the distribution must be the same.
    from dp_accounting.pld import privacy_loss_distribution

    epsilon = pld.epsilon_at_spacing([(1e-7, 5.0, 10**9)], 1e-5, 1e-4)
    single = privacy_loss_distribution.from_gaussian_mechanism(standard_deviation=5.0, sampling_prob=1e-7,
                                                               value_discretization_interval=1e-4)
    by_hand = single.self_compose(1000, tail_mass_truncation=1e-21).self_compose(10**6)
    by_hand = by_hand.get_epsilon_for_delta(1e-5)
    assert epsilon == pytest.approx(by_hand, rel=2e-5)  # tail-truncation bookkeeping differs at 1e-6
