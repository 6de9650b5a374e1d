"""Xu et al., A(DP)²SGD: the spec's test vectors TV-P1 … TV-P6 and TV-U (specs/xu_adp2sgd.md §5.4).

The paper prints no (ε, σ) pair (its experiments give σ only, L218); these vectors are derived from its
formulas (Theorem 2, L171-173; Theorem 1, L147-155; Propositions 1-2, L161-189) at its two set-ups:
CIFAR-10 (K=16, n₍₁₎=3125, B=256, T=58594) and SWB300 (K=16, n₍₁₎=262500, B=128, T=656250), δ = 1e-5, G = 1.
"""

import math

import pytest

from fedplan.bounds import adp2sgd as x
from fedplan.bounds import rdp
from fedplan.bounds.rdp_without_replacement import rdp_without_replacement_gaussian

CIFAR = x.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
SWB = x.Setting(workers=16, examples_per_worker=262500, batch_size=128, steps=656250, delta=1e-5)
SETTINGS = {"CIFAR": CIFAR, "SWB": SWB}


def test_setups_gamma_and_steps():
    assert CIFAR.gamma == pytest.approx(0.00512, rel=1e-15) and CIFAR.worker_steps == 3663
    assert SWB.gamma == pytest.approx(3.047619e-5, rel=1e-6) and SWB.worker_steps == 41016
    assert 5 * CIFAR.steps * CIFAR.gamma**2 == pytest.approx(7.68003, abs=1e-5)


# TV-P1: case, alpha, sigma_paper, z, sigma_sum, log-RHS (7), F1 (noise/epsilon condition), F2 ((7))
TV_P1 = [
    ("CIFAR", 1, 0.5, 24.0258509299, 0.150081082586, 19.210378571, 38.420757142, -0.639006605773, True, False),
    ("CIFAR", 4, 0.5, 6.75646273249, 0.0397938777878, 5.09361635684, 10.1872327137, 1.98080577585, True, False),
    ("CIFAR", 16, 0.5, 2.43911568312, 0.0119548126015, 1.53021601299, 3.06043202598, 4.06816276296, True, True),
    ("CIFAR", 2, 0.25, 8.67528364331, 0.0901837741323, 11.5435230889, 23.0870461779, 0.3748753168, True, False),
    ("SWB", 1, 0.5, 24.0258509299, 0.00597936069827, 0.382679084689, 0.765358169379, 10.2619004679, False, False),
    ("SWB", 4, 0.5, 6.75646273249, 0.00158542265805, 0.101467050115, 0.20293410023, 10.3883218954, False, True),
    ("SWB", 16, 0.5, 2.43911568312, 0.0004762901186, 0.0304825675904, 0.0609651351808, 10.3976360638, False, True),
]


@pytest.mark.parametrize("case,eps,mu,alpha,sigma,z,sigma_sum,rhs,f1,f2", TV_P1)
def test_tv_p1_theorem2_closed_form(case, eps, mu, alpha, sigma, z, sigma_sum, rhs, f1, f2):
    result = x.theorem2(setting=SETTINGS[case], epsilon=eps, mu=mu)
    assert result.alpha == pytest.approx(alpha, rel=1e-10)
    assert result.noise_std == pytest.approx(sigma, rel=1e-10)
    assert result.noise_to_sensitivity == pytest.approx(z, rel=1e-10)
    assert result.noise_std_sum == pytest.approx(sigma_sum, rel=1e-10)
    assert result.log_condition_rhs == pytest.approx(rhs, rel=1e-10)
    epsilon_condition, noise_condition, inside, condition7 = result.hypotheses
    assert epsilon_condition.holds is f1 and noise_condition.holds is f1
    assert (inside.holds and condition7.holds) is f2
    assert result.valid is (f1 and f2) and result.guarantee == ("guarantee" if f1 and f2 else "no guarantee")


def test_tv_p1_best_mu():
    assert x.unconstrained_mu(epsilon=1, delta=1e-5) == pytest.approx(0.51040996917, rel=1e-10)


