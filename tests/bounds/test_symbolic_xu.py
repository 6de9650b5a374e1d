"""bounds.symbolic.xu: Theorem 2, Theorem 1 and Propositions 1-2 of Xu et al. derived by sympy, against the printed
forms (xu L151-189) and the numeric functions of bounds.adp2sgd.
"""

import math

import numpy as np
import pytest
import sympy as sp

from fedplan.bounds import adp2sgd as x
from fedplan.bounds.symbolic import xu as sym

X = sym.XU


def zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


def evaluate(expr: sp.Expr, values: dict) -> float:
    return sym.as_function(expr)(**{symbol.name: values[symbol.name] for symbol in expr.free_symbols})


# ---------------------------------------------------------------- Theorem 2 (L171-173, L518-532)

def test_noise_multiplier_squared_is_five_t_gamma_squared_alpha_over_mu_eps():
    assert zero(sym.noise_multiplier_squared() - 5 * X.T * sym.gamma() ** 2 * X.alpha / (X.mu * X.eps))
    assert not zero(sym.noise_multiplier_squared() - 5 * X.T * sym.gamma() * X.alpha / (X.mu * X.eps))


def test_noise_condition_is_the_printed_epsilon_condition():
    printed = 10 * X.B**2 * X.T * X.alpha / (3 * X.K**2 * X.n**2 * X.mu)
    assert zero(sym.noise_condition_epsilon() - printed)


def test_condition_7_is_lemma_2_order_condition():
    assert zero(sym.condition7_printed() - sym.condition7_in_z())
    assert not zero(sym.condition7_printed() - 1 / (sym.gamma() * sym.noise_multiplier_squared()))


def test_best_mu_closed_form_and_numeric():
    assert zero(sym.best_mu() - (1 + X.a - sp.sqrt(X.a * (1 + X.a))))
    for eps, delta in ((1.0, 1e-5), (0.1, 1e-9), (50.0, 1e-3)):
        expected = evaluate(sym.best_mu(), {"a": math.log(1 / delta) / eps})
        assert x.unconstrained_mu(epsilon=eps, delta=delta) == pytest.approx(expected, rel=1e-12)


def test_best_order_minimises_the_certificate():
    assert zero(sym.best_order() - (1 + sp.sqrt(X.Lam / X.rho)))


@pytest.mark.parametrize("seed", range(5))
def test_theorem2_numeric_matches_symbolic(seed):
    rng = np.random.default_rng(seed)
    k, n, b = int(rng.integers(1, 64)), int(rng.integers(300, 10**5)), int(rng.integers(1, 256))
    t, eps, mu, g, delta = int(rng.integers(10, 10**6)), rng.uniform(0.1, 30), rng.uniform(0.01, 0.99), \
        rng.uniform(0.1, 10), 10 ** -rng.uniform(2, 10)
    setting = x.Setting(workers=k, examples_per_worker=n, batch_size=min(b, n), steps=t, delta=delta)
    result = x.theorem2(setting=setting, epsilon=eps, mu=mu, clipping_norm=g)
    values = {"K": k, "n": n, "B": setting.batch_size, "T": t, "G": g, "eps": eps, "mu": mu,
              "alpha": evaluate(sym.rdp_order(), {"Lam": math.log(1 / delta), "mu": mu, "eps": eps})}
    assert result.alpha == pytest.approx(values["alpha"], rel=1e-12)
    assert result.noise_std**2 == pytest.approx(evaluate(sym.theorem2_sigma_squared(), values), rel=1e-12)
    assert result.noise_to_sensitivity**2 == pytest.approx(evaluate(sym.noise_multiplier_squared(), values), rel=1e-12)
    assert result.log_condition_rhs == pytest.approx(math.log(evaluate(sym.condition7_in_z(), values)), abs=1e-9)


# ---------------------------------------------------------------- Theorem 1 and Proposition 1 (L147-165)

def test_theorem1_constants_depend_on_eta_b_only():
    for constant in sym.theorem1_constants_in_eta_b():
        assert X.B not in constant.free_symbols and X.eta not in constant.free_symbols


@pytest.mark.parametrize("eta,b,lip,k,tau,rho", [(1e-3, 256, 1.0, 16, 1, 0.5), (1e-5, 128, 1.0, 16, 4, 14 / 15),
                                                 (3e-4, 8, 2.5, 4, 0, 0.0), (1e-6, 64, 0.3, 32, 40, 0.9)])
def test_theorem1_constants_numeric_matches_symbolic(eta, b, lip, k, tau, rho):
    topology = x.Topology(workers=k, rho=rho)
    ours = x.theorem1_constants(learning_rate=eta, batch_size=b, smoothness=lip, topology=topology, staleness=tau)
    values = {"eta": eta, "B": b, "L": lip, "K": k, "tau": tau, "rho_bar": topology.rho_bar}
    for number, expr in zip((ours.C1, ours.C2, ours.C3), sym.theorem1_constants(), strict=True):
        assert number == pytest.approx(evaluate(expr, values), rel=1e-11)
    assert topology.rho_bar == pytest.approx(float(sym.rho_bar(sp.Float(rho, 30), sp.Integer(k))), rel=1e-12)


def test_proposition1_rate_is_theorem1_at_eta_k_over_b_sqrt_t():
    assert zero(sym.proposition1_rate() - sym.proposition1_rate_printed())
    assert not zero(sym.proposition1_rate() - sym.proposition1_rate_printed().subs(X.d, 2 * X.d))


def test_proposition1_staleness_term_needs_tau_to_the_fourth():
    """64τ⁴/K² in L161 makes ηBLτ²/K ≤ 1/8; the printed 64τ²/K² leaves it growing like τ (erratum XU-5)."""
    assert sym.staleness_factor_at(64 * X.L**2 * X.tau**4) == sp.Rational(1, 8)
    assert zero(sym.staleness_factor_at(64 * X.L**2 * X.tau**2) - X.tau / 8)


# ---------------------------------------------------------------- Proposition 2 (L185-189)

def test_c4_with_the_papers_substitution_keeps_a_dropped_term():
    exact_printed = 4 * sp.sqrt(5) * (1 + 1 / (X.B**2 * X.mu * (1 - X.mu)) + X.eps / (X.B**2 * X.mu * X.Lam))
    assert zero(sym.proposition2_c4(False) - exact_printed)
    printed = 4 * sp.sqrt(5) * (1 + 1 / (X.B**2 * X.mu * (1 - X.mu)))
    assert not zero(sym.proposition2_c4(False) - printed)
    value = evaluate(sym.proposition2_c4(False), {"B": 256, "mu": 0.5, "eps": 1.0, "Lam": math.log(1e5)})
    assert value == pytest.approx(8.944841534, abs=1e-9)


def test_c4_consistent_noise_matches_the_corrected_function():
    consistent = 4 * sp.sqrt(5) * (1 + 1 / (X.mu * (1 - X.mu)) + X.eps / (X.mu * X.Lam))
    assert zero(sym.proposition2_c4(True) - consistent)
    for b, mu, eps, delta in ((256, 0.5, 1.0, 1e-5), (32, 0.2, 4.0, 1e-8)):
        expected = evaluate(sym.proposition2_c4(True), {"mu": mu, "eps": eps, "Lam": math.log(1 / delta)})
        assert x.proposition2_c4(batch_size=b, mu=mu, epsilon=eps, delta=delta) == pytest.approx(expected, rel=1e-13)
