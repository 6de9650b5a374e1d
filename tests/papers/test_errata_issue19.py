"""Errata fedplan relies on that docs/ERRATA.md did not record (issue 19, item 3): XU-8, I-43, LI-17 … LI-26.

Each test computes the value it expects independently (closed forms written out here, exact enumeration,
an explicit run, or another accountant) and fails if fedplan followed the paper's printed reading.
"""

import itertools
import math

import dp_accounting
import dp_accounting.rdp
import numpy as np
import pytest
from scipy import stats

from fedplan.bounds import accounting, mapa
from fedplan.bounds import adp2sgd as x
from fedplan.bounds import vandijk as v

# ---------------------------------------------------------------- XU-8: Remark 1 (xu L179)

CIFAR = x.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
GAMMA = 256 / (16 * 3125)
LOG_INV_DELTA = math.log(1e5)


def _paper_certificate(steps, z):
    """Theorem 2 with the best μ written out (spec §3.6-3.7): ρ = 5tγ²/z², α = min(1 + √(Λ/ρ), α_max)."""
    rho = 5 * steps * GAMMA**2 / z**2
    alpha_max = math.log(1 / (GAMMA * (1 + z**2)))
    alpha = min(1 + math.sqrt(LOG_INV_DELTA / rho), alpha_max)
    return rho * alpha + LOG_INV_DELTA / (alpha - 1)


# spec §3.7 (remark1.out), CIFAR, z = 2: t/T, claim √(t/T)ε, Theorem 2 re-optimised within Lemma 2's range
REMARK1_TABLE = [(0.5, 8.007, 7.838), (0.25, 5.662, 6.079), (0.1, 3.581, 5.024), (0.01, 1.132, 4.390)]


@pytest.mark.parametrize(("share", "claim", "certified"), REMARK1_TABLE)
def test_xu8_remark1_claim_against_the_paper_certificate(share, claim, certified):
    step = round(share * CIFAR.steps)  # the spec used t = share·T unrounded: its digits move by < 6e-5
    result = x.remark1(setting=CIFAR, step=step, noise_to_sensitivity=2, variant="paper")
    assert result.epsilon == pytest.approx(11.3231802539, rel=1e-10) == _paper_certificate(CIFAR.steps, 2)
    assert result.claimed_epsilon == pytest.approx(claim, abs=1e-3)
    assert result.claimed_epsilon == pytest.approx(math.sqrt(step / CIFAR.steps) * 11.3231802539, rel=1e-10)
    assert result.certified_epsilon == pytest.approx(certified, abs=1e-3)
    assert result.certified_epsilon == pytest.approx(_paper_certificate(step, 2), rel=1e-12)
    claim_check = result.hypotheses[-1]
    assert claim_check.name.startswith("claimed eps_t >= certified eps_t")
    assert claim_check.holds is (share == 0.5) and result.valid is (share == 0.5)
    assert all(item.holds for item in result.hypotheses[:-1])  # Lemma 2's conditions hold: only the claim fails


def test_xu8_remark1_fails_because_of_lemma2s_order_cap():
    """At t = T/100 the order sits on Lemma 2's cap α_max, which does not depend on t; without the cap the
    bound would be ρ_t + 2√(ρ_t Λ) = 0.960 below the claim 1.132 (spec §3.7, last column)."""
    step = 586
    result = x.remark1(setting=CIFAR, step=step, noise_to_sensitivity=2, variant="paper")
    alpha_max = math.log(1 / (GAMMA * 5))
    assert result.certificate.constrained and result.certificate.alpha == pytest.approx(alpha_max, rel=1e-14)
    assert result.certified_epsilon > LOG_INV_DELTA / (alpha_max - 1) == pytest.approx(4.31978, abs=1e-5)
    rho = 5 * step * GAMMA**2 / 4
    unconstrained = rho + 2 * math.sqrt(rho * LOG_INV_DELTA)
    assert unconstrained == pytest.approx(0.960, abs=1e-3) and unconstrained < result.claimed_epsilon


