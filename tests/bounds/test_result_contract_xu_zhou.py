"""The result contract (tests/bounds/test_result_contract.py) walked over Xu's Theorem 2 side and Zhou's constants
and choices.

Every function is called on random inputs on both sides of its hypotheses; the test decides validity with its own
arithmetic from the papers' printed conditions (xu L171-173, L508, L145-155, L161; zhou L250, L222) and recomputes
the values from the printed formulas; a printed number is checked where the paper prints one (Zhou's Table I,
L467-472). Xu prints no (ε, σ) pair (its experiments give σ only, L218): its numbers are the spec's vectors
(specs/xu_adp2sgd.md §5.4, derived from the printed formulas).

Plain helpers of bounds.fedsgd_dpc, not walked because they state no theorem's conclusion: ``laplace_bound`` and
``gaussian_bound`` evaluate U(T, b) from constants that carry the hypotheses (their TheoremResult is
:func:`bound_terms` or the constants), ``replies_per_client``, ``step_size`` and ``aggregated_noise_variance`` are
arithmetic of the setting.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from fedplan.bounds import accounting
from fedplan.bounds import adp2sgd as xu
from fedplan.bounds import fedsgd_dpc as zhou
from tests.bounds.test_result_contract import assert_contract

FAST = settings(max_examples=60, deadline=None)
SLOW = settings(max_examples=15, deadline=None)
#: Inputs this close (relative) to a hypothesis' boundary are skipped: there rounding, not arithmetic, decides.
MARGIN = 1e-9


def away(value: float, bound: float, margin: float = MARGIN) -> bool:
    return abs(value - bound) > margin * abs(bound)


# ---------------------------------------------------------------- Xu et al., Theorem 2 (xu L171-175, L508)

@st.composite
def xu_settings(draw):
    workers = draw(st.integers(1, 64))
    examples = draw(st.integers(50, 10**5))
    batch = max(1, min(examples, round(examples * 10 ** draw(st.floats(-4, -0.3)))))
    return xu.Setting(workers=workers, examples_per_worker=examples, batch_size=batch,
                      steps=draw(st.integers(1, 10**5)), delta=10 ** draw(st.floats(-9, -2)))


def paper_certificate(setting: xu.Setting, z):
    """ε = ρα + Λ/(α−1), ρ = 5Tγ²/z² (xu L520-522, Lemma 4 L512), α = min(1+√(Λ/ρ), α_max), α_max =
    log(1/(γ(1+z²))) (L508), or 1+√(Λ/ρ) where α_max ≤ 1 (no order satisfies (7)); ``z`` may be an array."""
    gamma, lam = setting.batch_size / (setting.workers * setting.smallest_dataset), -math.log(setting.delta)
    rho = 5 * setting.steps * gamma**2 / np.square(z)
    cap = -np.log(gamma * (1 + np.square(z)))
    best = 1 + np.sqrt(lam / rho)
    alpha = np.where(cap > 1, np.minimum(best, cap), best)
    return rho * alpha + lam / (alpha - 1)


@given(setting=xu_settings(), epsilon=st.floats(0.05, 50), mu=st.floats(0.01, 0.99), clip=st.floats(0.1, 10),
       variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_xu_theorem2(setting, epsilon, mu, clip, variant):
    k, n, b, t = setting.workers, setting.smallest_dataset, setting.batch_size, setting.steps
    alpha = -math.log(setting.delta) / ((1 - mu) * epsilon) + 1  # L171
    sigma = math.sqrt(20 * clip**2 * t * alpha / (k**2 * n**2 * mu * epsilon))  # L171
    z2 = (sigma * b / (2 * clip)) ** 2  # σ²/Δ², Δ = 2G/B (L518)
    inside = b / (k * n) * (1 + z2)
    assume(away(z2, 1.5) and away(alpha, -math.log(inside)))
    valid = z2 >= 1.5 and alpha <= -math.log(inside) and (variant == "corrected" or b == 1)  # L508; L109 vs L518
    result = xu.theorem2(setting=setting, epsilon=epsilon, mu=mu, clipping_norm=clip, variant=variant)
    assert_contract(result, result.noise_std, expect_valid=valid)
    assert result.noise_std == pytest.approx(sigma, rel=1e-12) and result.noise_std_sum == pytest.approx(b * sigma)
    assert result.variant == variant and [note[:4] for note in result.notes] == ["XU-1", "XU-2"]


@pytest.mark.parametrize("epsilon, sigma, valid", [(16, 0.0119548126015, True), (1, 0.150081082586, False)])
def test_xu_theorem2_spec_vectors(epsilon, sigma, valid):
    cifar = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
    result = xu.theorem2(setting=cifar, epsilon=epsilon, mu=0.5)  # spec TV-P1; ε = 1 fails (7) (L173)
    data = assert_contract(result, result.noise_std, expect_valid=valid)
    assert result.noise_std == pytest.approx(sigma, rel=1e-10) and "arXiv:2008.09246" in data["source"]


@given(setting=xu_settings(), z=st.floats(0.3, 200))
@FAST
def test_xu_certificate(setting, z):
    gamma = setting.batch_size / (setting.workers * setting.smallest_dataset)
    assume(away(z * z, 1.5) and away(gamma * (1 + z * z), math.exp(-1), 1e-6))
    valid = z * z >= 1.5 and gamma * (1 + z * z) < math.exp(-1)  # L508, L528; α_max > 1 (L173)
    result = xu.certificate(setting=setting, noise_to_sensitivity=z)
    assert_contract(result, result.epsilon, expect_valid=valid)
    assert result.epsilon == pytest.approx(float(paper_certificate(setting, z)), rel=1e-12)
    assert result.feasible is valid and {note[:4] for note in result.notes} == {"XU-2", "XU-3"}


@pytest.mark.parametrize("z, epsilon, valid", [(2.0, 11.32318025, True), (1.0, None, False), (9.0, None, False)])
def test_xu_certificate_spec_vectors_and_the_band(z, epsilon, valid):
    cifar = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
    result = xu.certificate(setting=cifar, noise_to_sensitivity=z)  # spec TV-P2; band [1.2247, 8.4173) (spec §4.1)
    assert_contract(result, result.epsilon, expect_valid=valid)
    assert result.epsilon == pytest.approx(epsilon or float(paper_certificate(cifar, z)), rel=1e-8)
    failing = [h.detail for h in result.hypotheses if not h.holds]
    assert failing == {1.0: ["1 >= 1.5"], 9.0: ["0.41984 < 0.367879"], 2.0: []}[z]


def test_xu_certificate_range_and_an_order_within_rounding_of_one():
    cifar = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
    for z in (1e-4, 1e9):  # the accountants' range of noise multipliers (bounds.rdp)
        with pytest.raises(ValueError, match=r"noise_to_sensitivity must be a real number in \[0.001, 1e\+08\]"):
            xu.certificate(setting=cifar, noise_to_sensitivity=z)
    # δ within rounding of 1: α* − 1 = sqrt(Λ/ρ) ≈ 5e-18 is below 1 + ulp, the value ρ + 2 sqrt(ρΛ) is still finite
    whole = xu.Setting(workers=1, examples_per_worker=10**12, batch_size=10**12, steps=10**12, delta=1 - 1e-16)
    result = xu.certificate(setting=whole, noise_to_sensitivity=1e-3)
    rho, lam = 5 * 10**12 / 1e-6, -math.log(1 - 1e-16)
    assert_contract(result, result.epsilon, expect_valid=False)
    assert result.epsilon == pytest.approx(rho + 2 * math.sqrt(rho * lam), rel=1e-15)


@given(setting=xu_settings(), z=st.floats(0.3, 200), variant=st.sampled_from(["paper", "corrected"]))
@SLOW
def test_xu_paper_epsilon_for_noise(setting, z, variant):
    gamma = setting.batch_size / (setting.workers * setting.smallest_dataset)
    band = 2.5 * gamma < math.exp(-1)  # some z satisfies z² >= 1.5 and α_max > 1 (spec §4.1)
    assume(away(z * z, 1.5) and away(gamma * (1 + z * z), math.exp(-1), 1e-6) and away(2.5 * gamma, math.exp(-1)))
    result = xu.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=z, variant=variant)
    if variant == "paper":
        valid = z * z >= 1.5 and gamma * (1 + z * z) < math.exp(-1)
    else:  # the envelope over z' <= z (XU-3): any z above sqrt(1.5) reaches the band when it is not empty
        valid = z * z >= 1.5 and band
    assert_contract(result, result.epsilon, expect_valid=valid)
    used = result.noise_to_sensitivity
    assert used <= z and result.epsilon == pytest.approx(float(paper_certificate(setting, used)), rel=1e-12)
    assert result.variant == variant and (used == z or variant == "corrected")
    if variant == "corrected" and valid:  # no certified z' <= z gives less (a grid of Theorem 2 at z')
        top = min(z, math.sqrt(1 / (math.e * gamma) - 1) * (1 - 1e-9))
        grid = np.geomspace(math.sqrt(1.5) * (1 + 1e-12), top, 2000)
        assert result.epsilon <= float(np.min(paper_certificate(setting, grid))) * (1 + 1e-9)


@given(setting=xu_settings(), target=st.floats(0.5, 50))
@SLOW
def test_xu_paper_noise_for_epsilon(setting, target):
    gamma, lam = setting.batch_size / (setting.workers * setting.smallest_dataset), -math.log(setting.delta)
    assume(away(2.5 * gamma, math.exp(-1)))
    band = 2.5 * gamma < math.exp(-1)
    if band:  # the floor: the least certificate over the band [sqrt(1.5), sqrt(1/(e gamma) - 1)) (spec §4.4)
        grid = np.geomspace(math.sqrt(1.5) * (1 + 1e-12), math.sqrt(1 / (math.e * gamma) - 1) * (1 - 1e-9), 4000)
        floor = float(np.min(paper_certificate(setting, grid)))
        assume(away(target, floor, 1e-3))
    valid = band and target > floor
    result = xu.paper_noise_for_epsilon(setting=setting, target_epsilon=target)
    assert_contract(result, result.noise_to_sensitivity, expect_valid=valid)
    theorem = result.theorem
    alpha = lam / ((1 - result.mu) * theorem.epsilon) + 1  # L171
    z2 = 5 * setting.steps * gamma**2 * alpha / (result.mu * theorem.epsilon)  # σ²/Δ², spec §4.2
    assert result.noise_to_sensitivity == pytest.approx(math.sqrt(z2), rel=1e-12)
    if valid:  # the delivered noise is certified within the target
        assert float(paper_certificate(setting, result.noise_to_sensitivity)) <= target * (1 + 1e-9)
        assert result.certified_epsilon <= target * (1 + 1e-9) and result.reason == ""
    else:  # Theorem 2 at the unconstrained best mu* = 1 + a - sqrt(a(1 + a)), a = log(1/delta)/eps (spec §4.3)
        a = lam / target
        assert theorem.epsilon == target and result.mu == pytest.approx(1 + a - math.sqrt(a * (1 + a)), rel=1e-12)
        assert result.reason.split(":")[0] in ("some noise level is certified",
                                               "target epsilon >= the smallest epsilon Theorem 2 certifies (floor)")


def test_xu_paper_noise_below_the_printed_floor():
    cifar = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
    below = xu.paper_noise_for_epsilon(setting=cifar, target_epsilon=8.3436)  # floor 8.3436582 (spec §4.4)
    data = assert_contract(below, below.noise_to_sensitivity, expect_valid=False)
    assert data["hypotheses"][1] == {"name": "target epsilon >= the smallest epsilon Theorem 2 certifies (floor)",
                                     "holds": False, "detail": "8.3436 >= 8.34366", "source": "xu L171-173; spec §4.4"}
    assert "arXiv:2008.09246" in data["floor"]["source"] and data["floor"]["epsilon"] == pytest.approx(8.3436582)
    tiny = xu.paper_noise_for_epsilon(setting=cifar, target_epsilon=1e-6)  # the formula at mu*: z = 1.88e7
    a = math.log(1e5) / 1e-6
    mu = 1 + a - math.sqrt(a * (1 + a))
    z = math.sqrt(7.68003 * (math.log(1e5) / ((1 - mu) * 1e-6) + 1) / (mu * 1e-6))  # 5 T gamma^2 alpha/(mu eps)
    assert not tiny.valid and tiny.noise_to_sensitivity == pytest.approx(z, rel=1e-5)
    with pytest.raises(ValueError, match=r"target_epsilon=1e-07 is too small: .* noise_to_sensitivity 1.88e\+08"):
        xu.paper_noise_for_epsilon(setting=cifar, target_epsilon=1e-7)  # beyond the accountants' 1e8
    above = xu.paper_noise_for_epsilon(setting=cifar, target_epsilon=10)
    assert_contract(above, above.noise_to_sensitivity, expect_valid=True)
    assert above.noise_to_sensitivity == pytest.approx(2.23314, rel=1e-5)  # spec TV-P3


def constants_at(lip, k, tau, rho_bar, x):
    """C₁, C₂, C₃ of Theorem 1 at ηB = x (xu L151-153)."""
    spread = tau * (k - 1) / k + rho_bar
    c1 = 1 - 24 * x**2 * lip**2 * spread
    if c1 <= 0:
        return c1, math.nan, math.nan
    c3 = (0.5 + x * lip * tau**2 / k
          + (6 * x**2 * lip**2 + x * k * lip + 12 * x**3 * lip**3 * tau**2 / k) * 2 * rho_bar / c1)
    c2 = (-(x * lip**2 / k + 6 * x**2 * lip**3 / k**2 + 12 * x**3 * lip**4 * tau**2 / k**3) * 4 * x**2 * spread / c1
          + x / (2 * k) - x**2 * lip / k**2 - 2 * x**3 * lip**2 * tau**2 / k**3)
    return c1, c2, c3


@given(k=st.integers(2, 64), tau=st.integers(0, 300), rho=st.floats(0, 0.99), lip=st.floats(0.1, 10),
       variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_xu_proposition1_min_steps(k, tau, rho, lip, variant):
    rho_bar = (k - 1) / k * (1 / (1 - rho) + 2 * math.sqrt(rho) / (1 - math.sqrt(rho)) ** 2)  # L155
    power = 2 if variant == "paper" else 4  # L161 prints tau^2; XU-5: tau^4
    terms = [192 * (tau * (k - 1) / k + rho_bar), 1024 * k**2 * rho_bar**2, 64 * tau**power / k**2,
             (k - 1) ** 0.5 / k ** (1 / 6) * (8 * math.sqrt(6) * tau ** (2 / 3) + 8) ** 2
             * (tau + rho_bar * k / (k - 1)) ** (2 / 3)]  # L161
    steps = lip**2 * k**2 * max(terms)
    c1, c2, c3 = constants_at(lip, k, tau, rho_bar, k / math.sqrt(steps))  # η = K/(B√T), L163
    x = k / math.sqrt(steps)
    assume(c1 <= 0 or (abs(c2) > 1e-9 * x / (2 * k) and away(c3, 1.0)))
    result = xu.proposition1_min_steps(smoothness=lip, topology=xu.Topology(workers=k, rho=rho), staleness=tau,
                                       variant=variant)
    assert_contract(result, result.steps, expect_valid=c1 > 0 and c2 >= 0 and c3 <= 1)  # L145
    assert result.steps == pytest.approx(steps, rel=1e-12) and result.variant == variant
    assert result.notes[0].startswith("XU-5") and "arXiv:2008.09246" in result.source
    assert "Theorem 1" in result.constants.source and "arXiv:2008.09246" in result.constants.source


def test_xu_proposition1_spec_vectors():
    # spec TV-U (the paper prints no T): K = 16, rho = 0.5, tau = 1 holds; K = 16, tau = 256 fails C3 <= 1 (XU-5)
    ok = xu.proposition1_min_steps(smoothness=1, topology=xu.Topology(workers=16, rho=0.5), staleness=1,
                                   variant="paper")
    assert_contract(ok, ok.steps, expect_valid=True)
    assert ok.steps == pytest.approx(2.0154618e10, rel=1e-7) and ok.largest == "spectral"
    printed = xu.proposition1_min_steps(smoothness=1, topology=xu.Topology(workers=16, rho=0.0), staleness=256,
                                        variant="paper")
    data = assert_contract(printed, printed.steps, expect_valid=False)
    assert [h["detail"] for h in data["hypotheses"] if not h["holds"]] == ["1.0206 <= 1"]


# ---------------------------------------------------------------- Zhou et al., constants and choices

@st.composite
def zhou_problems(draw, max_clients=10):
    n = draw(st.integers(2, max_clients))
    equal = draw(st.booleans())
    sizes = 6000.0 if equal else tuple(float(draw(st.integers(100, 10_000))) for _ in range(n))
    mu = draw(st.floats(0.1, 10))
    return zhou.Problem(num_clients=n, model_dim=draw(st.integers(1, 10**4)), client_sizes=sizes,
                        strong_convexity=mu, smoothness=mu * draw(st.floats(1, 5)),
                        gradient_bound=draw(st.floats(0.1, 100)), heterogeneity=draw(st.floats(0, 1)),
                        initial_distance=draw(st.floats(0, 100)), local_gradient_std=draw(st.floats(0, 10)))


def equal_sizes(problem) -> bool:
    return len(set(problem.client_sizes)) == 1  # d_1 = ... = d_N (L250, erratum Z-14)


def laplace_c(problem, epsilon, xi):
    """C₁, C₂, C₃, γ as printed (L356) with ε_i = epsilon for every client."""
    n, mu, g2, d = problem.num_clients, problem.strong_convexity, problem.gradient_bound**2, sum(problem.client_sizes)
    gamma = 2 * problem.smoothness / mu  # L296
    c1 = 4 / mu**2 * 2 * n * g2 / (n - 1)
    c2 = 1 / mu**2 * 32 * problem.model_dim * xi**2 / (n * d**2) * n / epsilon**2
    c3 = (gamma * problem.initial_distance
          + 4 / mu**2 * (2 * problem.smoothness * problem.heterogeneity - 2 * g2 / (n - 1)))
    return c1, c2, max(c3, -c1 / n), gamma


def u_printed(c1, c2, c3, gamma, t, b):
    """U(T, b) = (C₁/b + C₂bT² + C₃)/(T + γ) (L354)."""
    return (c1 / b + c2 * b * t * t + c3) / (t + gamma)


@given(problem=zhou_problems(), epsilon=st.floats(0.05, 10), xi=st.floats(1, 500))
@FAST
def test_zhou_laplace_constants(problem, epsilon, xi):
    result = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=xi)
    assert_contract(result, result.C2, expect_valid=equal_sizes(problem))
    assert (result.C1, result.C2, result.C3, result.gamma) == pytest.approx(laplace_c(problem, epsilon, xi), rel=1e-12,
                                                                            abs=1e-12 * result.C1)
    assert result.epsilon_eff == pytest.approx(epsilon, rel=1e-12) and "arXiv:2107.01895" in result.source


@given(problem=zhou_problems(), epsilon=st.floats(0.05, 10), delta=st.floats(1e-9, 1e-2), xi=st.floats(1, 50),
       q=st.floats(0.001, 0.999), c2=st.floats(0.1, 10))
@FAST
def test_zhou_gaussian_constants(problem, epsilon, delta, xi, q, c2):
    result = zhou.gaussian_constants(problem=problem, epsilon=epsilon, delta=delta, clipping_norm=xi, sample_rate=q,
                                     c2=c2)
    assert_contract(result, result.E3, expect_valid=False)  # c2 is never a proven constant (L222, Z-7)
    n, mu, g2, d = problem.num_clients, problem.strong_convexity, problem.gradient_bound**2, sum(problem.client_sizes)
    gamma = 2 * problem.smoothness / mu
    e3 = 4 / mu**2 * c2**2 * problem.model_dim * xi**2 / d**2 * n * math.log(1 / delta) / epsilon**2  # L414
    sampling = sum(size * problem.local_gradient_std[0] ** 2 for size in problem.client_sizes) / (q * d**2)
    e2 = 4 / mu**2 * (-2 * g2 / (n - 1) + sampling + 2 * problem.smoothness * problem.heterogeneity) \
        + gamma * problem.initial_distance - gamma * e3
    assert (result.E1, result.E2, result.E3) == pytest.approx((8 * g2 / mu**2 * n / (n - 1), e2, e3), rel=1e-9,
                                                              abs=1e-9 * (abs(e2) + e3))
    failing = [h.name for h in result.hypotheses if not h.holds]
    assert "c2 is a proven constant of Theorem 2" in failing and ("d_1 = ... = d_N" in failing) is not equal_sizes(
        problem)


@given(problem=zhou_problems(), epsilon=st.floats(0.05, 10), xi=st.floats(1, 500), share=st.floats(0, 1),
       cap=st.one_of(st.just(math.inf), st.integers(0, 500)), variant=st.sampled_from(["paper", "corrected"]))
@example(problem=zhou.Problem(num_clients=2, model_dim=1, client_sizes=(6000.0, 6000.0), strong_convexity=1.0,
                              smoothness=1.0, gradient_bound=23.0, heterogeneity=0.03125, initial_distance=0.0,
                              local_gradient_std=(0.0, 0.0)),
         epsilon=1.0, xi=1.0, share=1.0, cap=2, variant="corrected")  # C₁/b + C₃ = 0.25 of 4232 (CI, 4bad513)
@example(problem=zhou.Problem(num_clients=2, model_dim=1, client_sizes=(6000.0, 6000.0), strong_convexity=0.109375,
                              smoothness=0.109375, gradient_bound=3.0, heterogeneity=0.0, initial_distance=0.0,
                              local_gradient_std=(0.0, 0.0)),
         epsilon=1.0, xi=1.0, share=1.0, cap=math.inf, variant="paper")  # C₁/b + C₃ = 0 of 6018: T* 6e-9, not 0
@example(problem=zhou.Problem(num_clients=2, model_dim=1, client_sizes=(6000.0, 6000.0), strong_convexity=0.109375,
                              smoothness=0.109375, gradient_bound=6.0, heterogeneity=0.0, initial_distance=0.0,
                              local_gradient_std=(0.0, 0.0)),
         epsilon=1.0, xi=1.0, share=1.0, cap=0, variant="paper")  # U(0, b) = (C₁/b + C₃)/γ: 1.8e-12, not 0
@FAST
def test_zhou_optimal_rounds(problem, epsilon, xi, share, cap, variant):
    c1, c2, c3, gamma = laplace_c(problem, epsilon, xi)
    b = 1 + round(share * (problem.num_clients - 1))
    constants = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=xi)
    result = zhou.optimal_rounds(constants=constants, clients_per_round=b, max_rounds=cap, variant=variant)
    assert_contract(result, float(result.best), expect_valid=equal_sizes(problem))
    # C₁/b + C₃ can cancel (C₃ >= -C₁/N, so exactly when b = N): its rounding, a few ulps of the terms, is then all
    # that is left of it; 1e-14 of the terms is 45 ulps
    rounding = 1e-14 * (c1 / b + abs(c3))
    continuous = min(math.sqrt(gamma**2 + max(c1 / b + c3, 0) / (c2 * b)) - gamma, cap)  # Eq. (6), L322
    assert result.continuous == pytest.approx(continuous, rel=1e-9, abs=1e-9 + rounding / (c2 * b * gamma)) \
        and result.paper == math.floor(result.continuous)
    if variant == "paper":
        assert result.bound_paper == pytest.approx(u_printed(c1, c2, c3, gamma, result.paper, b), rel=1e-12,
                                                   abs=rounding / (result.paper + gamma))
    assert result.bound_best <= result.bound_paper * (1 + 1e-12) and result.notes[0].startswith("Z-9")


@given(problem=zhou_problems(), epsilon=st.floats(0.05, 10), xi=st.floats(1, 500), rounds=st.integers(1, 500),
       variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_zhou_optimal_clients(problem, epsilon, xi, rounds, variant):
    c1, c2, c3, gamma = laplace_c(problem, epsilon, xi)
    n = problem.num_clients
    constants = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=xi)
    result = zhou.optimal_clients(constants=constants, rounds=rounds, variant=variant)
    assert_contract(result, float(result.best), expect_valid=equal_sizes(problem))
    assert result.continuous == pytest.approx(math.sqrt(c1 / c2) / rounds, rel=1e-9)  # b* = sqrt(B1/B2), L336
    assert result.paper == min(max(math.ceil(result.continuous), 1), n)
    if variant == "paper":
        values = [u_printed(c1, c2, c3, gamma, rounds, b) for b in range(1, n + 1)]
        assert result.bound_best <= min(values) * (1 + 1e-9)  # the integer optimum of the printed U
    assert [note[:3] for note in result.notes] == ["Z-3", "Z-9"]


@given(problem=zhou_problems(), epsilon=st.floats(0.05, 10), xi=st.floats(1, 500))
@FAST
def test_zhou_laplace_regime(problem, epsilon, xi):
    c1, c2, c3, gamma = laplace_c(problem, epsilon, xi)
    margin = c3 - 2 * gamma * math.sqrt(c1 * c2)  # regime criterion, spec D2 (erratum Z-4)
    assume(away(margin, 0.0, 0.0) and abs(margin) > 1e-9 * (abs(c3) + 1))
    result = zhou.laplace_regime(constants=zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=xi))
    b = 1 if margin > 0 else problem.num_clients
    assert result.clients_per_round == b and result.regime == ("b*=1" if margin > 0 else "b*=N")
    t = math.sqrt(gamma**2 + max(c1 / b + c3, 0) / (c2 * b)) - gamma  # Solutions 1-2, L364
    assert result.bound == pytest.approx(u_printed(c1, c2, c3, gamma, t, b), rel=1e-9, abs=1e-12 * c1)  # 0 at Z-5
    if c3 > 0:
        assert_contract(result, result.bound, expect_valid=equal_sizes(problem))
        assert result.critical_epsilon == pytest.approx(epsilon * 2 * gamma * math.sqrt(c1 * c2) / c3, rel=1e-9)
    else:  # no critical epsilon: b* = N at every budget; strict JSON writes ∞ as the string "inf"
        assert result.critical_epsilon == math.inf
        data = assert_contract(result, result.bound, expect_valid=equal_sizes(problem))
        assert data["critical_epsilon"] == "inf" and float(data["critical_epsilon"]) == math.inf


@given(problem=zhou_problems(max_clients=6), epsilon=st.floats(0.05, 10), xi=st.floats(1, 500),
       cap=st.integers(0, 60), variant=st.sampled_from(["paper", "corrected"]))
@FAST
def test_zhou_laplace_choices(problem, epsilon, xi, cap, variant):
    c1, c2, c3, gamma = laplace_c(problem, epsilon, xi)
    n = problem.num_clients
    constants = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=xi)

    def u(t, b):  # the variant's U: bT/N replies as printed, ⌈bT/N⌉ corrected (erratum Z-1)
        noise = c2 * b * t * t if variant == "paper" else c2 * n * n / b * (-(-t * b // n)) ** 2
        return (c1 / b + noise + c3) / (t + gamma)

    rule = zhou.laplace_paper_choice(constants=constants, max_rounds=cap, variant=variant)
    assert_contract(rule, rule.bound, expect_valid=equal_sizes(problem))
    options = [(u(t, b), b, t) for b in (1, n)
               for t in [math.floor(min(math.sqrt(gamma**2 + max(c1 / b + c3, 0) / (c2 * b)) - gamma, cap))]]
    # b in {1, N} at floor(T*(b)), L364-367; U = 0 exactly where C1/b + C3 = 0 (Solution 3, Z-5), up to rounding
    assert rule.bound == pytest.approx(min(options)[0], rel=1e-12, abs=1e-12 * c1)
    exact = zhou.laplace_exact_choice(constants=constants, max_rounds=cap, variant=variant)
    assert_contract(exact, exact.bound, expect_valid=equal_sizes(problem))
    brute = min(u(t, b) for t in range(cap + 1) for b in range(1, n + 1))
    assert exact.bound == pytest.approx(brute, rel=1e-12, abs=1e-12 * c1)
    assert exact.bound <= rule.bound * (1 + 1e-12) + 1e-12 * c1
    assert exact.notes[0].startswith("Z-1") and rule.notes[-1].startswith("Z-9")


def test_zhou_table_i_mnist_from_the_fitted_constants():
    # Table I (L467-472), MNIST at ε = 1: T*(b = 5) = 5, T*(b = 10) = 2, b*(T = 50) = 1, T*(b* = 1) = 22, from the
    # fitted (γ, H, S) = (2.0, 415.155, 194.291) of tests/papers/test_zhou.py (erratum Z-10) with p = 7840,
    # d = 60 000, ξ₁ = 300 (L435-441) and μ = 10, Γ = 0 (spec §5.3)
    p, d, xi, gamma, h, s, mu = 7840, 60_000, 300.0, 2.0, 415.155, 194.291, 10.0
    problem = zhou.Problem(num_clients=10, model_dim=p, client_sizes=d / 10, strong_convexity=mu,
                           smoothness=gamma * mu / 2, gradient_bound=2 * xi * math.sqrt(p * h) / d, heterogeneity=0.0,
                           initial_distance=32 * p * xi**2 * s / (d**2 * gamma * mu**2))
    constants = zhou.laplace_constants(problem=problem, epsilon=1.0, clipping_norm=xi)
    assert_contract(constants, constants.C2, expect_valid=True)
    found = [zhou.optimal_rounds(constants=constants, clients_per_round=b, variant="paper") for b in (5, 10, 1)]
    for result in found:
        assert_contract(result, float(result.paper), expect_valid=True)
    clients = zhou.optimal_clients(constants=constants, rounds=50, variant="paper")
    assert_contract(clients, float(clients.paper), expect_valid=True)
    rule = zhou.laplace_paper_choice(constants=constants, variant="paper")
    assert_contract(rule, rule.bound, expect_valid=True)
    assert [result.paper for result in found] + [clients.paper] == [5, 2, 22, 1]
    assert (rule.rounds, rule.clients_per_round) == (22, 1)


@given(problem=zhou_problems(), epsilon=st.floats(0.05, 10), xi=st.floats(1, 50), c2=st.floats(0.1, 10),
       cap=st.one_of(st.just(math.inf), st.integers(0, 10**4)))
@FAST
def test_zhou_gaussian_choice(problem, epsilon, xi, c2, cap):
    constants = zhou.gaussian_constants(problem=problem, epsilon=epsilon, delta=1e-5, clipping_norm=xi,
                                        sample_rate=0.01, c2=c2)
    e1, e2, e3, gamma, n = constants.E1, constants.E2, constants.E3, constants.gamma, problem.num_clients
    assume(e1 / n + e2 != 0)
    result = zhou.gaussian_choice(constants=constants, max_rounds=cap)
    t = cap if e1 / n + e2 > 0 else 0  # Solutions 1-2 (L418-419), b* = N (erratum Z-11)
    bound = e3 if t == math.inf else (e1 / n + e2) / (t + gamma) + e3  # U → E₃ as T → ∞ (L405)
    assert result.rounds == t and result.clients_per_round == n and result.bound == pytest.approx(bound, rel=1e-12)
    data = assert_contract(result, result.bound, expect_valid=False)  # c2 is never proven (Z-7)
    if t == math.inf:  # T* = ∞ (Solution 1 without a cap): strict JSON writes it as the string "inf"
        assert data["rounds"] == "inf"
        return
    assert result.notes[0].startswith("Z-11") and "Z-7" in result.notes[1]


@given(sizes=st.sampled_from([600.0, (600.0, 500.0, 700.0)]), epsilon=st.floats(0.5, 5), cap=st.integers(0, 4))
@SLOW
def test_zhou_gaussian_accountant_choice(sizes, epsilon, cap):
    problem = zhou.Problem(num_clients=3, model_dim=50, client_sizes=sizes, strong_convexity=1.0, smoothness=2.0,
                           gradient_bound=1.0, heterogeneity=0.1, initial_distance=1.0, local_gradient_std=0.5)
    result = zhou.gaussian_accountant_choice(problem=problem, epsilon=epsilon, delta=1e-5, clipping_norm=1.0,
                                             sample_rate=0.1, max_rounds=cap)
    assert_contract(result, result.bound, expect_valid=equal_sizes(problem))
    t, b = result.rounds, result.clients_per_round
    replies = -(-t * b // 3)  # ⌈bT/N⌉ (round robin, erratum Z-1)
    z = (accounting.calibrate_noise_multiplier(target_epsilon=epsilon, target_delta=1e-5, sample_rate=0.1,
                                               steps=replies, accountant="rdp").value if replies else 0.0)
    d = sum(problem.client_sizes)
    e1 = 8 * 1.0 / 1.0 * 3 / 2  # 8G²N/(μ²(N−1)), L414
    e2 = 4 * (-2 / 2 + sum(size * 0.25 for size in problem.client_sizes) / (0.1 * d**2) + 2 * 2.0 * 0.1) + 4.0 * 1.0
    noise = 4 * 3 / b * 50 * 3 * z**2 / (0.1 * d) ** 2  # (4/μ²)(N/b) p Σ_i z_i² ξ²/(q d)², σ_i = zξ/(q d_i) (L230)
    assert result.bound == pytest.approx((e1 / b + e2 + noise) / (t + 4.0), rel=1e-12)  # Theorem 4's U (L401, L414)
    assert [note[:4] for note in result.notes] == ["Z-7:", "Z-13"]
