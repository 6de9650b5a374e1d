"""bounds.adp2sgd: validation, the tight accountant against dp-accounting, and properties (monotonicity, feasibility,
calibration never above target, paper ≥ tight) of Xu et al.'s closed forms."""

import math

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.bounds import adp2sgd as x
from fedplan.bounds.rdp_without_replacement import rdp_without_replacement_gaussian

CIFAR = x.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
FAST = settings(max_examples=50, deadline=None)


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("kwargs,message", [
    (dict(workers=0), "workers must be an integer in [1, 1e+09]"),
    (dict(batch_size=4000), "batch_size must be an integer in [1, 3125]"),
    (dict(delta=1.0), "delta must be a real number in (0, 1)"),
    (dict(steps=1.5), "steps must be an integer"),
    (dict(examples_per_worker=(10, 20)), "one value per worker (16)"),
    (dict(worker_steps=10**6), "worker_steps must be an integer in [1, 58594]"),
])
def test_setting_rejects_bad_values(kwargs, message):
    base = dict(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
    with pytest.raises(ValueError) as error:
        x.Setting(**(base | kwargs))
    assert message in str(error.value)


def test_smallest_dataset_sets_gamma():
    setting = x.Setting(workers=3, examples_per_worker=(500, 300, 900), batch_size=30, steps=10, delta=1e-5)
    assert setting.smallest_dataset == 300 and setting.gamma == pytest.approx(30 / 900)
    assert setting.to_dict()["examples_per_worker"] == [500, 300, 900]


@pytest.mark.parametrize("call", [
    lambda: x.theorem2(setting=CIFAR, epsilon=1, mu=1.0),
    lambda: x.theorem2(setting=CIFAR, epsilon=0, mu=0.5),
    lambda: x.theorem2(setting=CIFAR, epsilon=1, mu=0.5, variant="exact"),
    lambda: x.Topology(workers=1, rho=0.5),
    lambda: x.Topology(workers=4, rho=1.0),
    lambda: x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=2, sampling="poisson"),
    lambda: rdp_without_replacement_gaussian(sample_rate=0.01, noise_multiplier=1, orders=(2.5,)),
    lambda: x.noise_std(noise_to_sensitivity=1, clipping_norm=1, batch_size=8, noise_on="total"),
])
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_empty_band_is_reported():
    dense = x.Setting(workers=1, examples_per_worker=100, batch_size=20, steps=10, delta=1e-5)
    with pytest.raises(ValueError, match="certifies no noise level"):
        x.noise_band(setting=dense)
    result = x.paper_noise_for_epsilon(setting=dense, target_epsilon=5)
    # gamma = 20/100: 2.5 gamma = 0.5 >= 1/e; the number is Theorem 2's formula at the unconstrained mu*
    assert not result.feasible and result.reason.startswith("some noise level is certified: gamma (1 + 1.5) < 1/e: "
                                                            "0.5 < 0.367879; ")
    assert result.floor is None and result.mu == x.unconstrained_mu(epsilon=5, delta=1e-5)


# ---------------------------------------------------------------- noise conventions (erratum XU-1)

def test_noise_on_mean_and_sum():
    assert x.noise_std(noise_to_sensitivity=3, clipping_norm=2, batch_size=8) == pytest.approx(1.5)
    assert x.noise_std(noise_to_sensitivity=3, clipping_norm=2, batch_size=8, noise_on="sum") == pytest.approx(12)
    assert x.noise_to_sensitivity_of_std(std=12, clipping_norm=2, batch_size=8, noise_on="sum") == pytest.approx(3)


def test_paper_variant_flags_noise_on_the_sum():
    corrected = x.theorem2(setting=CIFAR, epsilon=16, mu=0.5)
    paper = x.theorem2(setting=CIFAR, epsilon=16, mu=0.5, variant="paper")
    assert corrected.valid and corrected.guarantee == "guarantee"
    assert paper.noise_std == corrected.noise_std and not paper.valid and paper.guarantee == "no guarantee"
    assert "sensitivity" in paper.hypotheses[-1].name and "L518" in paper.hypotheses[-1].source
    assert corrected.noise_std_sum == pytest.approx(256 * corrected.noise_std)


# ---------------------------------------------------------------- tight accountant

@pytest.mark.parametrize("q,z", [(0.00512, 1.5), (0.08192, 0.8), (3e-5, 4.0), (0.5, 2.0)])
def test_without_replacement_rdp_matches_dp_accounting_rdp_accountant(q, z):
    orders = (2.0, 3.0, 7.0, 20.0, 64.0, 128.0)
    accountant = dp_accounting.rdp.RdpAccountant(orders=list(orders),
                                                 neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    population = 100_000
    accountant.compose(dp_accounting.SampledWithoutReplacementDpEvent(population, round(q * population),
                                                                      dp_accounting.GaussianDpEvent(z)))
    ours = rdp_without_replacement_gaussian(sample_rate=round(q * population) / population, noise_multiplier=z,
                                            orders=orders)
    np.testing.assert_allclose(ours, accountant._rdp, rtol=1e-10)


def test_tight_is_below_the_paper_certificate_and_per_worker_above_it():
    for z in (1.5, 2.0, 3.0):
        paper = x.paper_epsilon_for_noise(setting=CIFAR, noise_to_sensitivity=z, variant="paper").epsilon
        tight = x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=z, conversion="classic").epsilon
        per_worker = x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=z, sampling="per_worker").epsilon
        assert tight < paper < per_worker


