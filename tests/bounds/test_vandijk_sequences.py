"""Sample-size sequences, round step sizes and rates of van Dijk et al. (spec TV-7, TV-8, TV-9, §4.2-4.5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedplan.bounds.theorem import all_hold
from fedplan.bounds.vandijk_sequences import (
    MAX_ROUNDS,
    constant_size_rounds,
    delay_envelope,
    lemma1_sequence,
    lemma3_rate_bound,
    lower_bound_rate,
    max_constant_sample_size,
    power_sequence,
    property4_violations,
    round_step_sizes,
    rounds_for_total,
    smallest_offset_for_first_size,
    theorem5_M0,
    theorem5_M1,
    theorem5_rate_bound,
    theorem5_round_step_sizes,
    theorem5_sequence,
    theorem5_tau,
)


def four_log(z):
    return 4 * np.log(z)


def by_name(hypotheses, fragment):
    (found,) = [item for item in hypotheses if fragment in item.name]
    return found


# --- power sequence (L191, L217; spec TV-9, §9.2) -------------------------------------------------------------


def test_power_sequence_matches_a_plain_loop():
    client_size, sample_rate, offset, exponent = 7000, 0.000123456789, 37.3, 0.7
    expected, cumulative = [], 0
    while cumulative < 5000:
        size = math.ceil(client_size * sample_rate * (len(expected) + offset) ** exponent)
        expected.append(size)
        cumulative += size
    sizes = power_sequence(client_size=client_size, sample_rate=sample_rate, offset=offset, exponent=exponent,
                           total=5000)
    assert sizes.tolist() == expected
    assert rounds_for_total(sizes=sizes, total=5000) == len(expected)
    assert power_sequence(client_size=client_size, sample_rate=sample_rate, offset=offset, exponent=exponent,
                          rounds=10).tolist() == expected[:10]


def test_tolerant_ceil_keeps_example1_first_size_at_16():
    # N_c q m = 16.000000000000004 in Example 1, pass 1 (spec §9.2); a plain ceil gives 17.
    client_size, sample_rate, offset = 50_000, 6.7222222222222222e-8, 4760.330578512398
    assert math.ceil(client_size * sample_rate * offset) == 17
    sizes = power_sequence(client_size=client_size, sample_rate=sample_rate, offset=offset, exponent=1, rounds=2)
    assert sizes.tolist() == [16, 17]


def test_example3_realised_sequence_has_183_rounds_from_16_to_257():
    sizes = power_sequence(client_size=10_000, sample_rate=0.00013216327772100012, offset=12.106237281566509,
                           exponent=1, total=25_000)
    assert (len(sizes), sizes[0], sizes[-1]) == (183, 16, 257)
    assert sizes[:-1].sum() < 25_000 <= sizes.sum()


def test_constant_sizes_need_total_over_size_rounds():
    sizes = power_sequence(client_size=10_000, sample_rate=0.0016, offset=0, exponent=0, total=25_000)
    assert sizes.tolist() == [16] * 1563


def test_power_sequence_rejects_a_sample_rate_above_one_in_some_round():
    with pytest.raises(ValueError, match=r"sample_rate.*round i=100.*client_size = 100"):
        power_sequence(client_size=100, sample_rate=0.01, offset=1, exponent=1, total=10**6)


@pytest.mark.parametrize(
    ("arguments", "pattern"),
    [
        ({"total": 100, "rounds": 5}, "exactly one of total and rounds"),
        ({}, "exactly one of total and rounds"),
        ({"rounds": MAX_ROUNDS + 1}, "rounds must be an integer"),
        ({"total": 0}, "total must be an integer"),
        ({"total": MAX_ROUNDS + 1, "sample_rate": 1.0, "client_size": 1, "exponent": 0}, "total needs more than"),
        ({"rounds": 3, "offset": 0.0}, "offset must be > 0 when exponent > 0"),
        ({"rounds": 3, "sample_rate": 1.5}, "sample_rate must be a real number in"),
        ({"rounds": 3, "exponent": -1}, "exponent must be a real number in"),
    ],
)
def test_power_sequence_rejects_bad_inputs_by_name(arguments, pattern):
    base = {"client_size": 1000, "sample_rate": 0.001, "offset": 2.0, "exponent": 1.0}
    with pytest.raises(ValueError, match=pattern):
        power_sequence(**(base | arguments))


def test_rounds_for_total_rejects_a_total_beyond_the_sizes():
    with pytest.raises(ValueError, match="total must be at most the sum of sizes"):
        rounds_for_total(sizes=[1, 2, 3], total=7)
    with pytest.raises(ValueError, match=r"sizes must be .*sizes\[1\] = 0"):
        rounds_for_total(sizes=[1, 0, 3], total=2)


# --- Theorem 5 / Theorem 2 (L727-795; spec TV-7) --------------------------------------------------------------


@pytest.mark.parametrize(("d", "first_size"), [(0, 25), (1, 13)])
def test_paper_offset_2_d_plus_1_times_1450_gives_half_of_50(d, first_size):
    # L751 claims s_0 = 50; the formula gives 25 and 13 (erratum I-9).
    assert theorem5_sequence(d=d, m=2 * (d + 1) * 1450, rounds=1)[0] == first_size


@pytest.mark.parametrize(("d", "offset"), [(0, 6317), (1, 27735)])
def test_smallest_offset_with_first_size_50(d, offset):
    assert smallest_offset_for_first_size(d=d, target=50) == offset
    assert theorem5_sequence(d=d, m=offset, rounds=1)[0] == 50
    assert theorem5_sequence(d=d, m=offset - 1, rounds=1)[0] == 49


def test_smallest_offset_for_size_one_is_the_first_admissible_offset():
    assert smallest_offset_for_first_size(d=3, target=1) == 8
    assert theorem5_sequence(d=3, m=8, rounds=1)[0] == 1


def test_theorem5_regression_vectors_d1_m5800():
    d, m, L, alpha, mu = 1, 5800, 1.0, 36.0, 0.01
    M0 = theorem5_M0(m=m)
    M1 = theorem5_M1(d=d, L=L, alpha=alpha, mu=mu, m=m)
    assert (M0, M1) == (8_412_900.25, 7200.0)
    assert theorem5_sequence(d=d, m=m, rounds=5).tolist() == [13] * 5
    steps = theorem5_round_step_sizes(mu=mu, d=d, m=m, L=L, alpha=alpha, rounds=50)
    assert steps.step_sizes[:2] == pytest.approx([0.0793317, 0.0792635], abs=5e-8)
    assert steps.a1 == pytest.approx(36 / mu)


def test_theorem5_step_sizes_follow_the_printed_closed_form():
    d, m, L, alpha, mu = 2, 4000, 2.0, 36.0, 0.05
    M0 = (m + 1) ** 2 / 4
    M1 = theorem5_M1(d=d, L=L, alpha=alpha, mu=mu, m=m)
    sizes = theorem5_sequence(d=d, m=m, rounds=200)
    done, expected = 0, []
    for size in sizes:  # L767
        expected.append(12 / mu / (done + 2 * M1 + math.sqrt((M0 + done) / math.log(M0 + done))))
        done += int(size)
    steps = theorem5_round_step_sizes(mu=mu, d=d, m=m, L=L, alpha=alpha, rounds=200)
    np.testing.assert_allclose(steps.step_sizes, expected, rtol=1e-13)


def test_theorem5_sequence_has_property4_for_20000_rounds():
    d, m = 1, 5800
    M0, M1 = theorem5_M0(m=m), theorem5_M1(d=d, L=1.0, alpha=36.0, mu=0.01, m=m)
    sizes = theorem5_sequence(d=d, m=m, rounds=20_000)
    assert property4_violations(tau=lambda x: theorem5_tau(t=x, M0=M0, M1=M1), sizes=sizes, d=d) == []


def test_theorem5_instantiation_meets_lemma2_and_lemma3_hypotheses():
    steps = theorem5_round_step_sizes(mu=0.01, d=1, m=5800, L=1.0, alpha=36.0, rounds=5000)
    assert all_hold(steps.hypotheses), steps.hypotheses
    assert np.all(np.diff(steps.step_sizes) < 0)
    assert "Theorem 5" in steps.source


def test_theorem5_step_sizes_flag_alpha_below_a1():
    steps = theorem5_round_step_sizes(mu=0.01, d=1, m=5800, L=1.0, alpha=20.0, rounds=10)
    assert not by_name(steps.hypotheses, "μ·a_1 <= α").holds


def test_theorem5_requires_the_logarithm_to_be_positive():
    with pytest.raises(ValueError, match=r"m must be an integer in \[4, inf\); got 3"):
        theorem5_sequence(d=1, m=3, rounds=5)


def test_theorem5_tau_equals_lemma1_tau_for_four_log():
    lemma1 = lemma1_sequence(gamma=four_log, g=2, d=1, m=600, rounds=10)
    t = np.array([0.0, 10.0, 1e4, 1e8])
    np.testing.assert_allclose(lemma1.tau(t), theorem5_tau(t=t, M0=theorem5_M0(m=600), M1=2.0), rtol=1e-14)
    assert isinstance(theorem5_tau(t=5.0, M0=10.0, M1=1.0), float)


def test_theorem5_rate_bound_is_within_16_36_squared_of_the_lower_bound():
    t, N, mu = 1e14, 3.0, 0.1
    upper = theorem5_rate_bound(t=t, N=N, mu=mu, M0=theorem5_M0(m=100), M1=50.0)
    ratio = upper.value / lower_bound_rate(t=t, N=N, mu=mu)
    assert ratio == pytest.approx(16 * 36**2, rel=1e-5)  # L773, L793
    assert ratio < 16 * 36**2
    assert all_hold(upper.hypotheses)


def test_theorem5_rate_bound_value_and_small_t_flag():
    bound = theorem5_rate_bound(t=100.0, N=2.0, mu=0.5, M0=2500.0, M1=10.0)
    denominator = 100 + 20 + math.sqrt(2600 / math.log(2600)) - 1
    assert bound.value == pytest.approx(8 * 36**2 * 2 / 0.25 * 100 / denominator**2, rel=1e-14)
    assert not by_name(bound.hypotheses, "max{M_0, e²}").holds


# --- Lemma 1 (L446-454; spec §4.2) ----------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "m"), [(0, 6317), (1, 5800), (2, 500), (3, 12000)])
def test_lemma1_with_four_log_is_theorem5(d, m):
    lemma1 = lemma1_sequence(gamma=four_log, g=2, d=d, m=m, rounds=3000)
    np.testing.assert_array_equal(lemma1.sizes, theorem5_sequence(d=d, m=m, rounds=3000))
    assert (lemma1.M0, lemma1.M1) == (theorem5_M0(m=m), d + 1)
    assert all_hold(lemma1.hypotheses), lemma1.hypotheses
    assert property4_violations(tau=lemma1.tau, sizes=lemma1.sizes, d=d) == []


def test_lemma1_hypotheses_use_a_given_derivative_alike():
    numeric = lemma1_sequence(gamma=four_log, g=2, d=1, m=5800, rounds=100)
    exact = lemma1_sequence(gamma=four_log, gamma_derivative=lambda z: 4 / z, g=2, d=1, m=5800, rounds=100)
    assert [h.holds for h in numeric.hypotheses] == [h.holds for h in exact.hypotheses] == [True] * 3


def test_lemma1_flags_gamma_growing_too_fast():
    # γ(z) = z: z γ'(z)/γ(z) = 1 > (g−1)/g = 1/2.
    lemma1 = lemma1_sequence(gamma=lambda z: z, g=2, d=1, m=5800, rounds=50)
    assert not all_hold(lemma1.hypotheses)
    assert not by_name(lemma1.hypotheses, "γ(z) >= z·γ'(z)").holds
    assert by_name(lemma1.hypotheses, "γ(z) >= 1").holds


def test_lemma1_flags_gamma_below_one_and_decreasing():
    lemma1 = lemma1_sequence(gamma=lambda z: 0.5 + 1 / z, g=2, d=0, m=10, rounds=20)
    assert not by_name(lemma1.hypotheses, "γ(z) >= 1").holds
    assert not by_name(lemma1.hypotheses, "γ'(z) >= 0").holds


def test_lemma1_general_g_has_property4():
    for gamma in (four_log, lambda z: 1.0, lambda z: np.log(z) ** 2):
        lemma1 = lemma1_sequence(gamma=gamma, g=3, d=2, m=1000, rounds=2000)
        assert all_hold(lemma1.hypotheses), lemma1.hypotheses
        assert property4_violations(tau=lemma1.tau, sizes=lemma1.sizes, d=2) == []


def test_lemma1_paper_variant_agrees_only_for_g_2():
    corrected = lemma1_sequence(gamma=four_log, g=2, d=1, m=800, rounds=200)
    paper = lemma1_sequence(gamma=four_log, g=2, d=1, m=800, rounds=200, variant="paper")
    np.testing.assert_array_equal(corrected.sizes, paper.sizes)
    assert all_hold(paper.hypotheses)
    corrected = lemma1_sequence(gamma=four_log, g=1.5, d=2, m=1000, rounds=5)
    paper = lemma1_sequence(gamma=four_log, g=1.5, d=2, m=1000, rounds=5, variant="paper")
    assert (corrected.sizes[0], paper.sizes[0]) == (2, 1)
    assert not by_name(paper.hypotheses, "g = 2").holds


def test_lemma1_rejects_gamma_not_positive_where_omega_is_evaluated():
    with pytest.raises(ValueError, match=r"gamma must be positive and finite .*round i=0"):
        lemma1_sequence(gamma=four_log, g=2, d=3, m=1, rounds=5)


# --- property (3)/(4) (L135, L430) ----------------------------------------------------------------------------


def test_property4_violations_match_a_plain_loop():
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 20, size=300)
    d = 2

    def tau(x):
        return 3 * np.sqrt(x)

    expected = [i for i in range(d + 1, len(sizes)) if tau(sizes[: i + 1].sum()) < sizes[i - d : i + 1].sum()]
    assert expected  # the case is not trivial
    assert property4_violations(tau=tau, sizes=sizes, d=d) == expected


def test_property4_violations_on_a_constant_tau():
    assert property4_violations(tau=lambda x: np.full_like(x, 5.0), sizes=[3, 3, 2, 4], d=1) == [3]


# --- Lemma 2 (L514-532) ---------------------------------------------------------------------------------------


def brute_force_alphas(sizes, E, a0, exponent):
    """α_t / a_0 for every t of every round, and the round step sizes, by a plain loop."""
    ratios, steps, done = [], [], 0
    for size in sizes:
        steps.append(a0 / (done + E(done)) ** exponent)
        ratios += [steps[-1] * (t + E(t)) ** exponent / a0 for t in range(done, done + size)]
        done += size
    return np.array(ratios), np.array(steps)


def test_round_step_sizes_match_a_plain_loop():
    sizes = theorem5_sequence(d=0, m=300, rounds=60)

    def E(t):
        return 5 + np.sqrt(t)

    result = round_step_sizes(sizes=sizes, E=E, a0=2.0, exponent=0.8, m=300, g=2)
    ratios, steps = brute_force_alphas(sizes.tolist(), E, 2.0, 0.8)
    np.testing.assert_allclose(result.step_sizes, steps, rtol=1e-14)
    assert result.a1 == pytest.approx(2.0 * 3**0.8)
    assert 1 - 1e-12 <= ratios.min() and ratios.max() <= 3**0.8
    assert all_hold(result.hypotheses), result.hypotheses


def test_round_step_sizes_flag_e_growing_more_than_twice_in_a_round():
    sizes = [1, 4]

    def E(t):
        return np.where(np.asarray(t) >= 2, 100.0, 1.0)

    result = round_step_sizes(sizes=sizes, E=E, a0=1.0, exponent=1.0, m=0, g=2)
    ratios, _ = brute_force_alphas(sizes, lambda t: float(E(t)), 1.0, 1.0)
    assert ratios.max() > 3  # α_t exceeds a_1 = 3 a_0 ...
    assert not by_name(result.hypotheses, "α_t <= a_1").holds  # ... and the endpoint check sees it
    assert not by_name(result.hypotheses, "Ē_i <= 2").holds
    assert by_name(result.hypotheses, "nondecreasing").holds


def test_round_step_sizes_flag_decreasing_e():
    result = round_step_sizes(sizes=[2, 2, 2], E=lambda t: 1 + 1000 / (1 + t), a0=1.0, exponent=1.0, m=0, g=2)
    assert not by_name(result.hypotheses, "nondecreasing").holds
    assert not by_name(result.hypotheses, "α_t >= a_0").holds


def test_round_step_sizes_flag_a_first_round_larger_than_e0():
    result = round_step_sizes(sizes=[10, 10], E=lambda t: 2.0, a0=1.0, exponent=1.0, m=0, g=2)
    assert not by_name(result.hypotheses, "s_0 − 1 <= E_0").holds


def test_a1_variants_differ_only_below_g_2():
    for variant in ("corrected", "paper"):
        assert round_step_sizes(sizes=[1], E=lambda t: 1.0, a0=1.0, exponent=1.0, m=0, g=2,
                                variant=variant).a1 == 3.0
    # g = 1.5, m = 0: proof (L545) 1 + 2^2 = 5, printed (L524) (1 + 2)^2 = 9.
    assert round_step_sizes(sizes=[1], E=lambda t: 1.0, a0=1.0, exponent=1.0, m=0, g=1.5).a1 == pytest.approx(5.0)
    assert round_step_sizes(sizes=[1], E=lambda t: 1.0, a0=1.0, exponent=1.0, m=0, g=1.5,
                            variant="paper").a1 == pytest.approx(9.0)


def test_round_step_sizes_reject_non_positive_e():
    with pytest.raises(ValueError, match=r"E must return positive finite values; got E\(0\)"):
        round_step_sizes(sizes=[1, 2], E=lambda t: t, a0=1.0, exponent=1.0, m=0, g=2)


# --- Lemma 3, C.2.1 and Table 3 -------------------------------------------------------------------------------


def test_delay_envelope_at_e_squared():
    assert delay_envelope(t=math.e**2) == pytest.approx(math.e / 2, rel=1e-15)
    with pytest.raises(ValueError, match=r"t must be a real number in \(2.71828, inf\)"):
        delay_envelope(t=2.0)


def test_lemma3_rate_bound_value_and_hypotheses():
    bound = lemma3_rate_bound(t=1e6, alpha=36.0, N=1.0, mu=0.1, tau_t=50.0, L=0.01)
    assert bound.value == pytest.approx(8 * 36**2 / 0.01 * 1e6 / (1e6 + 2 * 50 - 1) ** 2, rel=1e-14)
    assert all_hold(bound.hypotheses)
    flagged = lemma3_rate_bound(t=1e6, alpha=10.0, N=1.0, mu=0.1, tau_t=1000.0, L=10.0)
    assert flagged.value == pytest.approx(8 * 100 / 0.01 * 1e6 / (1e6 + 2 * 2000 - 1) ** 2, rel=1e-14)
    assert [h.holds for h in flagged.hypotheses] == [False, False]
    assert not all_hold(lemma3_rate_bound(t=2.0, alpha=36.0, N=1.0, mu=0.1, tau_t=0.0, L=1.0).hypotheses)


def test_max_constant_sample_size():
    assert max_constant_sample_size(step_size=0.01, mu=0.1, d=1) == pytest.approx(500.0)


@pytest.mark.parametrize(("size", "rounds"), [(50, 80), (100, 40), (200, 20), (500, 8), (700, 6), (1000, 4)])
def test_table3_round_counts(size, rounds):
    assert constant_size_rounds(total_iterations=20_000, clients=5, sample_size=size) == rounds


# --- input validation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "arguments", "name"),
    [
        (lemma1_sequence, {"gamma": four_log, "g": 1.0, "d": 0, "m": 10, "rounds": 5}, "g"),
        (lemma1_sequence, {"gamma": four_log, "g": 2, "d": -1, "m": 10, "rounds": 5}, "d"),
        (lemma1_sequence, {"gamma": 4.0, "g": 2, "d": 0, "m": 10, "rounds": 5}, "gamma"),
        (lemma1_sequence, {"gamma": four_log, "g": 2, "d": 0, "m": 10, "rounds": 5, "variant": "x"}, "variant"),
        (property4_violations, {"tau": np.sqrt, "sizes": [[1, 2]], "d": 0}, "sizes"),
        (property4_violations, {"tau": np.sqrt, "sizes": [1, 2.5], "d": 0}, "sizes"),
        (round_step_sizes, {"sizes": [1], "E": lambda t: 1.0, "a0": 0.0, "exponent": 1, "m": 0, "g": 2}, "a0"),
        (theorem5_M1, {"d": 0, "L": 1.0, "alpha": 36.0, "mu": 0.0, "m": 100}, "mu"),
        (theorem5_tau, {"t": [1.0, -1.0], "M0": 10.0, "M1": 1.0}, "t"),
        (theorem5_tau, {"t": 1.0, "M0": 1.0, "M1": 1.0}, "M0"),
        (theorem5_round_step_sizes, {"mu": 0.1, "d": 0, "m": 100, "L": 1.0, "alpha": 36.0, "rounds": 0}, "rounds"),
        (theorem5_rate_bound, {"t": 0.5, "N": 1.0, "mu": 0.1, "M0": 10.0, "M1": 1.0}, "t"),
        (lower_bound_rate, {"t": 10.0, "N": -1.0, "mu": 0.1}, "N"),
        (lemma3_rate_bound, {"t": 10.0, "alpha": 36.0, "N": 1.0, "mu": 0.1, "tau_t": -1.0, "L": 1.0}, "tau_t"),
        (max_constant_sample_size, {"step_size": 0.0, "mu": 0.1, "d": 0}, "step_size"),
        (constant_size_rounds, {"total_iterations": 100, "clients": 0, "sample_size": 5}, "clients"),
        (smallest_offset_for_first_size, {"d": 0, "target": 0}, "target"),
    ],
)
def test_bad_inputs_raise_value_error_naming_the_parameter(function, arguments, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        function(**arguments)
