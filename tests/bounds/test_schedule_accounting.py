"""Multi-phase schedules: one σ calibrated over phases of different sample rates, and ε after each phase.

References are dp-accounting's own PLD accountant at a finer discretisation (an independent composition path).
"""

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

from fedplan.bounds import accounting

PHASES = [(0.001, 100), (0.002, 100), (0.004, 100)]
DELTA = 1e-6


def reference_epsilon(phases, sigma, delta=DELTA):
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    for q, steps in phases:
        accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    return accountant.get_epsilon(delta)


def test_one_noise_multiplier_over_phases_meets_the_target_within_one_percent():
    result = accounting.calibrate_noise_multiplier(target_epsilon=1.0, target_delta=DELTA, phases=PHASES)
    reference = reference_epsilon(PHASES, result.value)
    assert result.accountant == "pld"
    assert result.epsilon <= 1.0 and reference <= 1.0
    assert reference >= 0.99  # spends the budget: less than 1 % unused
    assert result.epsilon == pytest.approx(reference, rel=1e-3)
    # a 1 % smaller σ overspends: the answer is the smallest σ, not just a safe one
    assert accounting.get_epsilon(delta=DELTA, segments=[(q, result.value * 0.99, t) for q, t in PHASES]).epsilon > 1
    assert result.fixed == {"phases": 3, "steps": 300, "first_sample_rate": 0.001, "last_sample_rate": 0.004}


def test_one_phase_is_the_single_rate_calibration():
    single = accounting.calibrate_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, sample_rate=0.01, steps=500)
    phased = accounting.calibrate_noise_multiplier(target_epsilon=2.0, target_delta=1e-5, phases=[(0.01, 200),
                                                                                                   (0.01, 300)])
    assert phased.value == single.value and phased.fixed == single.fixed


@pytest.mark.parametrize("arguments", [
    {"phases": [(0.01, 10)], "sample_rate": 0.01},
    {"phases": []},
    {"phases": [(0.01,)]},
    {"phases": 5},
    {"sample_rate": 0.01},
])
def test_bad_phases_are_refused(arguments):
    with pytest.raises(ValueError, match="phases|sample_rate"):
        accounting.calibrate_noise_multiplier(target_epsilon=1.0, target_delta=1e-6, **arguments)


def test_different_phases_are_not_confused_by_the_memo():
    first = accounting.calibrate_noise_multiplier(target_epsilon=1.0, target_delta=DELTA,
                                                  phases=[(0.001, 100), (0.003, 100), (0.004, 100)])
    second = accounting.calibrate_noise_multiplier(target_epsilon=1.0, target_delta=DELTA,
                                                   phases=[(0.001, 100), (0.002, 100), (0.004, 100)])
    assert first.fixed == second.fixed and first.value > second.value


@pytest.mark.parametrize("options", [{}, {"sampling": "fixed_size", "dataset_size": 10_000}, {"accountant": "rdp"},
                                     {"sampling": "shuffle"}])
def test_epsilon_after_each_segment_matches_each_prefix(options):
    segments = [(q, 0.8, steps) for q, steps in PHASES]
    whole, after = accounting.epsilon_after_each_segment(delta=DELTA, segments=segments, **options)
    assert after[-1] == whole.epsilon and len(after) == 3
    assert after == sorted(after)
    for end in (1, 2):
        alone = accounting.get_epsilon(delta=DELTA, segments=segments[:end], **options).epsilon
        assert after[end - 1] == pytest.approx(alone, rel=2e-3)


def test_epsilon_after_each_segment_is_an_upper_bound_of_the_finer_reference():
    segments = [(q, 0.8, steps) for q, steps in PHASES]
    _, after = accounting.epsilon_after_each_segment(delta=DELTA, segments=segments)
    for end in (2, 3):
        reference = reference_epsilon(PHASES[:end], 0.8)
        assert reference * (1 - 1e-4) <= after[end - 1] <= reference * 1.005