def test_tight_calibration_meets_the_target_and_is_short():
    result = x.tight_noise_to_sensitivity(setting=CIFAR, target_epsilon=10)
    assert result.epsilon <= 10 and result.noise_to_sensitivity == float(f"{result.noise_to_sensitivity:.6g}")
    below = x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=result.noise_to_sensitivity * (1 - 1e-4))
    assert below.epsilon > 10
    assert result.noise_to_sensitivity == pytest.approx(1.498, abs=1e-3)  # spec §5.6: 1.498 (improved conversion)


def test_poisson_reference_uses_twice_the_noise_multiplier():
    reference = x.poisson_reference(setting=CIFAR, noise_to_sensitivity=2)
    assert reference.neighboring_relation == "add_or_remove_one" and reference.sampling == "poisson"
    assert reference.segments[0].noise_multiplier == 4 and reference.segments[0].sample_rate == CIFAR.gamma


# ---------------------------------------------------------------- properties

settings_strategy = st.builds(
    lambda k, n, b, t, d: x.Setting(workers=k, examples_per_worker=n, batch_size=min(b, n), steps=t, delta=d),
    st.integers(4, 64), st.integers(1000, 100_000), st.integers(8, 512), st.integers(1000, 10**6),
    st.sampled_from([1e-3, 1e-5, 1e-8]))


@FAST
@given(setting=settings_strategy, z=st.floats(1.3, 50))
def test_envelope_is_monotone_and_never_above_the_raw_certificate(setting, z):
    try:
        x.noise_band(setting=setting)
    except ValueError:
        return
    low = x.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=z)
    high = x.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=z * 1.3)
    raw = x.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=z, variant="paper")
    if low.feasible:
        assert high.feasible and high.epsilon <= low.epsilon * (1 + 1e-12)
        assert low.noise_to_sensitivity <= z
    if raw.feasible:
        assert low.epsilon <= raw.epsilon


@FAST
@given(setting=settings_strategy, factor=st.floats(1.0, 5.0))
def test_least_noise_is_feasible_exactly_above_the_floor_and_meets_the_target(setting, factor):
    try:
        floor = x.epsilon_floor(setting=setting)
    except ValueError:
        return
    target = floor.epsilon * factor * (1 + 1e-9)
    result = x.paper_noise_for_epsilon(setting=setting, target_epsilon=target)
    assert result.feasible and result.theorem.valid and result.certified_epsilon <= target
    more = x.paper_noise_for_epsilon(setting=setting, target_epsilon=target * 1.5)
    assert more.noise_to_sensitivity <= result.noise_to_sensitivity * (1 + 1e-9)
    assert not x.paper_noise_for_epsilon(setting=setting, target_epsilon=floor.epsilon * (1 - 1e-6)).feasible


def test_a_target_below_the_floor_whose_formula_noise_is_below_the_accountants_range_is_infeasible_not_an_error():
    """Hypothesis found it: γ = 8/(56·52447) makes Theorem 2's formula at μ* ask z = 0.000999988 just below the
    floor, under the certificate's smallest noise 1e-3 (it raised ValueError naming noise_multiplier)."""
    setting = x.Setting(workers=56, examples_per_worker=52447, batch_size=8, steps=1000, delta=1e-8, worker_steps=18)
    floor = x.epsilon_floor(setting=setting)
    result = x.paper_noise_for_epsilon(setting=setting, target_epsilon=floor.epsilon * (1 - 1e-6))
    assert not result.feasible and result.noise_to_sensitivity < 1e-3 and result.certified_epsilon is None
    assert "target epsilon >= the smallest epsilon Theorem 2 certifies" in result.reason
    assert result.to_dict()["certified_epsilon"] is None


@FAST
@given(setting=settings_strategy, target=st.floats(0.5, 40))
def test_the_floor_is_the_minimum_of_the_certificate(setting, target):
    try:
        floor = x.epsilon_floor(setting=setting)
    except ValueError:
        return
    low, high = floor.band
    for z in np.geomspace(low, high * (1 - 1e-9), 40):
        assert x.certificate(setting=setting, noise_to_sensitivity=float(z)).epsilon >= floor.epsilon * (1 - 1e-9)
    assert floor.analytic_lower_bound < floor.epsilon


