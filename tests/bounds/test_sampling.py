"""Accounting of each sampling × neighbouring relation (bounds/sampling.py, docs/SAMPLING.md).

References are independent of the code under test: direct numerical integration of the continuous
dominating pair, mpmath, dp-accounting's own events at a finer spacing, and printed numbers.
"""

import math

import mpmath
import numpy as np
import pytest
from dp_accounting import NeighboringRelation, dp_event, pld
from dp_accounting import rdp as dp_rdp
from scipy import integrate, stats

from fedplan.bounds import accounting, sampling

DELTA = 1e-5
FLOWER = dict(sample_rate=0.05, noise_multiplier=1.67263, steps=200, delta=DELTA)


def _dp_accounting_pld(event, relation=NeighboringRelation.ADD_OR_REMOVE_ONE, spacing=2e-5):
    accountant = pld.PLDAccountant(relation, value_discretization_interval=spacing)
    return accountant.compose(event).get_epsilon(DELTA)


def _poisson_event(q, sigma, steps):
    return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)


# --- §1: fixed size, replace-one: the symmetrised pair --------------------------------------------------------


def _two_step_delta_of_symmetric_pair(p: float, s: float, eps: float) -> float:
    """δ(ε) of two compositions of the continuous symmetric pair of C_p(G_{1/s}), by quadrature.

    The pair's privacy loss under P̃ is L(y) for y ~ P = (1-p)N(0,s²) + pN(1,s²) on y > ½, -L(y) for
    y ~ Q = N(0,s²) on y > ½ (ω(-l) = e^{-l}ω(l) is Q's law of L), and 0 with the remaining mass.
    One step's E[(1 - e^{c - L})_+] is closed form (dP = e^L dQ); the first step is integrated by quad.
    """
    def loss(y):
        return math.log(1 - p + p * math.exp((2 * y - 1) / (2 * s * s)))

    def inverse_loss(value):  # y with L(y) = value (L increases in y)
        return s * s * math.log((math.exp(value) - 1 + p) / p) + 0.5 if math.exp(value) > 1 - p else -math.inf

    def p_tail(y):
        return (1 - p) * stats.norm.sf(y, 0, s) + p * stats.norm.sf(y, 1, s)

    def q_tail(y):
        return stats.norm.sf(y, 0, s)

    atom = 1 - p_tail(0.5) - q_tail(0.5)

    def one_step(c):
        """E[(1 - e^{c - L})_+] under the symmetric pair's loss law."""
        start = max(0.5, inverse_loss(c))  # positive part: y ~ P with L(y) > c
        total = p_tail(start) - math.exp(c) * q_tail(start)
        if c < 0:  # mirrored part: y ~ Q on ½ < y < L⁻¹(-c), loss -L(y) > c
            top = inverse_loss(-c)
            total += (q_tail(0.5) - q_tail(top)) - math.exp(c) * (p_tail(0.5) - p_tail(top))
            total += atom * -math.expm1(c)
        return total

    def density_p(y):
        return (1 - p) * stats.norm.pdf(y, 0, s) + p * stats.norm.pdf(y, 1, s)

    top = 0.5 + 16 * s
    first, _ = integrate.quad(lambda y: density_p(y) * one_step(eps - loss(y)), 0.5, top, epsabs=1e-15,
                              epsrel=1e-12, limit=500)
    mirrored, _ = integrate.quad(lambda y: stats.norm.pdf(y, 0, s) * one_step(eps + loss(y)), 0.5, top,
                                 epsabs=1e-15, epsrel=1e-12, limit=500)
    return first + mirrored + atom * one_step(eps)


@pytest.mark.parametrize("eps", [0.3, 0.8])
def test_symmetrised_pair_composes_like_the_continuous_pair(eps):
    exact = _two_step_delta_of_symmetric_pair(0.2, 1.0, eps)
    ours = sampling._symmetrised_step(0.2, 1.0, 1e-4).self_compose(2).get_delta_for_epsilon(eps)
    assert exact <= ours <= exact * (1 + 1e-5)


