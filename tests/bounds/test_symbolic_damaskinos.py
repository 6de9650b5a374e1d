"""bounds.symbolic.damaskinos: sympy derivations against the numeric functions of bounds.kardam and bounds.dpscd
and against the printed forms (L612, L1498, L1879, spec §3.4, §5.4-5.5)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from fedplan.bounds import dpscd, kardam
from fedplan.bounds.symbolic import damaskinos as sym

Z = sym.DAMASKINOS


def test_adasgd_beta_is_the_printed_rule():
    derived = sym.adasgd_beta()
    assert sp.simplify(derived - 2 * sp.log(1 + Z.tau_thres / 2) / Z.tau_thres) == 0
    assert sp.simplify(derived - sp.log(1 + Z.tau_thres) / Z.tau_thres) != 0   # the check can fail
    function = sym.as_function(derived)
    for tau_thres in (0.5, 12, 24, 1000):
        assert kardam.adasgd_beta(tau_thres=tau_thres) == pytest.approx(function(tau_thres=tau_thres), rel=1e-14)


@pytest.mark.parametrize("rate, root", [(0.2, 1.0), (0.324, 2.5), (1.3, 0.7)])
def test_decay_bound_closed_forms(rate, root):
    peak, chi = sym.tau_weight_maximiser("exponential")
    assert sp.simplify(chi - 1 / (sp.E * Z.rate)) == 0
    exponential = kardam.Dampening("exponential", rate=rate)
    assert exponential.argmax_of_tau_weight() == pytest.approx(float(peak.subs(Z.rate, rate)))
    assert kardam.decay_bound(dampening=exponential, integer=False) == pytest.approx(float(chi.subs(Z.rate, rate)))
    peak, chi = sym.tau_weight_maximiser("stretched")
    values = {Z.rate: rate, Z.root: root}
    stretched = kardam.Dampening("stretched", rate=rate, root=root)
    assert stretched.argmax_of_tau_weight() == pytest.approx(float(peak.subs(values)))
    assert kardam.decay_bound(dampening=stretched, integer=False) == pytest.approx(float(chi.subs(values)))
    # L1938: χ₂ = (β/(eα))^β
    assert sp.simplify(chi - (Z.root / (sp.E * Z.rate)) ** Z.root) == 0


def test_unrolled_recursion_matches_the_boxed_bound():
    derived = sym.unrolled_recursion()
    t = sym.recursion_step()
    boxed = Z.A**t * Z.S0 + Z.c * (1 - Z.A**t) / (1 - Z.A)
    assert sp.simplify(derived - boxed) == 0
    common = dict(mu=1.0, regularization=1e-3, examples=20_000, batch_size=100, kappa=0.1)
    bound = dpscd.suboptimality_bound(initial_suboptimality=0.3, nu=1.0, clipping_norm=0.2, noise_multiplier=1.5,
                                      steps=777, **common)
    value = derived.subs({Z.A: bound.contraction, Z.c: bound.noise_increase, Z.S0: 0.3, t: 777})
    assert float(value) == pytest.approx(bound.bound, rel=1e-9)


def test_theorem7_condition_is_a_below_one_half():
    margin = sym.theorem7_condition_margin()
    printed = Z.L * (2 * Z.kappa_c * Z.mu * Z.lam - 1) - Z.mu * Z.lam * Z.N   # L1498 with κ_c = 1 − κ
    assert sp.expand(margin - printed) == 0
    rng = np.random.default_rng(0)
    for _ in range(200):
        mu, lam, kappa = rng.uniform(0.1, 3), rng.uniform(0.1, 3), rng.uniform(0, 0.9)
        n = int(rng.integers(1, 200))
        batch = int(rng.integers(1, n + 1))
        contraction = 1 - dpscd.update_rate(mu=mu, regularization=lam, examples=n, batch_size=batch, kappa=kappa)
        checks = dpscd.theorem7_hypotheses(mu=mu, regularization=lam, examples=n, batch_size=batch, kappa=kappa)
        assert checks[1].holds == (contraction < 0.5)
        if checks[1].holds:
            assert checks[0].holds   # μλ > 1 is necessary


def test_theorem5_explicit_form():
    for corrected in (False, True):
        derived = sym.kardam_theorem5(corrected)
        phi_power = Z.phi**2 if corrected else Z.phi
        explicit = ((2 + Z.phi) * sp.sqrt(Z.gap * Z.K * Z.d * Z.sigma**2 / (Z.T * Z.M))
                    + Z.gap * Z.K * Z.chi * phi_power / Z.T
                    + Z.d * Z.sigma**2 + 2 * Z.D * Z.K * Z.sigma * sp.sqrt(Z.d) + Z.K**2 * Z.D**2)
        assert sp.simplify(derived - explicit) == 0
        values = dict(T=5000, gap=2.0, K=1.5, M=3, d=20, sigma=0.2, chi=1.7, phi=13.0, D=0.4)
        numeric = kardam.kardam_bound(steps=5000, loss_gap=2.0, lipschitz=1.5, gradients_per_step=3, dimension=20,
                                      gradient_std=0.2, decay_bound=1.7, max_adaptive_rate=13.0,
                                      confinement_radius=0.4, variant="corrected" if corrected else "paper")
        assert numeric.bound == pytest.approx(float(derived.subs({getattr(Z, k): v for k, v in values.items()})),
                                              rel=1e-12)


def test_ridge_perturbation_constant_is_the_corrected_nu_prime():
    expectation, x = sym.ridge_perturbation_increase()
    n, batch = 3, (0, 2)
    printed_form = sp.Rational(1, 2) * Z.s**2 * sum(
        sp.Rational(1, n) + sum(x[m, j] ** 2 for m in range(x.rows)) / (Z.lam * n**2) for j in batch)
    assert sp.simplify(expectation - printed_form) == 0
    # unit columns (‖x_j‖ = 1): ½(ν/N + 1/(λN²))·L·s² with ν = 1, as bounds.dpscd.nu_prime(variant="corrected")
    unit = {x[0, j]: sp.cos(sp.Symbol(f"theta_{j}")) for j in batch} | {
        x[1, j]: sp.sin(sp.Symbol(f"theta_{j}")) for j in batch}
    reduced = sp.simplify(expectation.subs(unit))
    lam, s = 0.37, 1.9
    numeric = 0.5 * dpscd.nu_prime(nu=1.0, regularization=lam, examples=n) * len(batch) * s**2
    assert float(reduced.subs({Z.lam: lam, Z.s: s})) == pytest.approx(numeric, rel=1e-12)
    thesis = 0.5 * dpscd.nu_prime(nu=1.0, regularization=lam, examples=n, variant="paper") * len(batch) * s**2
    assert thesis > numeric   # the printed ν + 1/(λN²) is looser