@settings(max_examples=12, deadline=None)  # each evaluation sums orders 2..256 for 58 594 steps
@given(z=st.floats(0.5, 20), factor=st.floats(1.01, 3))
def test_tight_epsilon_decreases_with_noise(z, factor):
    small = x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=z).epsilon
    assert x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=z * factor).epsilon <= small


@FAST
@given(eps=st.floats(0.2, 50), mu=st.floats(0.01, 0.99), factor=st.floats(1.01, 4))
def test_theorem2_noise_decreases_with_epsilon(eps, mu, factor):
    assert (x.theorem2(setting=CIFAR, epsilon=eps * factor, mu=mu).noise_std
            < x.theorem2(setting=CIFAR, epsilon=eps, mu=mu).noise_std)


@FAST
@given(k=st.integers(2, 128), tau=st.integers(0, 4096), rho=st.floats(0.0, 0.999), lip=st.floats(0.1, 10),
       factor=st.floats(1, 1e4))
def test_corrected_proposition1_min_steps_satisfies_theorem1(k, tau, rho, lip, factor):
    """Spec §3.5: with 64τ⁴/K² every grid case passes C₁ > 0, C₂ ≥ 0, C₃ ≤ 1 at η = K/(B√T), T ≥ T_min."""
    topology = x.Topology(workers=k, rho=rho)
    minimum = x.proposition1_min_steps(smoothness=lip, topology=topology, staleness=tau)
    steps = minimum.steps * factor
    constants = x.theorem1_constants(learning_rate=k / math.sqrt(steps), batch_size=1, smoothness=lip,
                                     topology=topology, staleness=tau)
    assert constants.valid, constants


def test_printed_proposition1_fails_for_large_staleness():
    topology = x.Topology(workers=16, rho=0.0)
    printed = x.proposition1_min_steps(smoothness=1, topology=topology, staleness=256, variant="paper")
    assert not printed.valid and printed.to_dict()["hypotheses"][2]["holds"] is False


def test_theorem1_bound_guarantee_only_when_constants_hold():
    problem = x.Problem(smoothness=1, initial_gap=1, variance=1, dissimilarity=0, dimension=10)
    topology = x.Topology(workers=16, rho=0.5)
    ok = x.theorem1_bound(problem=problem, topology=topology, learning_rate=1e-6, batch_size=8, steps=1000,
                          staleness=1, noise_std_sum=0.1)
    assert ok.valid and ok.guarantee == "guarantee" and ok.value == pytest.approx(sum(ok.terms.values()))
    bad = x.theorem1_bound(problem=problem, topology=topology, learning_rate=1e-2, batch_size=8, steps=1000,
                           staleness=1, noise_std_sum=0.1)
    assert not bad.valid and bad.guarantee == bad.to_dict()["guarantee"] == "no guarantee"
    assert bad.value == pytest.approx(sum(bad.terms.values())) and "arXiv:2008.09246" in bad.source  # shown, not None


@pytest.mark.parametrize("workers, examples", [(1e300, 3125), (16, 1e200), (10**10, 10)])
def test_setting_refuses_sizes_whose_gamma_squared_underflows(workers, examples):
    """gamma = B/(K n) so small that 5 T gamma^2/z^2 underflows made the certificate divide by zero."""
    with pytest.raises(ValueError, match="workers|examples_per_worker"):
        x.Setting(workers=workers, examples_per_worker=examples, batch_size=1, steps=10, delta=1e-5)


def test_a_huge_target_is_refused_by_name_and_the_noise_floors_mu_is_found_far_below_one():
    # API fuzz (fixed seed 0, 10 inputs): target ε = 2e307 made μ* round to 1 and α = log(1/δ)/((1 − μ)ε) + 1 divide by
    # zero; at ε = 1e29 (δ = 0.9) the floor's root μ ≈ 1e-30 took Brent more than scipy's 100 steps.
    setting = x.Setting(workers=76364, examples_per_worker=462, batch_size=3, steps=1328, delta=0.9, worker_steps=112)
    with pytest.raises(ValueError, match=r"^epsilon must be at most 1.34e\+29 at delta = 0.9 .*got 2e\+307$"):
        x.unconstrained_mu(epsilon=2e307, delta=0.9)
    # log(1/0.9)·2¹⁰⁰ = 1.336e29; just below it 1 − μ* ≈ √(2⁻¹⁰⁰) = 8.9e-16 is still a float step below 1
    assert 1 - x.unconstrained_mu(epsilon=1.33e29, delta=0.9) == pytest.approx(2.0**-50, rel=0.01)
    for target in (1e29, 1e20, 1e10):
        mu = x._mu_at_noise_floor(setting, target)
        # the printed floor condition z² = 5Tγ²α/(με) = 1.5 (xu L171, L508), α from L171, recomputed here
        alpha = math.log(1 / 0.9) / ((1 - mu) * target) + 1
        assert 5 * 1328 * setting.gamma**2 * alpha / (mu * target) == pytest.approx(1.5, rel=1e-12)
        assert mu < 1e-6