def test_symmetrised_step_profile_is_the_remove_pairs_above_zero():
    from dp_accounting.pld import privacy_loss_mechanism as mechanism

    spacing = 1e-3
    remove = mechanism.GaussianPrivacyLoss(0.9, sampling_prob=0.1, adjacency_type=mechanism.AdjacencyType.REMOVE)
    grid = np.arange(0, 3000) * spacing
    ours = sampling._symmetrised_step(0.1, 0.9, spacing).get_delta_for_epsilon(grid)
    truth = np.asarray(remove.get_delta_for_epsilon(grid))
    assert np.all(ours >= truth - 1e-15)
    assert np.allclose(ours, truth, rtol=1e-9, atol=1e-15)


def test_fixed_size_replace_one_pld_is_sandwiched():
    """Below WBK'19's RDP bound for these points, and above the composition of f_p alone (a lower bound)."""
    for q, sigma, steps in [(0.05, 3.34526, 200), (0.01, 2.0, 1000), (0.2, 6.0, 50)]:
        ours = accounting.get_epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=DELTA,
                                      sampling="fixed_size", neighboring_relation="replace_one")
        rdp_bound = accounting.get_epsilon(sample_rate=q, noise_multiplier=sigma, steps=steps, delta=DELTA,
                                           sampling="fixed_size", neighboring_relation="replace_one",
                                           accountant="rdp")
        lower = _dp_accounting_pld(_poisson_event(q, sigma / 2, steps))
        assert ours.accountant == "pld" and ours.bound == "upper bound"
        assert lower <= ours.epsilon <= rdp_bound.epsilon


# --- §5: Flower -------------------------------------------------------------------------------------------------


def test_flower_number():
    """Flower's RdpAccountant (WITHOUT_REPLACEMENT, REPLACE_ONE) at σ_F = 1.67263 prints 4.6157 (anchors.md §11):
    dp-accounting's event reads σ as noise / replace sensitivity, so fedplan reproduces it at 2σ_F."""
    flower_event = dp_event.SelfComposedDpEvent(
        dp_event.SampledWithoutReplacementDpEvent(1000, 50, dp_event.GaussianDpEvent(1.67263)), 200)
    flower = dp_rdp.RdpAccountant(neighboring_relation=NeighboringRelation.REPLACE_ONE).compose(
        flower_event).get_epsilon(DELTA)
    assert flower == pytest.approx(4.6157, abs=5e-5)
    ours = accounting.get_epsilon(**(FLOWER | {"noise_multiplier": 2 * 1.67263}), sampling="fixed_size",
                                  neighboring_relation="replace_one", dataset_size=1000, accountant="rdp")
    assert ours.epsilon == pytest.approx(flower, rel=1e-3) and ours.epsilon >= flower * (1 - 1e-9)
    tight = accounting.get_epsilon(**(FLOWER | {"noise_multiplier": 2 * 1.67263}), sampling="fixed_size",
                                   neighboring_relation="replace_one", dataset_size=1000)
    assert tight.epsilon == pytest.approx(2.2472, abs=2e-3)  # docs/SAMPLING.md §5
    at_flowers_sigma = accounting.get_epsilon(**FLOWER, sampling="fixed_size", neighboring_relation="replace_one",
                                              dataset_size=1000)
    assert at_flowers_sigma.epsilon > 2 * tight.epsilon
    assert "replace-one neighbouring data sets under fixed-size sampling" in at_flowers_sigma.statement()


# --- §2: fixed size, add/remove-one; Poisson under replace-one --------------------------------------------------


def test_fixed_size_add_remove_is_poisson_at_half_noise_and_above_poisson():
    ours = accounting.get_epsilon(**FLOWER, sampling="fixed_size", dataset_size=1000)
    reference = _dp_accounting_pld(_poisson_event(0.05, 1.67263 / 2, 200))
    poisson = accounting.get_epsilon(**FLOWER)
    assert reference <= ours.epsilon <= reference * 1.001
    assert ours.epsilon > 3 * poisson.epsilon and ours.bound == "upper bound"


def test_poisson_replace_one_matches_dp_accounting():
    ours = accounting.get_epsilon(**FLOWER, neighboring_relation="replace_one")
    reference = _dp_accounting_pld(_poisson_event(0.05, 1.67263, 200), NeighboringRelation.REPLACE_ONE)
    assert reference <= ours.epsilon <= reference * 1.001


