"""bounds.symbolic.li: closed forms derived by sympy from the paper's inequalities against the printed forms
(li Eq. (12) L279, Eq. (15) L318, L320, Eq. (16) L326, L249, L817-829) and the numeric functions of bounds.mapa.
"""

import math

import numpy as np
import pytest
import sympy as sp

from fedplan.bounds import mapa
from fedplan.bounds.symbolic import li as sym

S = sym.LI


def zero(expr: sp.Expr) -> bool:
    return sp.simplify(expr) == 0


def evaluate(expr: sp.Expr, values: dict) -> float:
    return sym.as_function(expr)(**{symbol.name: values[symbol.name] for symbol in expr.free_symbols})


@pytest.fixture(scope="module")
def points():
    rng = np.random.default_rng(20240601)
    return [dict(sigma=rng.uniform(0.1, 50), b=int(rng.integers(1, 200)), delta=10 ** rng.uniform(-12, -0.1),
                 eps=10 ** rng.uniform(-2, 1), theta=rng.uniform(0.05, 0.95), L=10 ** rng.uniform(-2, 2),
                 tau=int(rng.integers(0, 100)), F0=10 ** rng.uniform(-2, 3), Db=10 ** rng.uniform(-1, 6),
                 P=rng.uniform(1, 50), dS=10 ** rng.uniform(-3, 3)) for _ in range(40)]


# ---------------------------------------------------------------- Theorem 3 (L279)

def test_theorem3_root_is_the_printed_admissible_root_and_the_stable_form():
    derived = sym.theorem3_sensitivity()
    assert zero(derived - 2 * S.sigma / (S.b * sp.sqrt(1 - sp.sqrt(1 - S.delta))))
    assert zero((derived - sym.theorem3_stable_sensitivity()).subs(S.delta, 1 - S.c**2))
    spurious = 2 * S.sigma / (S.b * sp.sqrt(1 + sp.sqrt(1 - S.delta)))  # the other algebraic root (I-3)
    assert not zero(derived - spurious)
    assert zero(sym.theorem3_failure_probability().subs(S.dS, derived) - S.delta)


def test_theorem3_numeric_functions_agree(points):
    for p in points:
        ours = mapa.theorem3_sensitivity(sigma=p["sigma"], batch_size=p["b"], delta=p["delta"])
        assert ours.sensitivity == pytest.approx(evaluate(sym.theorem3_stable_sensitivity(), p), rel=1e-13)
        if p["delta"] > 1e-6:  # the naive printed form loses digits below (TV-P5)
            assert ours.sensitivity == pytest.approx(evaluate(sym.theorem3_sensitivity(), p), rel=1e-9)
        back = mapa.theorem3_failure_probability(sigma=p["sigma"], batch_size=p["b"], sensitivity=ours.sensitivity)
        assert back.failure_probability == pytest.approx(p["delta"], rel=1e-9)
        assert back.failure_probability == pytest.approx(
            evaluate(sym.theorem3_failure_probability(), {**p, "dS": ours.sensitivity}), rel=1e-6)


# ---------------------------------------------------------------- MAPA (L310-326)

def test_stage_length_and_p_are_the_printed_eq_15_and_16():
    assert zero(sym.mapa_rhs_terms()[0] - 4 * S.P * S.L * (S.tau + 1) * S.F0 / S.T)
    assert zero(sym.mapa_rhs_terms()[1] - S.Db / (S.P * (S.tau + 1)))
    assert zero(sym.mapa_stage_length() - 4 * S.P**2 * S.L * (S.tau + 1) ** 2 * S.F0 / S.Db)
    assert zero(sym.mapa_rhs_at_stage_end() - 2 * S.Db / (S.P * (S.tau + 1)))
    assert zero(sym.mapa_p() - 8 * S.Db / ((S.tau + 1) * S.b**2 * S.dS**2 * S.theta**2))
    assert not zero(sym.mapa_p() - 8 * S.Db / ((S.tau + 1) * S.b**2 * S.dS**2 * S.theta))  # the check can fail
    assert zero(sym.repo_p() - sym.mapa_p())
    assert zero(sym.mapa_next_sensitivity().subs(S.P, sym.mapa_p()) - S.theta * S.dS)  # ΔS' = θΔS at P_min


def test_first_p_is_sigma_free():
    derived = sym.mapa_first_p()
    printed = 2 * (S.b * S.eps**2 * (1 - sp.sqrt(1 - S.delta)) + 8) / (S.b**2 * S.eps**2 * S.theta**2 * (S.tau + 1))
    assert zero(derived - printed) and S.sigma not in derived.free_symbols


