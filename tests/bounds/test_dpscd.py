"""bounds.dpscd: T and q, the MA128 calibration against an independent accountant and its floor, the tight
accountants, sensitivities, the Theorem 7 recursion against simulation-spec values and a brute-force unrolling,
and the cost model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from fedplan.bounds import dpscd

MSD = 347_786


def independent_ma(q: float, sigma: float, steps: int, delta: float, max_lambda: int = 128) -> float:
    """Spec F10: log A_{λ+1} by a plain log-sum-exp of the binomial sum, then min over λ (not bounds.rdp)."""
    best = math.inf
    for lam in range(1, max_lambda + 1):
        alpha = lam + 1
        k = np.arange(alpha + 1, dtype=float)
        terms = (special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
                 + k * math.log(q) + (alpha - k) * math.log1p(-q) + (k * k - k) / (2 * sigma**2))
        log_a = float(special.logsumexp(terms))
        best = min(best, (steps * log_a + math.log(1 / delta)) / lam)
    return best


def test_outer_iterations_and_sample_rate():
    assert dpscd.outer_iterations(examples=MSD, batch_size=1000, epochs=50) == 17_389
    assert dpscd.outer_iterations(examples=MSD, batch_size=2000, epochs=50) == 8694
    assert dpscd.outer_iterations(examples=MSD, batch_size=1, epochs=50) == 17_389_300
    assert dpscd.outer_iterations(examples=6218, batch_size=2000, epochs=10) == 31   # Phishing (spec §7.6)
    assert dpscd.sample_rate(examples=MSD, batch_size=1000) == pytest.approx(0.00287533, abs=5e-9)
    with pytest.raises(ValueError, match="need at least 1"):
        dpscd.outer_iterations(examples=100, batch_size=100, epochs=0.5)
    with pytest.raises(ValueError, match="batch_size must be an integer in \\[1, 100\\]; got 101"):
        dpscd.sample_rate(examples=100, batch_size=101)


def test_ma128_calibration_is_minimal_under_an_independent_accountant():
    q, steps = 1000 / MSD, 17_389
    result = dpscd.calibrate_noise(target_epsilon=0.1, target_delta=1e-3, sample_rate=q, steps=steps)
    assert result.noise_multiplier == pytest.approx(14.22328, abs=1e-5)
    assert result.order == 128 and result.notes  # the order cap binds (spec §4.4 item 1)
    assert independent_ma(q, result.noise_multiplier, steps, 1e-3) <= 0.1
    assert independent_ma(q, result.noise_multiplier * (1 - 2e-6), steps, 1e-3) > 0.1
    assert result.variant == "paper" and result.valid and result.sampling.startswith("poisson")


def test_abadi_inverse_and_simulation_setting():
    assert dpscd.calibrate_noise(target_epsilon=1.26, target_delta=1e-5, sample_rate=0.01,
                                 steps=10_000).noise_multiplier == pytest.approx(3.99583, abs=1e-5)
    assert dpscd.calibrate_noise(target_epsilon=1.0, target_delta=1e-3, sample_rate=100 / 20_000,
                                 steps=2000).noise_multiplier == pytest.approx(1.1469, abs=1e-4)


def test_epsilon_floor_blocks_calibration_below_it():
    assert dpscd.epsilon_floor(delta=1e-3) == pytest.approx(0.053967, abs=1e-6)
    assert dpscd.epsilon_floor(delta=1e-3, max_lambda=32) == pytest.approx(0.21587, abs=1e-5)
    assert dpscd.epsilon_floor(delta=1e-3, max_lambda=64) == pytest.approx(0.10793, abs=1e-5)
    with pytest.raises(ValueError, match="ln\\(1/delta\\)/128 = 0.0539668"):
        dpscd.calibrate_noise(target_epsilon=0.05, target_delta=1e-3, sample_rate=0.01, steps=100)
    # the tight accountants have no such floor
    tight = dpscd.calibrate_noise(target_epsilon=0.05, target_delta=1e-3, sample_rate=0.01, steps=100,
                                  accountant="rdp")
    assert tight.epsilon <= 0.05 and tight.epsilon_floor == 0.0


def test_tight_accountants_side_by_side():
    results = dpscd.compare_accountants(target_epsilon=0.1, target_delta=1e-3, sample_rate=1000 / MSD, steps=17_389)
    ma, rdp_result, pld_result = results
    assert (ma.accountant, rdp_result.accountant) == ("ma128", "rdp")
    assert rdp_result.noise_multiplier == pytest.approx(7.83913, rel=1e-5)  # spec §4.5 (dp-accounting 7.83912)
    assert pld_result.noise_multiplier < rdp_result.noise_multiplier < ma.noise_multiplier
    for result in results:
        assert result.epsilon <= 0.1
        assert dpscd.epsilon_for_noise(noise_multiplier=result.noise_multiplier, sample_rate=1000 / MSD,
                                       steps=17_389, delta=1e-3, accountant=result.accountant) <= 0.1


def test_ma_epsilon_at_the_thesis_sigma_under_other_accountants():
    # spec §4.6 D: MSD ε=0.1 L=1000 at σ = 14.22328 → RDP improved 0.05105
    eps = dpscd.epsilon_for_noise(noise_multiplier=14.22328, sample_rate=1000 / MSD, steps=17_389, delta=1e-3,
                                  accountant="rdp")
    assert eps == pytest.approx(0.05105, abs=1e-5)


def test_batch_revealed_epsilon():
    # spec §4.7 C3 / §9.7: MA128 at (δ=1e-3, σ=14.22328, q=1, T=50) = 1.9754
    assert dpscd.epsilon_if_batch_revealed(noise_multiplier=14.22328, epochs=50, delta=1e-3) == pytest.approx(
        1.9754, abs=1e-4)


def test_sensitivities():
    assert dpscd.sensitivity(clipping_norm=1.0) == pytest.approx(math.sqrt(2))
    assert dpscd.sensitivity(algorithm="seq", clipping_norm=1.0, batch_size=1000) == pytest.approx(1999.9995, abs=1e-4)
    assert dpscd.sensitivity(algorithm="primal", clipping_norm=2.0, batch_size=1) == pytest.approx(2 * math.sqrt(2))
    assert dpscd.sensitivity(algorithm="dpsgd", clipping_norm=0.3) == 0.3
    # README config: √2·C·σ = 2.0115 and SeqDP-SCD 2844.7 (spec §7.6)
    assert math.sqrt(2) * 0.1 * 14.22328 == pytest.approx(2.0115, abs=1e-4)
    assert dpscd.sensitivity(algorithm="seq", clipping_norm=0.1, batch_size=1000) * 14.22328 == pytest.approx(
        2844.7, abs=0.1)


def test_update_rate_and_msd_bound_is_uninformative():
    rate = dpscd.update_rate(mu=1, regularization=1e-4, examples=MSD, batch_size=1000)
    assert rate == pytest.approx(9.66390e-05, rel=1e-5)
    assert (1 - rate) ** 17_389 == pytest.approx(0.18627, abs=1e-5)
    for variant, noise_term in (("paper", 1.70e7), ("corrected", 50.4)):
        bound = dpscd.suboptimality_bound(initial_suboptimality=0.0, mu=1, nu=1, regularization=1e-4, examples=MSD,
                                          batch_size=1000, clipping_norm=0.1, noise_multiplier=14.2233, steps=17_389,
                                          variant=variant)
        assert bound.bound == pytest.approx(noise_term, rel=5e-3)
    assert not bound.theorem7_applies and [h.holds for h in bound.hypotheses] == [False, False]


@pytest.mark.parametrize("clip, corrected, paper", [(0.05, 0.0411, 320), (0.2, 0.2932, 5122), (1.0, 6.747, 1.28e5)])
def test_simulation_setting_bounds(clip, corrected, paper):
    # spec §5.7: ridge N=20000, λ=1e-3, L=100, T=2000, σ=1.1469, S_0=0.12859, κ=0
    common = dict(initial_suboptimality=0.12859, mu=1, nu=1, regularization=1e-3, examples=20_000, batch_size=100,
                  clipping_norm=clip, noise_multiplier=1.1469, steps=2000)
    assert dpscd.suboptimality_bound(**common).bound == pytest.approx(corrected, rel=1e-3)
    assert dpscd.suboptimality_bound(**common, variant="paper").bound == pytest.approx(paper, rel=2e-3)


def test_recursion_bound_equals_brute_force_unrolling():
    common = dict(initial_suboptimality=3.0, mu=2.0, nu=0.5, regularization=0.01, examples=500, batch_size=20,
                  clipping_norm=0.3, noise_multiplier=2.0, kappa=0.2)
    rate = dpscd.update_rate(mu=2.0, regularization=0.01, examples=500, batch_size=20, kappa=0.2)
    increase = 0.5 * dpscd.nu_prime(nu=0.5, regularization=0.01, examples=500) * 20 * 2 * 0.3**2 * 2.0**2
    s = 3.0
    for t in range(1, 301):
        s = (1 - rate) * s + increase
        if t in (1, 7, 300):
            assert dpscd.suboptimality_bound(**common, steps=t).bound == pytest.approx(s, rel=1e-12)


def test_theorem7_condition_holds_when_mu_lambda_is_large():
    checks = dpscd.theorem7_hypotheses(mu=1.0, regularization=3.0, examples=100, batch_size=100)
    assert all(h.holds for h in checks)   # L(2·3 − 1) = 500 > 300
    checks = dpscd.theorem7_hypotheses(mu=1.0, regularization=3.0, examples=100, batch_size=50)
    assert [h.holds for h in checks] == [True, False]   # 250 < 300


def test_cost_model():
    cost = dpscd.cost_model(examples=MSD, features=90, batch_size=1000, epochs=50)
    assert cost.steps == 17_389 and cost.coordinate_updates == 17_389_000
    assert cost.gaussian_draws == 17_389 * 1090 and cost.draws_per_update == pytest.approx(1.09)
    assert cost.tuning_configurations["DP-SCD"] == 156 and cost.tuning_configurations["DP-SGD"] == 2028
    assert dpscd.cost_model(examples=MSD, features=90, batch_size=1, epochs=50).draws_per_update == 91


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="accountant must be one of"):
        dpscd.calibrate_noise(target_epsilon=1, target_delta=1e-3, sample_rate=0.1, steps=10, accountant="ma")
    with pytest.raises(ValueError, match="kappa must be a real number in \\[0, 1\\)"):
        dpscd.update_rate(mu=1, regularization=1, examples=10, batch_size=1, kappa=1.0)
    with pytest.raises(ValueError, match="nu must be a real number"):
        dpscd.nu_prime(nu=math.inf, regularization=1, examples=10)


@settings(max_examples=12, deadline=None)
@given(eps=st.floats(0.2, 4.0), factor=st.floats(1.05, 3.0), batch=st.integers(1, 500))
def test_calibrated_sigma_decreases_with_epsilon(eps, factor, batch):
    steps = dpscd.outer_iterations(examples=5000, batch_size=batch, epochs=2)
    q = batch / 5000
    low = dpscd.calibrate_noise(target_epsilon=eps, target_delta=1e-3, sample_rate=q, steps=steps)
    high = dpscd.calibrate_noise(target_epsilon=eps * factor, target_delta=1e-3, sample_rate=q, steps=steps)
    assert high.noise_multiplier <= low.noise_multiplier
    assert low.epsilon <= eps and high.epsilon <= eps * factor


@settings(max_examples=50, deadline=None)
@given(clip=st.floats(0.01, 2), sigma=st.floats(0.1, 20), steps=st.integers(0, 5000), more=st.floats(1.01, 3))
def test_bound_grows_with_noise_and_corrected_is_below_paper(clip, sigma, steps, more):
    common = dict(initial_suboptimality=1.0, mu=1, nu=1, regularization=1e-3, examples=2000, batch_size=50,
                  steps=steps)
    base = dpscd.suboptimality_bound(clipping_norm=clip, noise_multiplier=sigma, **common)
    assert dpscd.suboptimality_bound(clipping_norm=clip * more, noise_multiplier=sigma, **common).bound >= base.bound
    assert dpscd.suboptimality_bound(clipping_norm=clip, noise_multiplier=sigma * more, **common).bound >= base.bound
    assert dpscd.suboptimality_bound(clipping_norm=clip, noise_multiplier=sigma, variant="paper",
                                     **common).bound >= base.bound