# --- §3: with replacement -----------------------------------------------------------------------------------------


def test_one_draw_with_replacement_is_poisson_at_rate_one_over_n():
    """s = 1 draw: the mixture is (1-1/N)N(0) + (1/N)N(2), the Poisson pair at q = 1/N and σ/2."""
    ours = accounting.get_epsilon(sample_rate=1 / 50, noise_multiplier=1.5, steps=300, delta=DELTA,
                                  sampling="with_replacement", dataset_size=50)
    reference = _dp_accounting_pld(_poisson_event(1 / 50, 0.75, 300))
    assert reference <= ours.epsilon <= reference * 1.001


def test_with_replacement_matches_the_mixture_event_and_exceeds_fixed_size():
    n, s, sigma, steps = 200, 20, 2.0, 100
    law = stats.binom(s, 1 / n)
    ks = np.arange(0, 21)  # P(K > 20) < 1e-30
    event = dp_event.SelfComposedDpEvent(dp_event.MixtureOfGaussiansDpEvent(
        sigma, [2.0 * k for k in ks], list(law.pmf(ks) / law.pmf(ks).sum())), steps)
    ours = accounting.get_epsilon(sample_rate=s / n, noise_multiplier=sigma, steps=steps, delta=DELTA,
                                  sampling="with_replacement", dataset_size=n)
    reference = _dp_accounting_pld(event, spacing=ours.pld_spacing / 2)
    fixed = accounting.get_epsilon(sample_rate=s / n, noise_multiplier=sigma, steps=steps, delta=DELTA,
                                   sampling="fixed_size", dataset_size=n)
    assert reference <= ours.epsilon <= reference * 1.001
    assert ours.epsilon > fixed.epsilon


def test_with_replacement_tail_is_charged():
    ks, probs, left_out = sampling._binomial_mixture(1000, 100, 1e-24)
    assert left_out <= 1e-24 and probs.sum() == pytest.approx(1.0)
    assert stats.binom(1000, 0.01).sf(ks[-1]) == pytest.approx(left_out, rel=1e-6)
    added_delta, added_epsilon = sampling.MECHANISMS[("with_replacement", "add_or_remove_one")].adjustments(
        [(0.1, 1.0, 50)], 10_000)
    assert 0 < added_delta <= 50 * 1e-24 / 50 and added_epsilon == pytest.approx(added_delta, rel=1e-6)


# --- §4: shuffle --------------------------------------------------------------------------------------------------


def _mp_gaussian_delta(mu, eps):
    mpmath.mp.dps = 50
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("relation, sensitivity", [("add_or_remove_one", 1), ("replace_one", 2)])
def test_shuffle_is_the_exact_gaussian_of_its_participations(relation, sensitivity):
    # q = 0.01 → 100 steps per epoch; 250 steps start 3 epochs → 3 participations.
    result = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=4.0, steps=250, delta=DELTA,
                                    sampling="shuffle", neighboring_relation=relation)
    mu = sensitivity * math.sqrt(3) / 4.0
    assert result.accountant == "exact" and result.bound == "upper bound"
    assert _mp_gaussian_delta(mu, result.epsilon) <= DELTA * (1 + 1e-9)
    assert _mp_gaussian_delta(mu, result.epsilon * (1 - 1e-6)) > DELTA


def test_participations():
    assert sampling.participations(0.01, 100) == 1
    assert sampling.participations(0.01, 101) == 2
    assert sampling.participations(0.3, 7) == 3  # ⌊1/0.3⌋ = 3 steps per epoch


# --- calibration: ε(result) ≤ target, re-checked with the same sampling ------------------------------------------