# TV-P2: z, epsilon, alpha, alpha_max, mu, constrained (None: infeasible)
TV_P2 = [
    ("CIFAR", 1.0, None), ("CIFAR", 9.0, None),
    ("CIFAR", 1.5, (15.95091065, 2.836549207, 4.095945844, 0.6069953927, False)),
    ("CIFAR", 2.0, (11.32318025, 3.448732277, 3.665162927, 0.5847821967, False)),
    ("CIFAR", 3.0, (8.374281803, 2.972015747, 2.972015747, 0.3028475736, True)),
    ("CIFAR", 5.0, (11.94547054, 2.016504302, 2.016504302, 0.05185838117, True)),
    ("CIFAR", 8.0, (115.0159233, 1.10021357, 1.10021357, 0.0011478949, True)),
    ("SWB", 1.5, (1.413102914, 9.219909823, 9.219909823, 0.00883753288, True)),
    ("SWB", 2.0, (1.484772981, 8.789126907, 8.789126907, 0.004510102034, True)),
    ("SWB", 5.0, (1.875796755, 7.140468281, 7.140468281, 0.0004640465888, True)),
    ("SWB", 9.0, (2.306571923, 5.991845572, 5.991845572, 9.773931048e-05, True)),
]


@pytest.mark.parametrize("case,z,expected", TV_P2)
def test_tv_p2_certificate(case, z, expected):
    result = x.paper_epsilon_for_noise(setting=SETTINGS[case], noise_to_sensitivity=z, variant="paper")
    if expected is None:  # outside the band: the formula's number, no guarantee (spec §4.4 with rho = 7.68003/z^2)
        rho, lam, cap = 7.68003 / z**2, math.log(1e5), math.log(1 / (0.00512 * (1 + z * z)))
        alpha = 1 + math.sqrt(lam / rho) if cap <= 1 else min(1 + math.sqrt(lam / rho), cap)
        assert not result.feasible and result.guarantee == "no guarantee"
        assert result.epsilon == pytest.approx(rho * alpha + lam / (alpha - 1), rel=1e-5)
        assert [h.holds for h in result.hypotheses] == [z * z >= 1.5, 0.00512 * (1 + z * z) < math.exp(-1)]
        return
    eps, alpha, alpha_max, mu, constrained = expected
    assert result.feasible
    assert (result.epsilon, result.alpha, result.alpha_max, result.mu) == pytest.approx((eps, alpha, alpha_max, mu),
                                                                                        rel=1e-8)
    assert result.constrained is constrained


@pytest.mark.parametrize("case,eps,z,lower,z_max", [("CIFAR", 8.3436582, 3.1471447, 3.42819010, 8.4173305),
                                                    ("SWB", 1.3765579, math.sqrt(1.5), 1.35729232, 109.86375)])
def test_tv_p2_floor_band_and_analytic_bound(case, eps, z, lower, z_max):
    floor = x.epsilon_floor(setting=SETTINGS[case])
    assert floor.epsilon == pytest.approx(eps, abs=1e-7)
    assert floor.noise_to_sensitivity == pytest.approx(z, abs=1e-6)
    assert floor.analytic_lower_bound == pytest.approx(lower, abs=1e-8)
    assert floor.band == pytest.approx((math.sqrt(1.5), z_max), rel=1e-7)


def test_envelope_reaches_the_floor_where_the_raw_certificate_grows():
    """Spec §5.5 I1: CIFAR z=4 gives 9.159 as printed, 8.344 with the envelope; z=512 is infeasible raw."""
    assert x.paper_epsilon_for_noise(setting=CIFAR, noise_to_sensitivity=4, variant="paper").epsilon == pytest.approx(
        9.159, abs=5e-4)
    for z in (4, 512):
        assert x.paper_epsilon_for_noise(setting=CIFAR, noise_to_sensitivity=z).epsilon == pytest.approx(
            8.3436582, abs=1e-7)
    assert not x.paper_epsilon_for_noise(setting=CIFAR, noise_to_sensitivity=512, variant="paper").feasible