def test_mapa_numeric_functions_agree(points):
    for p in points:
        p_raw, clamped = mapa.mapa_p(delta_b=p["Db"], max_staleness=p["tau"], batch_size=p["b"], sensitivity=p["dS"],
                                     theta=p["theta"])
        assert p_raw == pytest.approx(evaluate(sym.mapa_p(), p), rel=1e-12) and clamped == max(p_raw, 1.0)
        t0, length = mapa.mapa_stage_length(p=p["P"], smoothness=p["L"], max_staleness=p["tau"], initial_gap=p["F0"],
                                            delta_b=p["Db"])
        assert t0 == pytest.approx(evaluate(sym.mapa_stage_length(), p), rel=1e-12) and length == max(1, math.ceil(t0))
        first = mapa.mapa_first_p(batch_size=p["b"], epsilon=p["eps"], delta=p["delta"], theta=p["theta"],
                                  max_staleness=p["tau"])
        assert first == pytest.approx(evaluate(sym.mapa_first_p(), p), rel=1e-9)


def test_schedule_stage_quantities_agree_with_the_derivation(points):
    for p in points[:10]:
        plan = mapa.mapa_schedule(epsilon=p["eps"], delta=p["delta"], sigma=p["sigma"], batch_size=p["b"],
                                  smoothness=p["L"], max_staleness=p["tau"], theta=p["theta"], iterations=50,
                                  initial_gap=p["F0"], num_edges=3, noise_model="paper")
        for stage in plan.stages:
            at = {**p, "Db": stage.delta_b, "P": stage.p, "dS": stage.sensitivity}
            assert stage.t0 == pytest.approx(evaluate(sym.mapa_stage_length(), at), rel=1e-12)
            assert stage.sensitivity_theory == pytest.approx(evaluate(sym.mapa_next_sensitivity(), at), rel=1e-12)
            assert stage.learning_rate == pytest.approx(evaluate(sym.mapa_learning_rate(), at), rel=1e-12)


# ---------------------------------------------------------------- step sizes with staleness (L249, L293, L817-829)

def test_theorem4_coefficient_and_staleness_ratio():
    assert zero(sym.theorem4_step_coefficient() + (S.tau**2 + 3 * S.tau + 1) / (4 * (S.tau + 1) ** 2))
    assert sym.theorem4_step_coefficient().subs(S.tau, 0) < 0
    assert zero(sym.theorem4_staleness_ratio() - S.tau / (S.tau + 1))


def test_eq11_threshold(points):
    derived = sym.eq11_max_learning_rate()
    assert zero(derived - 1 / (S.L * ((S.tau + 1) ** 2 + 1)))
    for p in points[:10]:
        assert mapa.eq11_max_learning_rate(smoothness=p["L"], max_staleness=p["tau"]) == pytest.approx(
            evaluate(derived, p), rel=1e-13)
        gamma11 = mapa.eq11_learning_rate(t=1, smoothness=p["L"], max_staleness=p["tau"], delta_b=p["Db"])
        assert gamma11 <= evaluate(derived, p)  # Eq. (11) meets the corrected condition


# ---------------------------------------------------------------- Theorem 2 corrected terms, noise moments

def test_theorem2_corrected_terms_match_the_derivation(points):
    noise, radius = sym.theorem2_corrected_tail_terms()
    assert zero(noise - 2 * S.Db / sp.sqrt((S.Db + 1) * S.T))
    for p in points[:10]:
        at = {**p, "R": 1.7, "T": 321}
        bound = mapa.theorem2_bound(iterations=321, radius=1.7, gradient_bound=0.5, smoothness=p["L"],
                                    max_staleness=p["tau"], delta_b=p["Db"])
        assert bound.terms["noise"] == pytest.approx(evaluate(noise, at), rel=1e-12)
        assert bound.terms["radius"] == pytest.approx(evaluate(radius, at), rel=1e-12)


def test_noise_second_moments():
    on_rn, one_d = sym.noise_second_moment()
    assert zero(on_rn - S.N * (S.N + 1) * S.lam**2) and zero(one_d - 2 * S.lam**2)
    assert zero(on_rn.subs(S.N, 1) - one_d)  # the paper's 2λ² is right only for N = 1
    for dim in (1, 2, 7, 784):
        assert mapa.noise_second_moment(scale=0.3, noise_model="corrected", model_dim=dim) == pytest.approx(
            evaluate(on_rn, {"N": dim, "lam": 0.3}), rel=1e-13)
    assert mapa.noise_second_moment(scale=0.3, noise_model="paper") == pytest.approx(2 * 0.09, rel=1e-15)