@pytest.mark.parametrize("model", [
    dict(sampling="poisson", neighboring_relation="replace_one"),
    dict(sampling="fixed_size", neighboring_relation="add_or_remove_one", dataset_size=2000),
    dict(sampling="fixed_size", neighboring_relation="replace_one", dataset_size=2000),
    dict(sampling="with_replacement", neighboring_relation="add_or_remove_one", dataset_size=2000),
    dict(sampling="with_replacement", neighboring_relation="replace_one", dataset_size=2000),
    dict(sampling="shuffle", neighboring_relation="add_or_remove_one"),
    dict(sampling="shuffle", neighboring_relation="replace_one"),
    dict(sampling="poisson", neighboring_relation="add_or_remove_one", client_sample_rate=0.5),
])
def test_calibrated_noise_meets_the_target_for_every_sampling(model):
    target = 2.0
    result = accounting.calibrate_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=0.05,
                                                   steps=200, **model)
    assert result.sampling == model["sampling"] and result.neighboring_relation == model["neighboring_relation"]
    recheck = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=result.value, steps=200, delta=DELTA,
                                      **model)
    assert recheck.epsilon <= target and result.epsilon <= target
    slightly_less = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=result.value * 0.99, steps=200,
                                           delta=DELTA, **model)
    assert slightly_less.epsilon > target * 0.995  # the answer is not needlessly noisy


def test_calibrated_batch_size_is_whole_with_a_dataset_size():
    result = accounting.calibrate_sample_rate(target_epsilon=2.0, target_delta=DELTA, noise_multiplier=2.0,
                                              steps=200, sampling="with_replacement", dataset_size=1000)
    batch = result.value * 1000
    assert batch == round(batch)
    assert accounting.get_epsilon(sample_rate=result.value, noise_multiplier=2.0, steps=200, delta=DELTA,
                                  sampling="with_replacement", dataset_size=1000).epsilon <= 2.0
    assert accounting.get_epsilon(sample_rate=(batch + 1) / 1000, noise_multiplier=2.0, steps=200, delta=DELTA,
                                  sampling="with_replacement", dataset_size=1000).epsilon > 2.0


def test_calibrated_steps_for_shuffle_and_fixed_size():
    for model in (dict(sampling="shuffle"), dict(sampling="fixed_size", neighboring_relation="replace_one")):
        result = accounting.calibrate_steps(target_epsilon=3.0, target_delta=DELTA, sample_rate=0.01,
                                            noise_multiplier=3.0, **model)
        ok = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=3.0, steps=result.value, delta=DELTA, **model)
        over = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=3.0, steps=result.value + 1,
                                      delta=DELTA, **model)
        if model["sampling"] == "shuffle":  # ε only grows when a new epoch starts
            assert ok.epsilon <= 3.0 < over.epsilon and (result.value + 1) % 100 == 1
        else:
            assert ok.epsilon <= 3.0 < over.epsilon


def test_no_rdp_fallback_where_there_is_no_rdp_bound():
    with pytest.raises(ValueError, match="no RDP bound to fall back to"):
        accounting.get_epsilon(**FLOWER, sampling="with_replacement", dataset_size=1000, time_budget=1e-9)


def test_mixture_builder_equals_dp_accountings_mixture_pld():
    """Our connect-the-dots from the exact profile against dp-accounting's from_mixture_gaussian_mechanism at the
    same spacing: one step's profile in both directions, and 1 000 compositions."""
    from dp_accounting.pld import privacy_loss_distribution

    ks, probs, _ = sampling._binomial_mixture(100, 2000, 1e-28)
    ours = sampling._GaussianMixture(2.0 * ks, probs, 1.3).pld(2e-3)
    theirs = privacy_loss_distribution.from_mixture_gaussian_mechanism(
        1.3, [2.0 * k for k in ks], list(probs), value_discretization_interval=2e-3)
    grid = np.linspace(0, 6, 61)
    assert np.allclose(ours.get_delta_for_epsilon(grid), theirs.get_delta_for_epsilon(grid), rtol=1e-8, atol=1e-18)
    assert ours.self_compose(1000).get_epsilon_for_delta(DELTA) == pytest.approx(
        theirs.self_compose(1000).get_epsilon_for_delta(DELTA), rel=1e-7)


# --- §6: two-stage sampling ---------------------------------------------------------------------------------------


def _rounds_bound(rounds, rate, tail):
    """Smallest k with P(Binomial(rounds, rate) > k) ≤ tail, by summing the pmf from the top in mpmath."""
    mpmath.mp.dps = 50
    upper = mpmath.mpf(0)
    for k in range(rounds, -1, -1):
        upper += mpmath.binomial(rounds, k) * mpmath.mpf(rate) ** k * (1 - mpmath.mpf(rate)) ** (rounds - k)
        if upper > tail:
            return k
    return 0


