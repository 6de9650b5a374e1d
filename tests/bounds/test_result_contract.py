"""The result contract of bounds.theorem.TheoremResult, walked over every theorem-backed public function.

Each function is called on random inputs on both sides of its hypotheses. The contract: the value is a finite
number even when a hypothesis fails; ``valid`` is False and ``guarantee`` is "no guarantee" exactly when a
recorded hypothesis fails, and the test decides which hypotheses fail with its own arithmetic, not the library's;
``source`` cites the paper by arXiv id or DOI; ``to_dict()`` survives a strict JSON round trip and carries
``valid``, ``guarantee``, ``source``, ``variant`` and ``notes``. The changed values are recomputed from the
printed formulas.

Functions of bounds/ that give a number but are not walked here, and why:
accountant results (bounds.accounting, pld, rdp, rdp_without_replacement, sampling, composition, MAPA's
composition_totals) carry their own AccountingResult/CalibrationResult; pure arithmetic helpers (schedules
T = ⌊epochs·N/L⌋, q = L/N, sensitivities, learning rates and their caps, P and T_s of MAPA, the dampening functions,
filters and quantiles of Kardam, sample-size sequences without hypotheses) state no theorem's conclusion.
The walk continues in test_result_contract_vandijk_kardam.py (van Dijk's theorem3, r_constant, r0_of_sigma,
select_parameters; Kardam's steps_to_target, accept_ratio_bounds, remark2_window) and test_result_contract_xu_zhou.py
(Xu's theorem2, certificate, paper_epsilon_for_noise, paper_noise_for_epsilon, proposition1_min_steps; Zhou's
constants and choices). Plain on purpose: mapa.learning_rate_conditions (it returns the hypotheses themselves), Zhou's
laplace_bound/gaussian_bound (U(T, b) from constants that already carry the hypotheses), replies_per_client, step_size
and aggregated_noise_variance (arithmetic on the setting).
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.bounds import adp2sgd, byzantine, dpscd, fedsgd_dpc, kardam, mapa, vandijk
from fedplan.bounds import vandijk_sequences as sequences

FAST = settings(max_examples=60, deadline=None)
VARIANT_NAMES = (None, "paper", "corrected", "paper_log")


def assert_contract(result, value, *, expect_valid: bool) -> dict:
    """The contract on one result whose headline number is ``value``; returns its JSON round trip."""
    assert isinstance(value, (int, float)) and math.isfinite(value)
    assert result.valid is expect_valid, [h for h in result.hypotheses if not h.holds]
    assert result.valid is all(h.holds for h in result.hypotheses)
    assert result.guarantee == ("guarantee" if expect_valid else "no guarantee")
    assert "arXiv:" in result.source or "doi:" in result.source, result.source
    assert result.variant in VARIANT_NAMES and all(isinstance(note, str) and note for note in result.notes)
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["valid"] is expect_valid and data["guarantee"] == result.guarantee
    assert data["source"] == result.source and data["variant"] == result.variant and data["notes"] == list(result.notes)
    return data


# ---------------------------------------------------------------- DP-SCD (Damaskinos Theorem 7)

@given(mu=st.floats(0.1, 10), lam=st.floats(1e-3, 10), n=st.integers(1, 1000), share=st.floats(0, 1),
       kappa=st.floats(0, 0.9), steps=st.integers(0, 10**5), s0=st.floats(0, 10), clip=st.floats(0.01, 2),
       sigma=st.floats(0, 20))
@FAST
def test_dpscd_suboptimality_bound(mu, lam, n, share, kappa, steps, s0, clip, sigma):
    batch = max(1, round(share * n))
    result = dpscd.suboptimality_bound(initial_suboptimality=s0, mu=mu, nu=1.0, regularization=lam, examples=n,
                                       batch_size=batch, clipping_norm=clip, noise_multiplier=sigma, steps=steps,
                                       kappa=kappa)
    valid = mu * lam > 1 and batch * (2 * (1 - kappa) * mu * lam - 1) > mu * lam * n  # Theorem 7, L1498
    assert_contract(result, result.bound, expect_valid=valid)
    rate = (1 - kappa) * mu * lam * batch / (mu * lam * n + batch)
    nu_prime = 1 / n + 1 / (lam * n**2)
    expected = (1 - rate) ** steps * s0 + 0.5 * nu_prime * batch * 2 * clip**2 * sigma**2 * (
        1 - (1 - rate) ** steps) / rate
    assert result.bound == pytest.approx(expected, rel=1e-6, abs=1e-12)
    assert any("DPSCD-A22" in note for note in result.notes) is not valid


def test_dpscd_msd_bound_is_shown_without_guarantee():
    # MSD ridge (spec §5.5): 50.4 corrected, and μλ = 1e-4 fails Theorem 7's μλ > 1
    result = dpscd.suboptimality_bound(initial_suboptimality=0.0, mu=1, nu=1, regularization=1e-4, examples=347_786,
                                       batch_size=1000, clipping_norm=0.1, noise_multiplier=14.2233, steps=17_389)
    data = assert_contract(result, result.bound, expect_valid=False)
    assert result.bound == pytest.approx(50.4, rel=5e-3) and data["hypotheses"][0]["detail"] == "0.0001 > 1"


@pytest.mark.parametrize("accountant", ["ma128", "rdp"])
def test_dpscd_calibration(accountant):
    result = dpscd.calibrate_noise(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=100,
                                   accountant=accountant)
    assert_contract(result, result.noise_multiplier, expect_valid=True)
    assert result.variant == ("paper" if accountant == "ma128" else "corrected") and "Eq. 6.2" in result.source


# ---------------------------------------------------------------- van Dijk et al.: Lemma 3 and Theorem 5

@given(t=st.floats(1, 1e6), alpha=st.floats(1, 50), n=st.floats(0, 10), mu=st.floats(0.01, 10),
       tau=st.floats(0, 1000), lip=st.floats(0.01, 10))
@FAST
def test_lemma3_rate_bound(t, alpha, n, mu, tau, lip):
    result = sequences.lemma3_rate_bound(t=t, alpha=alpha, N=n, mu=mu, tau_t=tau, L=lip)
    envelope_holds = t > math.e and tau <= math.sqrt(t / math.log(t) * (1 - 1 / math.log(t)))
    assert_contract(result, result.value, expect_valid=alpha >= 12 and envelope_holds)  # L725, L707
    expected = 8 * alpha**2 * n / mu**2 * t / (t + 2 * max(tau, 2 * lip * alpha / mu) - 1) ** 2
    assert result.value == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert any(note.startswith("I-13") for note in result.notes)


def test_lemma3_alpha_below_12_is_no_guarantee():
    below = sequences.lemma3_rate_bound(t=1e4, alpha=10, N=1, mu=1, tau_t=1, L=0.01)
    assert_contract(below, below.value, expect_valid=False)
    assert [h.holds for h in below.hypotheses] == [False, True] and below.hypotheses[0].detail == "10 >= 12"
    at = sequences.lemma3_rate_bound(t=1e4, alpha=12, N=1, mu=1, tau_t=1, L=0.01)
    assert_contract(at, at.value, expect_valid=True)
    assert at.value == pytest.approx(8 * 144 * 1e4 / (1e4 + 2 * 1 - 1) ** 2)


@given(t=st.floats(1, 1e6), m0=st.floats(1.001, 1e4), m1=st.floats(0, 100), n=st.floats(0, 10), mu=st.floats(0.01, 10))
@FAST
def test_theorem5_rate_bound(t, m0, m1, n, mu):
    result = sequences.theorem5_rate_bound(t=t, N=n, mu=mu, M0=m0, M1=m1)
    assert_contract(result, result.value, expect_valid=t >= max(m0, math.e**2))  # L739
    expected = 8 * 36**2 * n / mu**2 * t / (t + 2 * m1 + math.sqrt((m0 + t) / math.log(m0 + t)) - 1) ** 2
    assert result.value == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert {note[:4] for note in result.notes} == {"I-13", "I-11"}


def test_vandijk_theorem4_regimes_and_the_gap():
    common = dict(p=1, sigma=5, epsilon=2, delta=1e-5, sample_rate=1e-7, client_size=10_000, gamma=0.05)
    low = vandijk.theorem4(grad_computations=1e3, **common)
    assert_contract(low, low.sigma_lower_bound, expect_valid=True)  # σ = 5 >= 1.137 (L191), case 1
    assert "Theorem 4" in low.source and low.notes[0].startswith("I-20")
    gap = vandijk.theorem4(grad_computations=(low.k_minus + low.k_plus) / 2, **common)
    data = json.loads(json.dumps(gap.to_dict(), allow_nan=False))
    assert gap.sigma_lower_bound is None and data["valid"] is False and data["guarantee"] == "no guarantee"
    assert data["hypotheses"][2]["name"].startswith("K <= K- or K >= K+") and not data["hypotheses"][2]["holds"]
    below = vandijk.theorem4(grad_computations=1e3, **(common | {"sigma": 1.1366}))
    assert_contract(below, below.sigma_lower_bound, expect_valid=False)  # 1.13654 <= σ < 1.137 (L191)
    assert not below.hypotheses[0].holds and below.hypotheses[0].detail == "1.1366 >= 1.137"


def test_vandijk_sequences_and_step_sizes_follow_the_contract():
    lemma1 = sequences.lemma1_sequence(gamma=lambda z: 4 * np.log(np.maximum(z, math.e)), g=2.0,
                                       d=0, m=2, rounds=20)
    data = assert_contract(lemma1, float(lemma1.sizes.sum()), expect_valid=lemma1.valid)
    assert data["sizes"] == lemma1.sizes.tolist() and lemma1.variant == "corrected" and "Lemma 1" in lemma1.source
    steps = sequences.theorem5_round_step_sizes(mu=1.0, d=0, m=2, L=1.0, alpha=36.0, rounds=30)
    data = assert_contract(steps, float(steps.step_sizes[0]), expect_valid=steps.valid)
    assert data["step_sizes"] == pytest.approx(steps.step_sizes.tolist()) and "Theorem 5" in steps.source
    small = sequences.theorem5_round_step_sizes(mu=1.0, d=0, m=2, L=1.0, alpha=1.0, rounds=30)
    assert_contract(small, float(small.step_sizes[0]), expect_valid=False)  # μ·a_1 = 36 > α = 1 (L725, L753)
    assert not small.hypotheses[-1].holds and small.hypotheses[-1].detail == "36 <= 1"


# ---------------------------------------------------------------- Kardam (Damaskinos Theorems 4-5)

@given(steps=st.integers(1, 10**6), gap=st.floats(0.01, 100), lip=st.floats(0.1, 10), chi=st.floats(0, 5),
       phi=st.floats(1, 50), d=st.integers(1, 100), sigma=st.floats(0.01, 2), m=st.integers(1, 10),
       radius=st.floats(0, 1), variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_kardam_bound(steps, gap, lip, chi, phi, d, sigma, m, radius, variant):
    result = kardam.kardam_bound(steps=steps, loss_gap=gap, lipschitz=lip, decay_bound=chi, max_adaptive_rate=phi,
                                 dimension=d, gradient_std=sigma, gradients_per_step=m, confinement_radius=radius,
                                 variant=variant)
    gamma = math.sqrt(gap / (lip * steps * m * d * sigma**2))  # Definition 10, L1189
    assert_contract(result, result.bound, expect_valid=gamma * lip * m <= 1)  # prerequisite L1883
    power = 2 if variant == "corrected" else 1
    expected = ((2 + phi) * gamma * lip * d * sigma**2 + gamma**2 * lip**2 * m * chi * phi**power * d * sigma**2
                + d * sigma**2 + 2 * radius * lip * sigma * math.sqrt(d) + lip**2 * radius**2)
    assert result.bound == pytest.approx(expected, rel=1e-12)
    assert result.variant == variant and any(note.startswith("KARDAM-P1") for note in result.notes)
    assert any(note.startswith("KARDAM-P5") for note in result.notes) is not result.valid


def test_kardam_printed_example_and_a_violated_prerequisite():
    example = dict(loss_gap=1.0, lipschitz=1.0, decay_bound=1.134, max_adaptive_rate=49.0, dimension=10,
                   gradient_std=0.1)
    printed = kardam.kardam_bound(steps=10**4, variant="paper", **example)
    assert_contract(printed, printed.bound, expect_valid=True)
    assert printed.bound == pytest.approx(0.26683, abs=5e-6)  # spec §3.4
    violated = kardam.kardam_bound(steps=1, loss_gap=100.0, lipschitz=1.0, decay_bound=1.0, max_adaptive_rate=2.0,
                                   dimension=1, gradient_std=1.0, gradients_per_step=2)
    assert_contract(violated, violated.bound, expect_valid=False)  # γ = √50 = 7.07: γKM = 14.1 > 1
    assert violated.bound == pytest.approx(4 * math.sqrt(50) + 50 * 2 * 4 + 1)


# ---------------------------------------------------------------- Li et al. (AUDP, MAPA)

@given(steps=st.integers(1, 10**6), share=st.floats(0.5, 2.0), gap=st.floats(0, 100), db=st.floats(0, 1e4),
       lip=st.floats(0.01, 100), tau=st.integers(0, 200))
@FAST
def test_li_theorem4_bound(steps, share, gap, db, lip, tau):
    limit = 1 / (2 * lip * (tau + 1))  # Eq. (13), L293
    gamma = share * limit
    result = mapa.theorem4_bound(iterations=steps, learning_rate=gamma, initial_gap=gap, delta_b=db, smoothness=lip,
                                 max_staleness=tau)
    assert_contract(result, result.value, expect_valid=gamma <= limit)
    assert result.max_learning_rate == pytest.approx(limit, rel=1e-14)
    assert result.value == pytest.approx(2 * gap / (steps * gamma) + 2 * db * lip * gamma, rel=1e-12)


@given(steps=st.integers(1, 2000), radius=st.floats(0, 10), grad=st.floats(0, 10), lip=st.floats(0.001, 10),
       tau=st.integers(0, 20), db=st.floats(0, 100), variant=st.sampled_from(mapa.THEOREM2_VARIANTS))
@FAST
def test_li_theorem2_bound(steps, radius, grad, lip, tau, db, variant):
    result = mapa.theorem2_bound(iterations=steps, radius=radius, gradient_bound=grad, smoothness=lip,
                                 max_staleness=tau, delta_b=db, variant=variant)
    rates = [1 / (lip * (tau + 1) + math.sqrt((db + 1) * t)) for t in range(1, steps + 1)]  # Eq. (10), L227
    valid = rates[0] < 1 / lip  # L213
    if variant == "paper":  # Eq. (26), L723 (false as printed: erratum LI-6)
        valid = valid and math.fsum(g * g for g in rates) <= math.log(steps) / (db + 1)
    assert_contract(result, result.value, expect_valid=valid)
    assert result.variant == variant and result.value == pytest.approx(sum(result.terms.values()), rel=1e-12)
    assert any("LI-6" in note for note in result.notes)


def test_li_eq26_sum_beyond_the_exact_terms_is_an_upper_bound_within_one_term(monkeypatch):
    flat = dict(smoothness=0.01, max_staleness=0, delta_b=3.0)
    exact = math.fsum(1 / (0.01 + 2 * math.sqrt(t)) ** 2 for t in range(1, 5001))
    monkeypatch.setattr(mapa, "EXACT_SUM_TERMS", 64)
    bounded = mapa.eq26_sum_of_squared_steps(iterations=5000, **flat)
    assert exact <= bounded <= exact + 1 / (0.01 + 2 * math.sqrt(64)) ** 2


@given(sigma=st.floats(0.01, 100), b=st.integers(1, 500), ratio=st.floats(0.01, 3.0))
@FAST
def test_li_theorem3_failure_probability(sigma, b, ratio):
    result = mapa.theorem3_failure_probability(sigma=sigma, batch_size=b, sensitivity=2 * sigma / (b * ratio))
    u = (2 * sigma / (b * result.sensitivity)) ** 2  # Eq. (12), L279
    assert_contract(result, result.failure_probability, expect_valid=u < 1)
    assert result.failure_probability == (pytest.approx(u * (2 - u), rel=1e-9) if u < 1 else 1.0)
    forward = mapa.theorem3_sensitivity(sigma=sigma, batch_size=b, delta=min(max(ratio / 3, 1e-9), 0.999))
    assert_contract(forward, forward.sensitivity, expect_valid=True)


@given(sensitivity=st.floats(0.01, 100), epsilon=st.floats(0.01, 10), dim=st.one_of(st.none(), st.integers(1, 1000)),
       noise_model=st.sampled_from(mapa.NOISE_MODELS))
@FAST
def test_li_laplace_noise(sensitivity, epsilon, dim, noise_model):
    if noise_model == "corrected" and dim is None:
        dim = 1
    result = mapa.laplace_noise(sensitivity=sensitivity, epsilon=epsilon, noise_model=noise_model, model_dim=dim)
    assert_contract(result, result.scale, expect_valid=noise_model == "corrected" or dim is None or dim == 1)
    scale = sensitivity / epsilon  # L141, L166
    moment = 2 * scale**2 if noise_model == "paper" else dim * (dim + 1) * scale**2  # L744 / erratum LI-1
    assert result.scale == pytest.approx(scale) and result.second_moment == pytest.approx(moment)
    assert result.variant == noise_model


def test_li_schedule_follows_the_contract():
    common = dict(epsilon=0.1, delta=1e-3, sigma=30.0, batch_size=12, smoothness=10.0, max_staleness=5, theta=0.5,
                  iterations=1000, initial_gap=1.0, num_edges=5)
    paper = mapa.mapa_schedule(noise_model="paper", **common)
    assert_contract(paper, float(paper.iterations), expect_valid=True)
    assert paper.iterations == 1000 and paper.variant == "paper"
    flagged = mapa.mapa_schedule(noise_model="paper", model_dim=10, **common)
    assert_contract(flagged, float(flagged.iterations), expect_valid=False)  # LI-1: 2λ² only for N = 1


# ---------------------------------------------------------------- Byzantine tolerance (Damaskinos ch. 4-5)

@given(n=st.integers(1, 10**6), rule=st.sampled_from(byzantine.RULES))
@FAST
def test_byzantine_tolerance(n, rule):
    a, b, _ = byzantine.REQUIREMENTS[rule]
    if n < b:
        with pytest.raises(ValueError, match=f"workers must be >= {b}"):
            byzantine.max_byzantine(workers=n, rule=rule)
        return
    result = byzantine.max_byzantine(workers=n, rule=rule)
    assert_contract(result, result.max_faults, expect_valid=True)
    if a is None:
        assert result.max_faults == 0
    else:
        assert a * result.max_faults + b <= n < a * (result.max_faults + 1) + b
    assert any(note.startswith("KARDAM-N") for note in result.notes) is rule.startswith("kardam")


def test_bulyan_printed_setting():
    result = byzantine.max_byzantine(workers=19, rule="bulyan")  # L931: n = 19 tolerates f = 4
    data = assert_contract(result, result.max_faults, expect_valid=True)
    assert result.max_faults == 4 and data["hypotheses"][0]["detail"] == "19 >= 19"


# ---------------------------------------------------------------- Zhou et al. (Theorem 2, Eq. (5))

@given(rounds=st.integers(1, 500), clients=st.integers(1, 10), epsilon=st.floats(0.05, 10), q=st.floats(0.001, 1.0),
       c1=st.one_of(st.none(), st.floats(0.1, 1e4)), variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_zhou_gaussian_noise(rounds, clients, epsilon, q, c1, variant):
    common = dict(rounds=rounds, clients_per_round=clients, num_clients=10, client_size=6000, epsilon=epsilon,
                  delta=1e-5, clipping_norm=10.0, sample_rate=q)
    result = fedsgd_dpc.gaussian_noise(**common, c2=2.0, c1=c1, variant=variant)
    data = assert_contract(result, result.std, expect_valid=False)  # c2 is never a proven constant (Z-7)
    replies = rounds * clients / 10 if variant == "paper" else math.ceil(rounds * clients / 10)
    assert result.std == pytest.approx(2.0 * 10.0 * math.sqrt(replies * math.log(1e5)) / (6000 * epsilon), rel=1e-12)
    precondition = data["hypotheses"][2]
    assert precondition["name"] == "epsilon < c1 q^2 T"  # L222, erratum Z-8
    assert precondition["holds"] is (c1 is not None and epsilon < c1 * q * q * rounds)
    assert [note[:3] for note in result.notes] == ["Z-7", "Z-8"]


def test_zhou_gaussian_noise_from_the_accountant_is_a_guarantee():
    result = fedsgd_dpc.gaussian_noise_accountant(rounds=100, clients_per_round=10, num_clients=10, client_size=6000,
                                                  epsilon=0.5, delta=1e-5, clipping_norm=10.0, sample_rate=0.01,
                                                  accountant="rdp")
    assert_contract(result, result.std, expect_valid=True)
    assert result.epsilon_certified <= 0.5 and "Eq. (5)" in result.source


@given(rounds=st.integers(1, 500), clients=st.integers(1, 10), epsilon=st.floats(0.05, 10),
       variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_zhou_laplace_noise(rounds, clients, epsilon, variant):
    result = fedsgd_dpc.laplace_noise(rounds=rounds, clients_per_round=clients, num_clients=10, client_size=6000,
                                      epsilon=epsilon, clipping_norm=1.0, variant=variant)
    most = math.ceil(rounds * clients / 10)  # round robin (erratum Z-1)
    replies = rounds * clients / 10 if variant == "paper" else most
    assert_contract(result, result.scale, expect_valid=most <= replies)
    assert result.scale == pytest.approx(2 * 1.0 / 6000 * replies / epsilon, rel=1e-12)  # s_i = 2Rξ₁/(d_i ε_i), L200


@given(rounds=st.integers(0, 10**4), clients=st.integers(1, 10), noise=st.floats(0, 1e3))
@FAST
def test_zhou_bound_terms(rounds, clients, noise):
    problem = fedsgd_dpc.Problem(num_clients=10, model_dim=7840, client_sizes=6000, strong_convexity=10.0,
                                 smoothness=10.5, gradient_bound=18.0, heterogeneity=0.1, initial_distance=5.0)
    result = fedsgd_dpc.bound_terms(problem=problem, rounds=rounds, clients_per_round=clients, noise_variance=noise)
    assert_contract(result, result.total, expect_valid=True)  # equal d_i: L250's d_1 = ... = d_N holds
    omega0 = 2 * (10 - clients) / 9 * 18.0**2 / clients + 2 * 10.5 * 0.1  # L298
    gamma = 2 * 10.5 / 10.0  # γ = 2λ/μ, L296
    expected = (4 / 10.0**2 * (omega0 + noise) + gamma * 5.0) / (rounds + gamma)  # U(T, b), L314
    assert result.total == pytest.approx(expected, rel=1e-12) and "Theorem 3" in result.source


# ---------------------------------------------------------------- Xu et al. (Theorem 1)

@given(eta=st.floats(1e-7, 1e-1), batch=st.integers(1, 64), steps=st.integers(1, 10**6), tau=st.integers(0, 16),
       rho=st.floats(0, 0.9), sigma=st.floats(0, 1))
@FAST
def test_xu_theorem1_bound(eta, batch, steps, tau, rho, sigma):
    problem = adp2sgd.Problem(smoothness=1, initial_gap=2.3, variance=1, dissimilarity=0.1, dimension=100)
    topology = adp2sgd.Topology(workers=16, rho=rho)
    result = adp2sgd.theorem1_bound(problem=problem, topology=topology, learning_rate=eta, batch_size=batch,
                                    steps=steps, staleness=tau, noise_std_sum=sigma)
    c1 = 1 - 24 * (eta * batch) ** 2 * (tau * 15 / 16 + topology.rho_bar)  # L151 with L = 1, K = 16
    data = assert_contract(result, result.value, expect_valid=all(h.holds for h in result.hypotheses))
    assert data["hypotheses"][0]["holds"] is (c1 > 0) and (c1 > 0 or not result.valid)
    expected = (2 * 2.3 * 16 / (eta * steps * batch) + 2 * eta * 1 / 16 + 12 * eta * 0.1 * batch / 16
                + 2 * eta * 100 * sigma**2 / (batch * 16))  # L147
    assert result.value == pytest.approx(expected, rel=1e-12)