# TV-P3: epsilon -> mu, alpha, z, sigma_paper
TV_P3 = [("CIFAR", 9, 0.437765, 3.27523, 2.52674, 0.0197402), ("CIFAR", 10, 0.536708, 3.48503, 2.23314, 0.0174464),
         ("CIFAR", 12, 0.588324, 3.33050, 1.90343, 0.0148706), ("CIFAR", 16, 0.607208, 2.83191, 1.49621, 0.0116891),
         ("SWB", 2, 0.00690436, 6.79648, 1.224745, 0.0191366)]


@pytest.mark.parametrize("case,eps,mu,alpha,z,sigma", TV_P3)
def test_tv_p3_least_noise_for_epsilon(case, eps, mu, alpha, z, sigma):
    result = x.paper_noise_for_epsilon(setting=SETTINGS[case], target_epsilon=eps)
    assert result.feasible and result.theorem.valid
    found = (result.mu, result.theorem.alpha, result.noise_to_sensitivity, result.theorem.noise_std)
    assert found == pytest.approx((mu, alpha, z, sigma), rel=1e-4)
    assert result.certified_epsilon <= eps
    if case == "CIFAR":  # round trip eps -> z -> eps
        assert result.certified_epsilon == pytest.approx(eps, rel=1e-9)
    else:  # Lemma 2's noise condition binds: the delivered noise certifies the floor
        assert result.certified_epsilon == pytest.approx(1.3765579, abs=1e-7)


def test_tv_p3_below_the_floor_is_infeasible():
    result = x.paper_noise_for_epsilon(setting=CIFAR, target_epsilon=8.3436)
    assert not result.feasible and "8.3436 >= 8.34366" in result.reason
    mu = x.unconstrained_mu(epsilon=8.3436, delta=1e-5)  # the formula at the unconstrained best mu, no guarantee
    assert result.mu == mu and result.noise_to_sensitivity == x.theorem2(setting=CIFAR, epsilon=8.3436,
                                                                         mu=mu).noise_to_sensitivity


# TV-P4: Poisson SGM RDP (bounds.rdp, add/remove-one), q, z, alpha, value
@pytest.mark.parametrize("q,z,order,value", [(0.01, 1.1, 2, 1.28510081605e-4), (0.01, 1.1, 8, 5.8407033552e-4),
                                             (0.00512, 2.0, 16, 6.0926171903e-5), (0.08192, 1.0, 4, 0.0362761389032),
                                             (3.0476190476e-5, 1.5, 64, 3.6586008415)])
def test_tv_p4_poisson_rdp(q, z, order, value):
    ours = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=z, orders=(float(order),))[0]
    assert ours == pytest.approx(value, rel=1e-9)


# TV-P5: WBK Thm-27 per-step RDP vs the paper's 5 q^2 alpha / z^2
@pytest.mark.parametrize("q,z,order,thm27,paper", [(0.00512, 1.5, 4, 1.18609939312e-4, 2.33016888889e-4),
                                                   (0.00512, 2, 5, 7.5052809132e-5, 1.6384e-4),
                                                   (0.00512, 3, 7, 4.34100207533e-5, 1.01944888889e-4),
                                                   (0.08192, 2, 8, 0.035323604896, 0.067108864)])
def test_tv_p5_without_replacement_rdp(q, z, order, thm27, paper):
    ours = rdp_without_replacement_gaussian(sample_rate=q, noise_multiplier=z, orders=(order,))[0]
    assert ours == pytest.approx(thm27, rel=1e-10)
    assert 5 * q**2 * order / z**2 == pytest.approx(paper, rel=1e-10)


# TV-P6: end-to-end tight epsilon, Thm 27, q = gamma, T steps, classic (Mironov) conversion
@pytest.mark.parametrize("z,eps,order", [(1.5, 10.787473, 4), (2, 7.2758757, 5), (3, 4.4623877, 7)])
def test_tv_p6_tight_epsilon(z, eps, order):
    result = x.tight_epsilon(setting=CIFAR, noise_to_sensitivity=z, conversion="classic")
    assert result.epsilon == pytest.approx(eps, abs=1e-6) and result.order == order
    assert result.neighboring_relation == "replace_one" and "without replacement" in result.sampling