def test_two_stage_is_the_inner_mechanism_over_the_rounds_a_client_joins():
    two = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=1.0, steps=1000, delta=DELTA,
                                 client_sample_rate=0.1)
    rounds = _rounds_bound(1000, 0.1, 1e-3 * DELTA)
    assert two.client_rounds == (rounds,) and two.bound == "upper bound" and two.delta == DELTA
    reference = pld.PLDAccountant(value_discretization_interval=two.pld_spacing / 2).compose(
        _poisson_event(0.05, 1.0, rounds)).get_epsilon(DELTA * (1 - 1e-3))
    assert reference <= two.epsilon <= reference * 1.001
    naive = accounting.get_epsilon(sample_rate=0.005, noise_multiplier=1.0, steps=1000, delta=DELTA)
    no_credit = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=1.0, steps=1000, delta=DELTA)
    assert naive.epsilon < two.epsilon < no_credit.epsilon
    assert "Two-stage sampling" in two.statement()


def test_two_stage_calibration_and_fixed_size_inside():
    result = accounting.calibrate_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.05,
                                                   steps=1000, client_sample_rate=0.1, sampling="fixed_size",
                                                   neighboring_relation="replace_one", dataset_size=200)
    assert result.client_sample_rate == 0.1 and result.bound == "upper bound"
    recheck = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=result.value, steps=1000, delta=DELTA,
                                     client_sample_rate=0.1, sampling="fixed_size",
                                     neighboring_relation="replace_one", dataset_size=200)
    assert recheck.epsilon <= 2.0
    with pytest.raises(ValueError, match=r"client_sample_rate must be a real number in \(0, 1\]; got 0"):
        accounting.get_epsilon(**FLOWER, client_sample_rate=0.0)


# --- §3b: with replacement, replace-one ------------------------------------------------------------------------


def test_with_replacement_replace_one_one_draw_is_fixed_size_one_record():
    """s = 1 draw is m = 1 of N without replacement: the bound reduces to Balle et al.'s γ·δ(ε) of §1."""
    common = dict(sample_rate=1 / 1000, noise_multiplier=2.0, steps=500, delta=DELTA, dataset_size=1000,
                  neighboring_relation="replace_one")
    drawn = accounting.get_epsilon(sampling="with_replacement", **common)
    fixed = accounting.get_epsilon(sampling="fixed_size", **common)
    assert drawn.epsilon == pytest.approx(fixed.epsilon, rel=1e-4)


def test_with_replacement_replace_one_is_between_its_lower_bound_and_group_privacy():
    """Lower bound: D' all -C and D with one +C record realise the add/remove mixture pair exactly (§3b)."""
    common = dict(sample_rate=20 / 1000, noise_multiplier=2.0, steps=500, delta=DELTA, dataset_size=1000,
                  sampling="with_replacement")
    replace = accounting.get_epsilon(neighboring_relation="replace_one", **common)
    add_remove = accounting.get_epsilon(**common)
    assert replace.bound == "upper bound" and replace.accountant == "pld"
    assert add_remove.epsilon * (1 - 1e-3) <= replace.epsilon <= 2 * add_remove.epsilon


def test_mixture_profiles_grow_with_every_shift():
    """The monotonicity §3 relies on (a shift of norm ≤ 2k is dominated by 2k), checked in both directions."""
    rng = np.random.default_rng(7)
    epsilons = np.linspace(-2, 4, 25)
    for _ in range(60):
        count = int(rng.integers(2, 6))
        probs = rng.dirichlet(np.ones(count))
        shifts = np.sort(np.concatenate(([0.0], rng.uniform(0.1, 6, count - 1))))
        sigma = float(rng.uniform(0.5, 3))
        bumped = shifts.copy()
        bumped[int(rng.integers(1, count))] += float(rng.uniform(0.05, 1))
        order = np.argsort(bumped)
        before = sampling._GaussianMixture(shifts, probs, sigma)
        after = sampling._GaussianMixture(bumped[order], probs[order], sigma)
        for profile in ("remove_profile", "add_profile"):
            assert np.all(getattr(after, profile)(epsilons) >= getattr(before, profile)(epsilons) - 1e-12)


