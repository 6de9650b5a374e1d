"""Public accountant: ε/δ of schedules and calibration, against anchors and independent re-checks."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedplan.bounds import accounting, pld, rdp

DELTA = 1e-5


def recheck_at_half_spacing(result: accounting.CalibrationResult) -> float:
    """ε of the returned value with a finer (tighter) PLD than the one that certified it."""
    fixed = dict(result.fixed)
    fixed[result.parameter] = result.value
    segments = [(fixed["sample_rate"], fixed["noise_multiplier"], int(fixed["steps"]))]
    return pld.epsilon_at_spacing(segments, result.target_delta, result.pld_spacing / 2)


def test_reference_point_epsilon():
    result = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=DELTA)
    assert result.accountant == "pld" and result.fallback_reason is None
    assert 5.1919 <= result.epsilon <= 5.1926 * 1.001  # PRV lower bound; tight value + 0.1 %
    assert result.discretization_error <= 5e-4 * result.epsilon
    statement = result.statement()
    assert "Poisson sampling" in statement and "add/remove-one" in statement
    json.dumps(result.to_dict())


def test_printed_numbers_are_rounded_up():
    assert accounting.round_up(5.1936163) == 5.19362
    assert accounting.round_up(1.2345601e-5, 3) == 1.24e-5
    assert accounting.round_up(2.0) == 2.0
    assert accounting.round_up(1e-5, 3) == 1e-5
    assert accounting.round_up(5.1936149) == 5.19362
    result = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=DELTA)
    assert f"({accounting.round_up(result.epsilon):.6g}, 1e-05)" in result.statement()
    assert accounting.round_up(result.epsilon) >= result.epsilon


def test_rdp_accountant_option():
    result = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=DELTA, accountant="rdp")
    assert result.accountant == "rdp" and result.rdp_order == 4.7
    assert result.epsilon == pytest.approx(5.631992, abs=2e-6)


def test_segments_and_single_values_agree():
    single = accounting.get_epsilon(sample_rate=0.02, noise_multiplier=1.3, steps=3000, delta=DELTA)
    as_segments = accounting.get_epsilon(segments=[{"sample_rate": 0.02, "noise_multiplier": 1.3, "steps": 3000}],
                                         delta=DELTA)
    assert single.epsilon == as_segments.epsilon


def test_heterogeneous_schedule_against_the_anchor():
    # anchors.md §2.4: PLD(1e-4) 5.4397, RDP 5.9389.
    schedule = [(b / 60_000, 1.0, 2000) for b in (64, 128, 256, 512, 1024)]
    tight = accounting.get_epsilon(segments=schedule, delta=DELTA)
    loose = accounting.get_epsilon(segments=schedule, delta=DELTA, accountant="rdp")
    assert loose.epsilon == pytest.approx(5.9389, abs=2e-4)
    assert 5.4397 * (1 - 2e-3) <= tight.epsilon <= 5.4397 * (1 + 1e-3)
    assert tight.epsilon < loose.epsilon


def test_delta_for_epsilon():
    # anchors.md §2.2: δ at ε = 1 is 0.173 under PLD; the RDP value is 0.32709 (ERRATA ACC-1).
    tight = accounting.get_delta(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, epsilon=1.0)
    loose = accounting.get_delta(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, epsilon=1.0, accountant="rdp")
    assert tight.delta == pytest.approx(0.173, abs=1e-3)
    assert loose.delta == pytest.approx(0.32709, abs=1e-5)
    epsilon = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=DELTA).epsilon
    back = accounting.get_delta(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, epsilon=epsilon)
    assert back.delta <= DELTA * (1 + 1e-3)


@pytest.mark.parametrize("target, q, steps, anchor_sigma", [
    (1.0, 0.01, 10_000, 3.8132),   # anchors.md §2.3b, PLD 1e-4 (default bracket)
    (8.0, 0.001, 1_000, 0.3854),   # the anchors' worst case; dp-accounting stops short (ERRATA ACC-2)
    (2.0, 0.1, 100_000, 63.079),
    (1.0, 0.1, 1_000, 11.87),
])
def test_noise_calibration_grid_matches_dp_accounting(target, q, steps, anchor_sigma):
    result = accounting.calibrate_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=q,
                                                   steps=steps)
    assert result.accountant == "pld"
    assert result.value == pytest.approx(anchor_sigma, rel=5e-3)
    assert result.epsilon <= target
    assert result.epsilon >= target * (1 - 3e-4)
    assert recheck_at_half_spacing(result) <= target
    assert result.value < result.rdp_value


def test_steps_calibration_beats_the_anchor():
    # anchors.md §2.4: RDP 18 503; PLD "≈21 051", which stops short (ERRATA ACC-2).
    loose = accounting.calibrate_steps(target_epsilon=8.0, target_delta=DELTA, sample_rate=0.01, noise_multiplier=1.1,
                                       accountant="rdp")
    assert loose.value == 18_503
    tight = accounting.calibrate_steps(target_epsilon=8.0, target_delta=DELTA, sample_rate=0.01, noise_multiplier=1.1)
    assert isinstance(tight.value, int) and tight.value >= 21_051
    assert tight.epsilon <= 8.0
    one_more = pld.epsilon_at_spacing([(0.01, 1.1, tight.value + 1)], DELTA, tight.pld_spacing)
    assert one_more > 8.0  # the largest integer at this spacing
    assert recheck_at_half_spacing(tight) <= 8.0


def test_sample_rate_calibration():
    # anchors.md §2.4: max q with ε ≤ 2 (T = 1e4, σ = 1.1) is 0.0039763 under RDP.
    result = accounting.calibrate_sample_rate(target_epsilon=2.0, target_delta=DELTA, noise_multiplier=1.1,
                                              steps=10_000)
    assert 0.0039763 <= result.rdp_value <= 0.0039763 * (1 + 5e-5)  # anchor printed to 5 digits
    assert result.value > result.rdp_value
    assert result.epsilon <= 2.0
    assert recheck_at_half_spacing(result) <= 2.0


def test_sample_rate_of_one_when_the_budget_allows_it():
    result = accounting.calibrate_sample_rate(target_epsilon=50.0, target_delta=DELTA, noise_multiplier=5.0, steps=10)
    assert result.value == 1.0 and result.epsilon <= 50.0


def test_time_budget_falls_back_to_rdp_and_says_so():
    accounting.clear_cache()
    result = accounting.calibrate_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.02,
                                                   steps=5000, time_budget=1e-9)
    rdp_only = accounting.calibrate_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.02,
                                                     steps=5000, accountant="rdp")
    assert result.accountant == "rdp" and "time budget" in result.fallback_reason
    assert result.value == rdp_only.value and result.epsilon <= 2.0
    evaluation = accounting.get_epsilon(sample_rate=0.02, noise_multiplier=1.0, steps=5000, delta=DELTA,
                                        time_budget=1e-9)
    assert evaluation.accountant == "rdp" and "time budget" in evaluation.fallback_reason
    # A fallback is not memoised: with time, PLD answers.
    assert accounting.get_epsilon(sample_rate=0.02, noise_multiplier=1.0, steps=5000, delta=DELTA).accountant == "pld"


def test_answers_are_memoised():
    first = accounting.calibrate_noise_multiplier(target_epsilon=3.0, target_delta=DELTA, sample_rate=0.05, steps=2000)
    second = accounting.calibrate_noise_multiplier(target_epsilon=3.0, target_delta=DELTA, sample_rate=0.05, steps=2000)
    assert second is first


def test_calibrate_dispatch_and_json():
    result = accounting.calibrate("steps", target_epsilon=1.0, target_delta=DELTA, sample_rate=0.01,
                                  noise_multiplier=2.0, accountant="rdp")
    assert result.parameter == "steps" and isinstance(result.value, int)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["value"] == result.value and "statement" in data


def test_infeasible_target_is_a_clear_error():
    with pytest.raises(ValueError, match="target_epsilon=0.001 cannot be met: even steps=1"):
        accounting.calibrate_steps(target_epsilon=1e-3, target_delta=DELTA, sample_rate=0.5, noise_multiplier=0.5)


@settings(max_examples=25, deadline=None)
@given(target=st.floats(0.2, 20.0), q=st.floats(1e-4, 0.5), steps=st.integers(1, 100_000))
def test_rdp_noise_calibration_meets_the_target_and_is_minimal(target, q, steps):
    result = accounting.calibrate_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=q,
                                                   steps=steps, accountant="rdp")
    assert result.epsilon <= target
    assert rdp.epsilon_for_segments([(q, result.value, steps)], DELTA)[0] == result.epsilon
    if result.value * (1 - 1e-4) > accounting.NOISE_MULTIPLIER_RANGE[0]:
        assert rdp.epsilon_for_segments([(q, result.value * (1 - 1e-4), steps)], DELTA)[0] > target


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(target=st.floats(0.5, 10.0), q=st.floats(1e-3, 0.2), steps=st.integers(10, 20_000))
def test_pld_noise_calibration_meets_the_target(target, q, steps):
    result = accounting.calibrate_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=q,
                                                   steps=steps)
    assert result.epsilon <= target
    if result.accountant == "pld":
        assert recheck_at_half_spacing(result) <= target
        assert result.value <= result.rdp_value


@settings(max_examples=20, deadline=None)
@given(q=st.floats(1e-3, 0.3), sigma=st.floats(0.5, 20.0), steps=st.integers(1, 50_000), factor=st.floats(1.01, 3.0))
def test_epsilon_grows_with_steps_and_rate_and_falls_with_noise(q, sigma, steps, factor):
    def eps(**overrides):
        values = dict(sample_rate=q, noise_multiplier=sigma, steps=steps) | overrides
        return accounting.get_epsilon(delta=DELTA, accountant="rdp", **values).epsilon
    base = eps()
    assert eps(steps=math.ceil(steps * factor)) >= base
    assert eps(sample_rate=min(1.0, q * factor)) >= base
    assert eps(noise_multiplier=sigma * factor) <= base


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(q=st.floats(1e-3, 0.1), sigma=st.floats(0.7, 5.0), steps=st.integers(10, 20_000), factor=st.floats(1.05, 2.0))
def test_pld_epsilon_is_monotone_up_to_its_tolerance(q, sigma, steps, factor):
    def eps(**overrides):
        values = dict(sample_rate=q, noise_multiplier=sigma, steps=steps) | overrides
        return accounting.get_epsilon(delta=DELTA, **values).epsilon
    base = eps()
    assert eps(steps=math.ceil(steps * factor)) >= base * (1 - 1e-3)
    assert eps(noise_multiplier=sigma * factor) <= base * (1 + 1e-3)


GOOD = dict(sample_rate=0.01, noise_multiplier=1.1, steps=100, delta=DELTA)


@pytest.mark.parametrize("changes, message", [
    (dict(sample_rate=0.0), r"sample_rate must be a real number in \(0, 1\]; got 0"),
    (dict(sample_rate=1.5), r"sample_rate .* got 1.5"),
    (dict(sample_rate=float("nan")), r"sample_rate .* got nan"),
    (dict(sample_rate="0.1"), r"sample_rate must be a real number"),
    (dict(noise_multiplier=-1.0), r"noise_multiplier must be a real number in \[0.001, 1e\+08\]; got -1"),
    (dict(noise_multiplier=1e-243), r"noise_multiplier must be a real number in \[0.001, 1e\+08\]"),
    (dict(noise_multiplier=float("inf")), r"noise_multiplier"),
    (dict(noise_multiplier=1e154), r"noise_multiplier must be a real number in \[0.001, 1e\+08\]; got 1e\+154"),
    (dict(steps=1.5e154), r"steps must be an integer in \[1, 1e\+09\]; got 1.5e\+154"),
    (dict(steps=0), r"steps must be an integer in \[1, 1e\+09\]; got 0"),
    (dict(steps=2.5), r"steps must be an integer"),
    (dict(steps=True), r"steps must be an integer"),
    (dict(delta=0.0), r"delta must be a real number in \(0, 1\)"),
    (dict(delta=1.0), r"delta must be a real number in \(0, 1\)"),
    (dict(accountant="prv"), r"accountant must be one of 'pld', 'rdp'"),
    (dict(neighboring_relation="replace"), r"neighboring_relation must be one of 'add_or_remove_one', 'replace_one'"),
    (dict(sampling="uniform"), r"sampling must be one of 'poisson', 'fixed_size', 'with_replacement', 'shuffle'"),
    (dict(sampling="with_replacement", neighboring_relation="replace_one", dataset_size=100, accountant="rdp"),
     r"accountant=rdp is not available for sampling=with_replacement with neighboring_relation=replace_one; use "
     r"pld \(supported: poisson/add_or_remove_one \(pld, rdp\)"),
    (dict(sampling="with_replacement"), r"with_replacement sampling needs dataset_size"),
    (dict(sampling="poisson", neighboring_relation="replace_one", accountant="rdp"),
     r"accountant=rdp is not available for sampling=poisson with neighboring_relation=replace_one; use pld"),
    (dict(sampling="fixed_size", dataset_size=1000, sample_rate=0.0105),
     r"sample_rate × dataset_size must be a whole number .* 0.0105 × 1000 = 10.5"),
    (dict(dataset_size=0), r"dataset_size must be an integer in \[1, 1e\+12\]; got 0"),
    (dict(time_budget=0.0), r"time_budget must be a real number in \(0, inf\)"),
    (dict(segments=[(0.1, 1.0, 10)]), r"either segments or sample_rate/noise_multiplier/steps"),
])
def test_bad_inputs_name_the_parameter_and_range(changes, message):
    with pytest.raises(ValueError, match=message):
        accounting.get_epsilon(**(GOOD | changes))


def test_bad_schedules():
    with pytest.raises(ValueError, match="at least one segment"):
        accounting.get_epsilon(segments=[], delta=DELTA)
    with pytest.raises(ValueError, match="unknown keys"):
        accounting.get_epsilon(segments=[{"sample_rate": 0.1, "sigma": 1.0, "steps": 10}], delta=DELTA)
    with pytest.raises(ValueError, match=r"missing noise_multiplier, steps"):
        accounting.get_epsilon(sample_rate=0.1, delta=DELTA)
    with pytest.raises(ValueError, match=r"a segment must be \(sample_rate, noise_multiplier, steps\)"):
        accounting.get_epsilon(segments=[(0.1, 1.0)], delta=DELTA)


@pytest.mark.parametrize("function, changes, message", [
    (accounting.calibrate_noise_multiplier, dict(target_epsilon=0.0),
     r"target_epsilon must be a real number in \(0, inf\)"),
    (accounting.calibrate_noise_multiplier, dict(target_delta=2.0), r"target_delta must be a real number in \(0, 1\)"),
    (accounting.calibrate_noise_multiplier, dict(sample_rate=-0.1), r"sample_rate"),
    (accounting.calibrate_steps, dict(noise_multiplier=0.0), r"noise_multiplier"),
    (accounting.calibrate_steps, dict(max_steps=0), r"max_steps must be an integer"),
    (accounting.calibrate_sample_rate, dict(steps=-5), r"steps must be an integer"),
])
def test_bad_calibration_inputs(function, changes, message):
    base = dict(target_epsilon=1.0, target_delta=DELTA, sample_rate=0.01, noise_multiplier=1.0, steps=100)
    names = function.__code__.co_varnames[: function.__code__.co_kwonlyargcount]
    arguments = {name: value for name, value in (base | changes).items() if name in names}
    with pytest.raises(ValueError, match=message):
        function(**arguments)


@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.none(), st.booleans(), st.text(max_size=5), st.floats(allow_nan=True, allow_infinity=True),
                       st.integers(-10, 10), st.lists(st.integers(), max_size=2)))
def test_any_garbage_is_a_value_error_or_a_valid_answer(value):
    for name in ("sample_rate", "noise_multiplier", "steps", "delta"):
        try:
            result = accounting.get_epsilon(**(GOOD | {name: value}), accountant="rdp")
        except ValueError:
            continue
        assert math.isfinite(result.epsilon) and result.epsilon >= 0


def test_extreme_inputs_fall_back_instead_of_exhausting_memory():
    # 1e9 steps would need a PLD grid of ~1e8 points: RDP answers, and says why.
    result = accounting.get_epsilon(sample_rate=1e-3, noise_multiplier=1.0, steps=10**9, delta=DELTA)
    assert result.accountant == "rdp" and "grid points" in result.fallback_reason
    assert math.isfinite(result.epsilon)
    capped = accounting.calibrate_steps(target_epsilon=1.0, target_delta=DELTA, sample_rate=1e-7,
                                        noise_multiplier=5.0, max_steps=10**9)
    assert capped.value == 10**9 and capped.epsilon <= 1.0


@pytest.mark.parametrize("parameter, fixed, target", [
    # PLD/RDP = 0.0055 near the RDP answer (q = 9.8e-7): one ratio sent the start to q = 1 (1.5 s for its PLD alone)
    ("sample_rate", dict(noise_multiplier=0.5276, steps=559), 1.207),
    # and to T = 8.8e6 steps where the answer is 555
    ("steps", dict(sample_rate=3.96e-4, noise_multiplier=0.5276), 1.207),
    # the RDP answer is the participation bound (ε = 0 at q = 3.2e-10): the PLD must climb six decades
    ("sample_rate", dict(noise_multiplier=0.04467, steps=31), 591.987),
])
def test_far_rdp_answers_do_not_send_the_pld_search_to_the_end_of_the_range(monkeypatch, parameter, fixed, target):
    delta = 1e-8 if target > 100 else DELTA
    evaluated = []
    original = accounting._Problem.pld_epsilon

    def recording(self, x, spacing):
        evaluated.append((x, spacing))
        return original(self, x, spacing)

    monkeypatch.setattr(accounting._Problem, "pld_epsilon", recording)
    accounting.clear_cache()
    result = accounting.calibrate(parameter, target_epsilon=target, target_delta=delta, **fixed)
    assert result.accountant == "pld" and result.epsilon <= target
    # on the grids that cost (the fine one and twice it), never far beyond the answer, where PLDs are wide and slow;
    # a scout search on a grid 8× coarser may range further
    costly = [x for x, spacing in evaluated if spacing <= 2 * result.pld_spacing]
    assert max(costly) <= 4 * result.value and len(costly) <= 8
    assert len(evaluated) <= 20
    # the answer is the boundary: a value 1e-4 further is over the target; dp-accounting at our spacing agrees
    nudged = dict(fixed, **{parameter: result.value + 1 if parameter == "steps" else result.value * (1 + 1e-4)})
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    def dp_accounting_epsilon(q, sigma, steps):
        event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=result.pld_spacing)
        return accountant.compose(event).get_epsilon(delta)

    at_answer = dict(fixed, **{parameter: result.value})
    assert result.epsilon <= dp_accounting_epsilon(at_answer["sample_rate"], at_answer["noise_multiplier"],
                                                   at_answer["steps"]) * (1 + 1e-6)
    assert accounting.get_epsilon(delta=delta, **nudged).epsilon > target * (1 - 3e-5)


def test_a_composition_wider_than_its_limit_is_refused_before_it_is_built(monkeypatch):
    # Fuzz seed 2516577578: one step at σ = 0.017 fits the grid (2.9e6 points), but 2794 of them composed asked for
    # a 6.1e7-point window, 3.6 GB, and ran out of memory. The window is refused before its FFT, and RDP answers.
    with pytest.raises(ValueError, match=r"even sample_rate=0\.00119048 .* gives ε=5\.15121e\+06 \(RDP\)"):
        accounting.calibrate_sample_rate(target_epsilon=8.59305245450474, target_delta=0.000118114,
                                         noise_multiplier=0.0169352, steps=2794, dataset_size=840, time_budget=1)
    segments = [(0.01, 1.0, 1000)]
    window = pld.composed_pld(segments, 1e-3)._pmf_remove.size  # 20 545 points
    monkeypatch.setattr(pld, "MAX_COMPOSED_POINTS", window - 1)
    with pytest.raises(pld.PLDUnavailableError, match=re.escape(f"composed PLD would need {window:.2g} grid points")):
        pld.composed_pld(segments, 1e-3)


def test_a_with_replacement_calibration_that_cannot_fit_its_time_budget_is_refused_before_any_build(monkeypatch):
    # API fuzz (fixed seed 0, 10 inputs): Plan(sampling="with_replacement") of 193 sample sizes built PLDs for 30 s
    # and then failed. 300 rates × 5 builds × 30 ms = 45 s > 30 s: refused at once, naming what to change.
    from fedplan.bounds import sampling as sampling_module

    accounting.clear_cache()
    builds = []
    build = sampling_module._with_replacement_step
    monkeypatch.setattr(sampling_module, "_with_replacement_step", lambda *a, **k: builds.append(1) or build(*a, **k))
    phases = [(0.001 + 1e-5 * i, 3) for i in range(300)]
    refusal = (r"^with_replacement sampling has no RDP bound to fall back to, .* 300 distinct sample rates, an "
               r"estimated 45 s, over the time budget of 30 s; choose sampling poisson or fixed_size")
    with pytest.raises(ValueError, match=refusal):
        accounting.calibrate_noise_multiplier(target_epsilon=1.0, target_delta=1e-6, phases=phases,
                                              sampling="with_replacement", dataset_size=100_000, time_budget=30)
    assert not builds
    accounting.calibrate_noise_multiplier(target_epsilon=1.0, target_delta=1e-6, phases=phases[:4],
                                          sampling="with_replacement", dataset_size=100_000, time_budget=30)
    assert builds  # 4 rates fit: built and calibrated as before