# TV-U: utility
@pytest.mark.parametrize("rho,value", [(0.5, 17.3299512883), (0.9, 684.84342493), (14 / 15, 1589.53111057)])
def test_tv_u_rho_bar(rho, value):
    assert x.rho_bar(rho=rho, workers=16) == pytest.approx(value, rel=1e-10)


def test_tv_u_theorem1_constants():
    first = x.theorem1_constants(learning_rate=1e-3, batch_size=256, smoothness=1, topology=x.Topology(workers=16,
                                 rho=0.5), staleness=1)
    assert (first.C1, first.C2, first.C3) == pytest.approx((-27.7322165032, 0.0107723509226, -5.11037723861), rel=1e-10)
    assert not first.valid and not first.hypotheses[0].holds and not first.hypotheses[2].holds  # C3 < 0 is no pass
    second = x.theorem1_constants(learning_rate=1e-5, batch_size=128, smoothness=1,
                                  topology=x.Topology(workers=16, rho=14 / 15), staleness=4)
    assert (second.C1, second.C2, second.C3) == pytest.approx((0.937349637482, 3.91019844493e-5, 69.9935197592),
                                                              rel=1e-10)
    assert not second.valid


def test_tv_u_proposition1_min_steps():
    ok = x.proposition1_min_steps(smoothness=1, topology=x.Topology(workers=16, rho=0.5), staleness=1, variant="paper")
    assert ok.steps == pytest.approx(2.0154618e10, rel=1e-7) and ok.largest == "spectral"
    assert ok.constants.C3 == pytest.approx(0.56251, abs=1e-5) and ok.valid
    for k, tau, steps, c3 in ((16, 256, 1.608013979e10, 1.0206), (2, 32, 1548516.326, 1.32615)):
        printed = x.proposition1_min_steps(smoothness=1, topology=x.Topology(workers=k, rho=0.0), staleness=tau,
                                           variant="paper")
        assert printed.steps == pytest.approx(steps, rel=1e-9)
        assert printed.constants.C3 == pytest.approx(c3, abs=1e-4) and not printed.valid
        assert x.proposition1_min_steps(smoothness=1, topology=x.Topology(workers=k, rho=0.0), staleness=tau).valid


def test_tv_u_bounds():
    problem = x.Problem(smoothness=1, initial_gap=2.3, variance=1, dissimilarity=0.1, dimension=10**6)
    bound = x.theorem1_bound(problem=problem, topology=x.Topology(workers=16, rho=0.0), learning_rate=1e-3,
                             batch_size=32, steps=10**5, staleness=0, noise_std_sum=0.01)
    assert bound.value == pytest.approx(0.025915625, rel=1e-10)
    rate = x.proposition1_rate(problem=problem, topology=x.Topology(workers=16, rho=0.5), batch_size=256,
                               steps=10**6, staleness=0, noise_std_sum=0.01)
    assert rate.value == pytest.approx(0.00581086425781, rel=1e-10)
    assert not rate.valid and rate.guarantee == "no guarantee"  # T = 1e6 is far below Proposition 1's T_min


def test_tv_u_proposition2():
    problem = x.Problem(smoothness=1, initial_gap=2.3, variance=0, dissimilarity=0, dimension=11173962)
    common = dict(problem=problem, topology=x.Topology(workers=16, rho=0.5), examples_per_worker=3125, batch_size=256,
                  delta=1e-5, epsilon=1, mu=0.5, clipping_norm=1, staleness=1)
    paper = x.proposition2(**common, variant="paper")
    assert paper.details["steps"] == pytest.approx(2.23483243539, rel=1e-10)
    assert paper.value == pytest.approx(3.07724344436, rel=1e-10)
    assert paper.terms["C4"] == pytest.approx(8.944817825, rel=1e-9) and not paper.valid
    corrected = x.proposition2(**common)
    assert corrected.terms["C4"] == pytest.approx(46.27513872, rel=1e-9)


def test_tv_u_ring_spectral_gap():
    k = 16
    assert 1 - (1 - math.cos(2 * math.pi / k)) / k == pytest.approx(0.9952424707819554, rel=1e-15)
