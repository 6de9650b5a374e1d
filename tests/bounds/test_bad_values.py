"""Degenerate but valid inputs get the right answer; bad values a ValueError naming the parameter (issue 17)."""

from __future__ import annotations

import math

import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from fedplan.bounds import accounting
from fedplan.bounds.sampling import chance_of_use


def test_a_record_used_with_probability_below_delta_costs_epsilon_zero():
    # 1 − (1 − 1e-12)^10 000 = 1e-8 (to 5e-17) < δ = 1e-5; RDP alone says ε = 5.2e7 here
    result = accounting.get_epsilon(delta=1e-5, sample_rate=1e-12, noise_multiplier=0.01, steps=10_000)
    assert result.epsilon == 0.0 and result.accountant == "participation" and result.bound == "upper bound"
    assert result.chance_of_use == pytest.approx(1e-8, rel=1e-7)
    assert "used at all with probability at most 1e-08 ≤ δ, so ε = 0" in result.statement()
    assert accounting.get_epsilon(delta=1e-5, sample_rate=1e-320, noise_multiplier=1, steps=10).epsilon == 0.0


def test_just_above_delta_the_accountant_answers():
    # p = 1 − (1 − 2e-9)^10 000 ≈ 2e-5 > δ: no shortcut, and ε is large at σ = 0.01
    result = accounting.get_epsilon(delta=1e-5, sample_rate=2e-9, noise_multiplier=0.01, steps=10_000)
    assert result.accountant in ("pld", "rdp") and result.epsilon > 1


@pytest.mark.parametrize("sample_rate, noise_multiplier, steps", [(1e-6, 1.0, 1), (1e-4, 0.5, 3), (0.01, 0.3, 2)])
def test_the_participation_bound_dominates_the_true_delta_at_epsilon_zero(sample_rate, noise_multiplier, steps):
    """δ(0) of the composed Poisson-subsampled Gaussian by dp-accounting (its own PLD, fine grid) never exceeds
    1 − (1 − q)^T: the (0, p) claim is sound."""
    single = pld_lib.from_gaussian_mechanism(noise_multiplier, sampling_prob=sample_rate,
                                             value_discretization_interval=1e-4, use_connect_dots=True)
    delta_at_zero = single.self_compose(steps).get_delta_for_epsilon(0.0)
    chance = chance_of_use([(sample_rate, noise_multiplier, steps)], "poisson")
    assert chance == pytest.approx(1 - (1 - sample_rate) ** steps, rel=1e-12)
    assert delta_at_zero <= chance * (1 + 1e-6)
    assert delta_at_zero > 0.05 * chance  # and is not vacuous: of the same order at these σ


def test_shuffling_uses_every_record():
    assert chance_of_use([(1e-9, 1.0, 1)], "shuffle") == 1.0


def test_calibration_says_when_the_whole_range_meets_the_target():
    result = accounting.calibrate("sample_rate", target_epsilon=100, target_delta=1e-5, noise_multiplier=5.0, steps=10)
    assert result.value == 1 and result.epsilon < 3
    assert "Every sample_rate in its range meets the target: even the end of the range, 1, spends only" in \
        result.statement()


def test_calibrating_where_only_unused_records_meet_the_target():
    # σ = 0.01: any use of a record costs ε ≫ 1, so the answer is the largest q with 1 − (1 − q)^T ≤ δ
    result = accounting.calibrate("sample_rate", target_epsilon=1, target_delta=1e-5, noise_multiplier=0.01,
                                  steps=10_000)
    largest = -math.expm1(math.log1p(-1e-5) / 10_000)  # 1.000005e-9
    assert result.epsilon == 0 and result.accountant == "participation"
    assert largest * 0.99 <= result.value <= largest


def test_a_delta_below_the_pld_tail_falls_back_to_rdp_instead_of_failing():
    result = accounting.calibrate_noise_multiplier(target_epsilon=1, target_delta=1e-100, sample_rate=0.01, steps=1000)
    assert result.accountant == "rdp" and "truncated tail mass" in result.fallback_reason
    assert accounting.get_epsilon(delta=1e-100, sample_rate=0.01, noise_multiplier=result.value, steps=1000,
                                  accountant="rdp").epsilon <= 1


@pytest.mark.parametrize("kwargs, message", [
    (dict(segments=5), "segments must be a list of (sample_rate, noise_multiplier, steps) segments; got int"),
    (dict(segments="abc"), "segments must be a list"),
    (dict(segments=[5]), "a segment must be (sample_rate, noise_multiplier, steps); got '5'"),
    (dict(segments=[None]), "a segment must be (sample_rate, noise_multiplier, steps); got 'None'"),
    (dict(sample_rate=0.01, noise_multiplier=1.0, steps=10**400), "steps must be an integer in [1, 1e+09]; got 1e+400"),
    (dict(sample_rate=10**400, noise_multiplier=1.0, steps=1),
     "sample_rate must be a real number in (0, 1]; got 1e+400"),
    (dict(sample_rate=0.01, noise_multiplier=1.0, steps=1e23), "steps must be an integer in [1, 1e+09]; got 1e+23"),
])
def test_bad_api_values_are_value_errors_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError) as failure:
        accounting.get_epsilon(delta=1e-5, **kwargs)
    assert message in str(failure.value)