def test_large_epsilons_are_answered_by_the_pld():
    """ε ≈ 1153: dp-accounting's ε reader underflows above 745 and moved with the spacing (1154.450 at h = 0.025,
    1154.462 at h/2), so fedplan used to report RDP (1184.06) here. Read in log space, the PLD is monotone along the
    nested spacings and below RDP; with-replacement sampling, which has no RDP bound, gets an answer too."""
    case = dict(noise_multiplier=0.3649127129028381, steps=75, delta=1e-8, dataset_size=419,
                sample_rate=0.7040572792362768)
    result = accounting.get_epsilon(sampling="fixed_size", **case)
    assert result.accountant == "pld" and result.fallback_reason is None
    assert 1153.4938 <= result.epsilon <= 1153.52 < 1184.06  # the PLD at h = 0.0016 is 1153.49386
    mixture = accounting.get_epsilon(sampling="with_replacement", **case)
    assert mixture.accountant == "pld" and mixture.epsilon >= result.epsilon


def test_epsilons_beyond_the_pld_grid_fall_back_to_rdp_or_are_refused():
    case = dict(noise_multiplier=0.05, steps=1000, delta=1e-8, dataset_size=1000, sample_rate=1.0)
    result = accounting.get_epsilon(sampling="fixed_size", **case)
    assert result.accountant == "rdp" and result.epsilon > 1e5 and "grid points" in result.fallback_reason
    with pytest.raises(ValueError, match=r"grid points.* has no RDP bound to fall back to; add noise"):
        accounting.get_epsilon(sampling="with_replacement", **case)


# --- a new user's findings -----------------------------------------------------------------------------------------


def test_calibration_is_feasible_where_pld_but_not_rdp_meets_the_target():
    """RDP gives 2.98678 at one step (q = 0.01, σ = 0.6): PLD gives 1.598 at one step and 1.887 at two."""
    result = accounting.calibrate_steps(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.01, noise_multiplier=0.6)
    assert result.accountant == "pld" and result.value >= 2 and result.epsilon <= 2.0
    over = accounting.get_epsilon(sample_rate=0.01, noise_multiplier=0.6, steps=result.value + 1, delta=DELTA)
    assert over.epsilon > 2.0
    with pytest.raises(ValueError, match=r"even steps=1 \(the lower end of its allowed range\) gives "
                                         r"ε=2.98678 \(RDP\)"):
        accounting.calibrate_steps(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.01, noise_multiplier=0.6,
                                   accountant="rdp")
    batch = accounting.calibrate_sample_rate(target_epsilon=10, target_delta=DELTA, noise_multiplier=1.1, steps=1000,
                                             sampling="fixed_size", dataset_size=100)
    assert batch.value == 0.01 and batch.batch_size == 1 and batch.epsilon <= 10
    assert "batch size 1 of N = 100" in batch.statement() and batch.to_dict()["batch_size"] == 1


def test_a_tiny_target_is_calibrated_not_divided_by_zero():
    result = accounting.calibrate_noise_multiplier(target_epsilon=1e-3, target_delta=DELTA, sample_rate=0.01,
                                                   steps=1000)
    assert result.epsilon <= 1e-3
    assert accounting.get_epsilon(sample_rate=0.01, noise_multiplier=result.value, steps=1000,
                                  delta=DELTA).epsilon <= 1e-3


def test_two_stage_calibration_says_so_and_delta_names_its_tail():
    result = accounting.calibrate_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.05,
                                                   steps=1000, client_sample_rate=0.1)
    assert "Two-stage sampling" in result.statement()
    delta = accounting.get_delta(epsilon=4.2642, sample_rate=0.05, noise_multiplier=1.0, steps=1000,
                                 client_sample_rate=0.1)
    assert delta.client_tail == 1e-12 and "probability ≤ 1e-12" in delta.statement()