def test_xu8_corrected_envelope_also_fails_the_claim():
    """fedplan's corrected certificate (the envelope over z' ≤ z, XU-3) at t = 586 is Theorem 2 at z' = √1.5
    (the largest α_max): 3.65136, lower than the paper's 4.3902 and still above the claim 1.1324."""
    result = x.remark1(setting=CIFAR, step=586, noise_to_sensitivity=2)
    grid = [_paper_certificate(586, z) for z in np.linspace(math.sqrt(1.5), 2, 2001)]
    assert result.certified_epsilon == pytest.approx(_paper_certificate(586, math.sqrt(1.5)), rel=1e-9)
    assert result.certified_epsilon == pytest.approx(min(grid), rel=1e-9)
    assert result.certified_epsilon == pytest.approx(3.65136, abs=1e-5)
    assert result.epsilon == pytest.approx(11.3231802539, rel=1e-10)  # at T the envelope is z itself
    assert not result.valid and result.variant == "corrected" and result.notes[0].startswith("XU-8: ")


def test_xu8_remark1_from_a_budget_holds_at_the_last_step_only():
    noise = x.paper_noise_for_epsilon(setting=CIFAR, target_epsilon=10)
    last = x.remark1(setting=CIFAR, step=CIFAR.steps, epsilon=10)
    assert last.noise_to_sensitivity == noise.noise_to_sensitivity and last.epsilon == 10
    assert last.claimed_epsilon == 10 and last.certified_epsilon <= 10 and last.valid
    early = x.remark1(setting=CIFAR, step=CIFAR.steps // 100, epsilon=10)
    assert early.claimed_epsilon == pytest.approx(math.sqrt(585 / 58594) * 10, rel=1e-12)
    assert early.certified_epsilon > 3 > early.claimed_epsilon and not early.valid


def test_xu8_the_mechanism_itself_spends_less_than_the_claim():
    """Remark 1 is unproven, not refuted: the tight RDP of the same model (sampling without replacement at γ,
    replace-one, Wang-Balle-Kasiviswanathan Thm 27) gives ε = 0.5267 for the first 586 iterations, below the
    claimed 1.1324; dp-accounting's own accountant (orders 29-31 around the optimum 30) gives the same."""
    result = x.remark1(setting=CIFAR, step=586, noise_to_sensitivity=2)
    accountant = dp_accounting.rdp.RdpAccountant(orders=[29, 30, 31],
                                                 neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    accountant.compose(dp_accounting.SampledWithoutReplacementDpEvent(
        16 * 3125, 256, dp_accounting.GaussianDpEvent(2.0)), 586)
    assert result.tight_epsilon == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-9)
    assert result.tight_epsilon == pytest.approx(0.52673, abs=1e-5) and result.tight_epsilon < result.claimed_epsilon


@pytest.mark.parametrize(("changes", "message"), [
    ({"step": 0}, "step must be an integer in \\[1, 58594\\]; got 0"),
    ({"step": 58595}, "step must be an integer in \\[1, 58594\\]; got 58595"),
    ({"epsilon": 10}, "exactly one of noise_to_sensitivity and epsilon"),
    ({"noise_to_sensitivity": None}, "exactly one of noise_to_sensitivity and epsilon"),
    ({"noise_to_sensitivity": 1.0}, "noise_to_sensitivity=1.0 is outside .*sigma\\^2/Delta\\^2 >= 1.5"),
    ({"noise_to_sensitivity": None, "epsilon": 5}, "epsilon=5 is not certified .*8.34366"),
    ({"noise_to_sensitivity": None, "epsilon": -1}, "epsilon must be a real number in \\(0, inf\\)"),
    ({"variant": "printed"}, "variant must be one of"),
])
def test_xu8_remark1_rejects_bad_input_naming_the_parameter(changes, message):
    with pytest.raises(ValueError, match=message):
        x.remark1(**{"setting": CIFAR, "step": 586, "noise_to_sensitivity": 2, **changes})


# ---------------------------------------------------------------- I-43: van Dijk Theorem 3, case 1 (vandijk L177-185)

VANDIJK = dict(client_size=10_000, sigma=1.5, epsilon=0.5)
CASE1 = [(50, 400), (50, 1600), (100, 200), (100, 400)]  # (s_{i,c}, T): all in Theorem 3's 2/(ρ̂x) branch
CASE1_DELTA = math.exp(-0.5 * 1.5**2 / 2)  # 0.569783


@pytest.mark.parametrize(("size", "rounds"), CASE1)
def test_i43_case1_delta_ignores_the_rates_and_the_rounds(size, rounds):
    """In the 2/(ρ̂x) branch λ is capped at σ² (L1023-1025) and Theorem 3 proves δ = exp(−εσ²/2) = 0.569783,
    whatever q_i = s/N_c and T."""
    result = v.theorem3(sizes=[size] * rounds, **VANDIJK)
    assert result.valid and result.branch == "2/(rho_hat x)"
    assert result.delta == pytest.approx(CASE1_DELTA, rel=1e-12)


def test_i43_the_accountants_delta_grows_with_the_rate_and_the_rounds():
    """The tight δ of the same mechanism (Poisson rate q = s/N_c, σ = 1.5, T rounds, add/remove-one: Theorem 3's
    model; PLD) at ε = 0.5 grows with q and with T, by five orders of magnitude over these four schedules, and
    stays far below the constant 0.569783 Theorem 3 certifies for all of them."""
    deltas = {case: accounting.get_delta(epsilon=0.5, sample_rate=case[0] / 10_000, noise_multiplier=1.5,
                                         steps=case[1]).delta for case in CASE1}
    assert deltas[(50, 400)] < deltas[(50, 1600)] and deltas[(100, 200)] < deltas[(100, 400)]  # more rounds
    assert deltas[(50, 400)] < deltas[(100, 400)]  # a larger rate
    assert deltas[(50, 400)] == pytest.approx(5.93e-11, rel=1e-2)
    assert deltas[(100, 400)] == pytest.approx(4.83e-5, rel=1e-2)
    assert max(deltas.values()) < CASE1_DELTA / 1e4
    # the RDP accountant, a second method: the same ordering, never below the PLD's δ, and below Theorem 3's
    rdp_deltas = {case: accounting.get_delta(epsilon=0.5, sample_rate=case[0] / 10_000, noise_multiplier=1.5,
                                             steps=case[1], accountant="rdp").delta for case in CASE1}
    assert sorted(rdp_deltas, key=rdp_deltas.get) == sorted(deltas, key=deltas.get)
    assert all(deltas[case] <= rdp_deltas[case] < CASE1_DELTA for case in CASE1)


# ---------------------------------------------------------------- LI-17 … LI-26: Li et al. typos (spec T-n)

def test_li17_t1_the_sample_gradient_is_the_unbiased_estimate():
    """T-1 (L114 reversed): ∇F(x, ξ) estimates ∇f(x) with variance σ² (Eq. (2)), so b samples drawn with
    replacement average to variance σ²/b and Δ_b = σ²/b + E‖η‖² (L781). Exact enumeration in one dimension:
    ∇F = ∇f ± σ, plus Laplace noise of scale ΔS/ε (variance 2λ², L744)."""
    sigma, b, sensitivity, epsilon = 3.0, 3, 0.5, 0.2
    means = [np.mean(signs) * sigma for signs in itertools.product((-1.0, 1.0), repeat=b)]
    sampling_variance = float(np.mean(np.square(means)))
    assert sampling_variance == pytest.approx(sigma**2 / b, rel=1e-14)
    noise_variance = stats.laplace(scale=sensitivity / epsilon).var()
    assert mapa.delta_b(sigma=sigma, batch_size=b, sensitivity=sensitivity, epsilon=epsilon,
                        noise_model="paper") == pytest.approx(sampling_variance + noise_variance, rel=1e-14)


def test_li18_t3_the_delay_term_carries_g():
    """T-3 (Lemma 2, L613 prints Rτ_max): each of the τ_max Bregman terms is ≤ RG (Eq. (20) L639), so the
    delay term of Theorem 2 is RGτ_max/T (Lemma 1 L209, Eq. (22) L655); with R = 2, G = 3, τ = 5, T = 100
    it is 0.3, not the printed 0.1."""
    for variant in ("corrected", "paper", "paper_log"):
        bound = mapa.theorem2_bound(iterations=100, radius=2, gradient_bound=3, smoothness=10, max_staleness=5,
                                    delta_b=80.0, variant=variant)
        assert bound.terms["delay"] == pytest.approx(2 * 3 * 5 / 100, rel=1e-15)


def test_li19_t4_theorem2_bounds_the_average_gap_per_term():
    """T-4 (L209, L688 "Σ E f(x_{t+1}) − f(x*)"): the bound is on (1/T)Σ_t (f(x_{t+1}) − f(x*)). Noise-free,
    no staleness, f(x) = x²/2 + 5 from x₁ = R = 1 with the Eq. (10) step: the per-term average is below
    Theorem 2's (corrected) bound, the printed reading
    (f(x*) subtracted once) is 4.952, 60 times the bound 0.0830."""
    steps, offset = 100, 5.0
    point, values = 1.0, []
    for t in range(1, steps + 1):
        point -= mapa.audp_learning_rate(t=t, smoothness=1, max_staleness=0, delta_b=0.0) * point
        values.append(point**2 / 2 + offset)  # f(x_{t+1})
    per_term = sum(value - offset for value in values) / steps
    printed_reading = (sum(values) - offset) / steps
    bound = mapa.theorem2_bound(iterations=steps, radius=1, gradient_bound=1, smoothness=1, max_staleness=0,
                                delta_b=0.0).value
    assert bound == pytest.approx((1 + math.log(steps)) / 200 + 1 / 200 + 1 / 20, rel=1e-14)  # 0.0830
    assert per_term <= bound
    assert printed_reading == pytest.approx(per_term + offset * (steps - 1) / steps, rel=1e-12)
    assert printed_reading == pytest.approx(4.952, abs=1e-3) and printed_reading > 50 * bound


def test_li20_t8_theorem4_covers_the_factor_two_derivation():
    """T-8 (L797 prints ‖a‖² ≤ ‖a−b‖² + ‖b‖², false for a = 2, b = 1): Eq. (31) already uses
    ‖a‖² ≤ 2‖a−b‖² + 2‖b‖², which gives Σγ E‖∇f‖² ≤ 2F₀ + Δ_b T(Lγ² + 2L²γ³τ) (L823). Theorem 4's printed
    2F₀/(Tγ) + 2Δ_bLγ covers that at every γ ≤ 1/(2L(τ+1)); nothing in fedplan uses the printed inequality."""
    a, b = np.array([2.0, 0.0]), np.array([1.0, 0.0])
    assert a @ a > (a - b) @ (a - b) + b @ b and a @ a <= 2 * (a - b) @ (a - b) + 2 * b @ b
    smoothness, tau, gap, delta_b, steps = 10.0, 5, 1.0, 80.555556, 1000
    top = 1 / (2 * smoothness * (tau + 1))
    for gamma in (top, top / 2, top / 10):
        bound = mapa.theorem4_bound(iterations=steps, learning_rate=gamma, initial_gap=gap, delta_b=delta_b,
                                    smoothness=smoothness, max_staleness=tau)
        derived = 2 * gap / (steps * gamma) + delta_b * (smoothness * gamma + 2 * smoothness**2 * gamma**2 * tau)
        assert derived < bound.value == pytest.approx(2 * gap / (steps * gamma) + 2 * delta_b * smoothness * gamma,
                                                      rel=1e-14)


def test_li26_t14_the_radius_term_is_quadratic_in_r():
    """T-14 (Remark 2: R²σ/√(bT) at L241, Rσ/√(bT) at L251, L253): the derivation gives the radius term
    R²L(τ+1)/(2T) + R²√(Δ_b+1)/(2√T), so tripling R multiplies it by 9, not 3."""
    common = dict(iterations=400, gradient_bound=1, smoothness=10, max_staleness=5, delta_b=80.0)
    one, three = (mapa.theorem2_bound(radius=radius, **common).terms["radius"] for radius in (1, 3))
    assert one == pytest.approx(10 * 6 / 800 + 9 / 40, rel=1e-14)
    assert three == pytest.approx(9 * one, rel=1e-14)