def test_rates_typed_with_few_digits_are_read_as_whole_batches():
    typed = accounting.get_epsilon(sample_rate=0.0042667, noise_multiplier=1.0, steps=7050, delta=DELTA,
                                   sampling="fixed_size", dataset_size=60_000)
    exact = accounting.get_epsilon(sample_rate=256 / 60_000, noise_multiplier=1.0, steps=7050, delta=DELTA,
                                   sampling="fixed_size", dataset_size=60_000)
    assert typed.segments[0].sample_rate == 256 / 60_000 and typed.epsilon == exact.epsilon
    poisson = accounting.get_epsilon(sample_rate=1 / 235, noise_multiplier=1.0, steps=7050, delta=DELTA,
                                     dataset_size=60_000)  # Opacus: q = 1/len(loader); N is not needed
    assert poisson.segments[0].sample_rate == 1 / 235


def test_shuffle_epochs_are_a_data_loaders_length_when_n_is_known():
    """60 000 records in batches of 256: 235 steps per epoch (the last batch smaller), so 7050 steps are 30 epochs
    (⌊1/q⌋ = 234 would count 31)."""
    known = accounting.get_epsilon(sample_rate=256 / 60_000, noise_multiplier=1.0, steps=7050, delta=DELTA,
                                   sampling="shuffle", neighboring_relation="replace_one", dataset_size=60_000)
    unknown = accounting.get_epsilon(sample_rate=256 / 60_000, noise_multiplier=1.0, steps=7050, delta=DELTA,
                                     sampling="shuffle", neighboring_relation="replace_one")
    assert known.participations == 30 and unknown.participations == 31 and known.epsilon < unknown.epsilon
    assert "joins 30 batches" in known.statement()


def test_lower_convex_hull_in_e_to_the_epsilon_without_overflow():
    """The hull of §3b is taken in x = e^ε from exponent differences, so ε beyond 709 does not overflow."""
    rng = np.random.default_rng(3)
    epsilons = np.arange(300) * 0.05
    values = np.exp(-epsilons) + rng.uniform(0, 0.02, 300)
    hull = sampling._lower_convex_hull(epsilons, values)
    slopes = np.diff(hull) / np.diff(np.exp(epsilons))
    assert np.all(hull <= values + 1e-15) and np.all(np.diff(slopes) >= -1e-9)
    assert np.any(hull == values)
    shifted = sampling._lower_convex_hull(epsilons + 800.0, values)  # e^800 overflows a float
    assert np.all(np.isfinite(shifted)) and np.allclose(shifted, hull, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("q, sigma, spacing", [(0.01, 1.27, 2.7e-3), (0.0016, 1.27, 1.3e-3), (0.02, 0.8, 1e-3),
                                               (0.3, 2.0, 1e-4), (1.0, 1.0, 1e-3), (0.5, 0.3, 1e-2)])
def test_closed_form_poisson_step_is_dp_accountings_connect_the_dots_pld(q, sigma, spacing):
    """The hand-written Poisson step (closed-form inverse of the privacy loss) against dp-accounting's
    from_gaussian_mechanism, after 1 and 193 compositions: ε at δ = 1e-6 and δ at ε where δ ≥ 1e-9."""
    from dp_accounting.pld import privacy_loss_distribution

    ours = sampling._poisson_step.__wrapped__(q, sigma, spacing)
    theirs = privacy_loss_distribution.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                                               value_discretization_interval=spacing)
    for steps in (1, 193):
        mine, reference = ours.self_compose(steps), theirs.self_compose(steps)
        assert mine.get_epsilon_for_delta(1e-6) == pytest.approx(reference.get_epsilon_for_delta(1e-6), rel=1e-8,
                                                                 abs=1e-12)
        for epsilon in (0.05, 0.5, 2.0):
            expected = reference.get_delta_for_epsilon(epsilon)
            if expected >= 1e-9:
                assert mine.get_delta_for_epsilon(epsilon) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("q, sigma", [(3.27e-3, 0.21), (0.5, 1.0), (1.0, 0.8), (1e-6, 2.0), (0.01, 1.1), (0.2, 0.05)])
def test_closed_form_poisson_profiles_are_the_mixtures(q, sigma):
    """The Poisson pair's closed-form profiles (two log-Φ a point) against the generic two-component mixture's
    (three log-Φ and a log-sum-exp), on losses from -60 to 60: the same numbers to rounding."""
    pair = sampling._PoissonPair(q, sigma)
    losses = np.linspace(-60.0, 60.0, 40_001)
    for closed, generic in ((pair.remove_profile, sampling._GaussianMixture.remove_profile),
                            (pair.add_profile, sampling._GaussianMixture.add_profile)):
        mine, reference = closed(losses), generic(pair, losses)
        assert np.all(np.isfinite(mine)) and np.all(mine >= 0)
        assert np.abs(mine - reference).max() < 1e-14
        # relative agreement too, except where both forms cancel (q = 1: terms near 1, their difference near 1e-16)
        large = reference > (1e-200 if q < 1 else 1e-12)
        assert np.abs(mine[large] / reference[large] - 1).max() < 1e-9
    # where the remove pair's loss has no root (ε ≤ log(1 - q)) the profile is 1 - e^ε, and the add pair's is 0
    # above -log(1 - q), the largest loss of Q against P
    if q < 1:
        below = math.log1p(-q) - 0.5
        assert pair.remove_profile(np.array([below]))[0] == pytest.approx(-math.expm1(below), rel=1e-11)
        assert pair.add_profile(np.array([-math.log1p(-q) + 1e-3]))[0] == 0.0


@pytest.mark.parametrize("q", [0.5, 1.0, 1e-3])
def test_closed_form_poisson_profiles_do_not_overflow_on_wide_grids(q):
    # σ = 0.02 puts the grid's ends near ±1 700, where e^ε overflows: the profiles stay finite (no warning, no NaN
    # reaching the composition), 0 far up the remove side and 1 - e^ε far down the add side, as the mixture's are
    import warnings

    pair = sampling._PoissonPair(q, 0.02)
    losses = np.linspace(-2000.0, 2000.0, 80_001)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        remove, add = pair.remove_profile(losses), pair.add_profile(losses)
    assert np.all(np.isfinite(remove)) and np.all(np.isfinite(add))
    assert add[losses < -1500] == pytest.approx(1.0, abs=1e-11)  # 1 - e^ε, nudged up 1e-12 against rounding
    # far up the remove side, against the amplification identity δ(ε) = q δ_G(log(1 + (e^ε - 1)/q)) with the
    # Gaussian profile δ_G(e) = Φ(-eσ + 1/(2σ)) - e^e Φ(-eσ - 1/(2σ)), in mpmath at 60 digits
    mpmath.mp.dps = 60
    sigma = mpmath.mpf("0.02")
    for epsilon in (1200.0, 1500.0, 1700.0):
        inner = mpmath.log(1 + (mpmath.e**epsilon - 1) / q)
        expected = q * (mpmath.ncdf(-inner * sigma + 1 / (2 * sigma))
                        - mpmath.e**inner * mpmath.ncdf(-inner * sigma - 1 / (2 * sigma)))
        index = int(np.argmin(np.abs(losses - epsilon)))
        assert remove[index] == pytest.approx(float(expected), rel=1e-8)
    inside = np.abs(losses) < 700  # where the generic mixture's own arithmetic does not overflow
    with np.errstate(all="ignore"):
        generic_remove = sampling._GaussianMixture.remove_profile(pair, losses[inside])
        generic_add = sampling._GaussianMixture.add_profile(pair, losses[inside])
    assert np.abs(remove[inside] - generic_remove).max() < 1e-14
    if q < 1:
        assert np.abs(add[inside] - generic_add).max() < 1e-14
    else:  # the Gaussian pair is symmetric; the generic form rounds e^-ε - 1 + 1 to 0 above ε ≈ 37 and reads 0 there
        assert np.abs(add - remove).max() < 1e-12
    # and the accountant answers: the Gaussian mechanism (q = 1) at σ = 0.02 has ε(1e-5) = 1462.28501596 (the
    # root of δ(ε) = Φ(-εσ + 1/(2σ)) - e^ε Φ(-εσ - 1/(2σ)) in mpmath at 50 digits); the PLD bound is at or above it
    if q == 1.0:
        result = accounting.get_epsilon(delta=1e-5, sample_rate=1.0, noise_multiplier=0.02, steps=1)
        assert result.accountant == "pld" and 1462.28501596 <= result.epsilon <= 1462.28501596 * (1 + 1e-6)
