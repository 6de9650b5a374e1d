"""bounds.mapa (Li et al.): validation, hypotheses that fail, privacy totals by brute force, and property tests
of the monotonicity and feasibility claims (Theorem 3, Theorem 4, Eq. (13)/(16), the MAPA schedule)."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.bounds import composition, mapa

BASE = dict(epsilon=0.1, delta=1e-3, sigma=30.0, batch_size=12, smoothness=10.0, max_staleness=5, theta=0.5,
            iterations=2000, initial_gap=1.0, num_edges=5)
FAST = settings(max_examples=50, deadline=None)


# ---------------------------------------------------------------- validation and reported failures

@pytest.mark.parametrize("change, message", [
    ({"theta": 1.0}, "theta must be a real number in (0, 1)"),
    ({"batch_size": 0}, "batch_size must be an integer in [1, inf)"),
    ({"iterations": 2.5}, "iterations must be an integer"),
    ({"epsilon": [0.1, 0.2]}, "one value per edge (5)"),
    ({"noise_model": "gaussian"}, "noise_model must be one of"),
    ({"noise_model": "corrected", "model_dim": None}, "needs model_dim"),
    ({"update_rule": "halve"}, "update_rule must be one of"),
    ({"delta": 1.0}, "delta must be a real number in (0, 1)"),
])
def test_schedule_rejects_bad_input_naming_the_parameter(change, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        mapa.mapa_schedule(**{**BASE, "noise_model": "paper", **change})


def test_theorem4_marks_a_step_above_eq13_no_guarantee_and_still_shows_the_number():
    limit = mapa.theorem4_max_learning_rate(smoothness=10, max_staleness=5)
    above = mapa.theorem4_bound(iterations=100, learning_rate=1.01 * limit, initial_gap=1, delta_b=1, smoothness=10,
                                max_staleness=5)
    assert not above.valid and above.guarantee == "no guarantee" and above.to_dict()["guarantee"] == "no guarantee"
    assert above.radius == pytest.approx(2 * 10 * 1.01 * limit)
    assert above.value == pytest.approx(2 / (100 * 1.01 * limit) + 2 * 10 * 1.01 * limit)
    assert "gamma <= 1/(2L(tau_max+1))" in json.dumps(above.to_dict())
    at = mapa.theorem4_bound(iterations=100, learning_rate=limit, initial_gap=1, delta_b=1, smoothness=10,
                             max_staleness=5)
    assert at.valid and at.value == pytest.approx(2 / (100 * limit) + 2 * 10 * limit)


def test_learning_rate_conditions_with_staleness():
    names_failing = [h.name for h in mapa.learning_rate_conditions(learning_rate=0.05, smoothness=10,
                                                                   max_staleness=5) if not h.holds]
    assert names_failing == ["gamma <= 1/(L((tau_max+1)^2+1))", "gamma <= 1/(2L(tau_max+1))"]
    assert all(h.holds for h in mapa.learning_rate_conditions(learning_rate=1 / 370, smoothness=10, max_staleness=5))
    assert not mapa.learning_rate_conditions(learning_rate=0.1, smoothness=10, max_staleness=0)[0].holds  # γ = 1/L


def test_theorem2_records_its_variant_hypotheses_and_assumptions():
    bound = mapa.theorem2_bound(iterations=10, radius=1, gradient_bound=1, smoothness=1, max_staleness=2, delta_b=3)
    assert bound.valid and bound.variant == "corrected" and bound.value == pytest.approx(sum(bound.terms.values()))
    assert any("convex" in text for text in bound.assumptions) and "re-derived" in bound.source
    with pytest.raises(ValueError, match="variant must be one of"):
        mapa.theorem2_bound(iterations=10, radius=1, gradient_bound=1, smoothness=1, max_staleness=2, delta_b=3,
                            variant="exact")


def test_results_serialise_to_json():
    plan = mapa.mapa_schedule(**BASE, noise_model="corrected", model_dim=256)
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["valid"] and data["stages"][0]["index"] == 1 and data["privacy"]["best_method"] == "advanced"
    assert json.loads(json.dumps(mapa.laplace_noise(sensitivity=1, epsilon=1, noise_model="paper").to_dict()))


def test_corrected_noise_at_dimension_one_is_the_paper_model():
    paper = mapa.mapa_schedule(**BASE, noise_model="paper")
    one = mapa.mapa_schedule(**BASE, noise_model="corrected", model_dim=1)
    assert [s.to_dict() for s in paper.stages] == [s.to_dict() for s in one.stages]


def test_paper_noise_model_with_a_large_dimension_is_flagged():
    plan = mapa.mapa_schedule(**BASE, noise_model="paper", model_dim=784)
    failed = [h for h in plan.hypotheses if not h.holds]
    assert len(failed) == 1 and "N = 1" in failed[0].name and not plan.valid
    assert any("understates" in note for note in plan.notes)


def test_corrected_noise_model_plans_smaller_steps():
    paper = mapa.mapa_schedule(**BASE, noise_model="paper")
    corrected = mapa.mapa_schedule(**BASE, noise_model="corrected", model_dim=784)
    assert corrected.stages[0].delta_0 == pytest.approx(paper.stages[0].delta_0 * 784 * 785 / 2, rel=1e-12)
    assert corrected.stages[0].learning_rate < paper.stages[0].learning_rate
    assert corrected.stages[0].noise_scale == paper.stages[0].noise_scale  # same ε, same mechanism


def test_too_many_stages_or_a_vanishing_sensitivity_is_refused():
    with pytest.raises(ValueError, match="more than 100000 stages"):
        mapa.mapa_schedule(**{**BASE, "iterations": 10**9, "initial_gap": 1e-6, "theta": 0.9999}, noise_model="paper",
                           p_reference="initial")
    with pytest.raises(ValueError, match="sensitivity fell below 1e-60 after"):
        mapa.mapa_schedule(**{**BASE, "iterations": 10**9, "initial_gap": 1e-6}, noise_model="paper",
                           p_reference="initial")


# ---------------------------------------------------------------- privacy totals

@given(steps=st.integers(1, 3000), edges=st.integers(1, 40))
@FAST
def test_round_robin_counts_match_a_simulated_fifo(steps, edges):
    counts = [0] * edges
    for t in range(steps):
        counts[t % edges] += 1
    assert list(mapa.round_robin_uploads(iterations=steps, num_edges=edges)) == counts


def test_heterogeneous_budgets_charge_the_worst_edge():
    totals = mapa.composition_totals(epsilon=[0.1, 0.5, 0.2], iterations=10, num_edges=3, delta_slack=1e-6)
    assert totals.uploads_per_edge == (4, 3, 3)
    assert totals.basic_epsilon == pytest.approx(10 * 0.5)
    assert totals.per_edge_epsilon == pytest.approx(max(4 * 0.1, 3 * 0.5, 3 * 0.2))
    expected = max(composition.advanced_composition(epsilon=e, delta=0, count=n, delta_slack=1e-6)[0]
                   for e, n in ((0.1, 4), (0.5, 3), (0.2, 3)))
    assert totals.advanced_epsilon == pytest.approx(expected)
    assert totals.best_method == "per_edge" and totals.best_epsilon == totals.per_edge_epsilon


@given(steps=st.integers(1, 10**6), edges=st.integers(1, 100), eps=st.floats(1e-3, 2.0))
@FAST
def test_totals_are_ordered_and_never_below_one_upload(steps, edges, eps):
    totals = mapa.composition_totals(epsilon=eps, iterations=steps, num_edges=edges)
    assert eps <= totals.per_edge_epsilon <= totals.basic_epsilon
    assert totals.best_epsilon <= totals.per_edge_epsilon
    assert totals.basic_epsilon >= steps * eps * (1 - 1e-15)
    assert max(totals.uploads_per_edge) == math.ceil(steps / edges)


# ---------------------------------------------------------------- property tests: Theorem 3

@given(sigma=st.floats(0.01, 100), b=st.integers(1, 500), delta=st.floats(1e-12, 0.99),
       factor=st.floats(1.0001, 10))
@FAST
def test_theorem3_monotone_and_inverse(sigma, b, delta, factor):
    base = mapa.theorem3_sensitivity(sigma=sigma, batch_size=b, delta=delta).sensitivity
    assert mapa.theorem3_sensitivity(sigma=sigma * factor, batch_size=b, delta=delta).sensitivity > base
    assert mapa.theorem3_sensitivity(sigma=sigma, batch_size=b + 1, delta=delta).sensitivity < base
    assert mapa.theorem3_sensitivity(sigma=sigma, batch_size=b, delta=min(0.999, delta * factor)).sensitivity < base
    back = mapa.theorem3_failure_probability(sigma=sigma, batch_size=b, sensitivity=base)
    assert back.valid and back.failure_probability == pytest.approx(delta, rel=1e-9)
    larger = mapa.theorem3_failure_probability(sigma=sigma, batch_size=b, sensitivity=base * factor)
    assert larger.failure_probability < delta  # feasibility: any ΔS ≥ ΔS_min satisfies Eq. (12)


@given(sigma=st.floats(0.01, 100), b=st.integers(1, 500), shrink=st.floats(0.01, 0.9999))
@FAST
def test_theorem3_inadmissible_below_2_sigma_over_b(sigma, b, shrink):
    # below, not at, 2σ/b: at shrink = 1 the ratio is 1 only up to rounding (0.9999999999999998 for σ = 14.3456,
    # b = 3, which then reads as admissible with failure probability 1.0, vacuous either way)
    result = mapa.theorem3_failure_probability(sigma=sigma, batch_size=b, sensitivity=shrink * 2 * sigma / b)
    assert result.failure_probability == 1.0 and not result.valid and result.guarantee == "no guarantee"


# ---------------------------------------------------------------- property tests: Theorem 4 and the steps

@given(steps=st.integers(1, 10**6), share=st.floats(0.01, 1.0), gap=st.floats(0, 100), db=st.floats(0, 1e4),
       L=st.floats(0.01, 100), tau=st.integers(0, 200))
@FAST
def test_theorem4_feasible_below_eq13_decreasing_in_t_above_the_radius(steps, share, gap, db, L, tau):
    gamma = share * mapa.theorem4_max_learning_rate(smoothness=L, max_staleness=tau)
    now = mapa.theorem4_bound(iterations=steps, learning_rate=gamma, initial_gap=gap, delta_b=db, smoothness=L,
                              max_staleness=tau)
    later = mapa.theorem4_bound(iterations=steps + 1, learning_rate=gamma, initial_gap=gap, delta_b=db, smoothness=L,
                                max_staleness=tau)
    assert now.valid and later.value <= now.value and later.value >= later.radius


@given(t=st.floats(1, 1e8), L=st.floats(0.01, 100), tau=st.integers(0, 200), db=st.floats(0, 1e6))
@FAST
def test_eq11_and_eq10_steps_with_staleness(t, L, tau, db):
    eq11 = mapa.eq11_learning_rate(t=t, smoothness=L, max_staleness=tau, delta_b=db)
    eq10 = mapa.audp_learning_rate(t=t, smoothness=L, max_staleness=tau, delta_b=db)
    assert eq11 <= mapa.eq11_max_learning_rate(smoothness=L, max_staleness=tau) and eq11 <= eq10 < 1 / L
    assert mapa.audp_learning_rate(t=t, smoothness=L, max_staleness=tau + 1, delta_b=db) < eq10


@given(steps=st.integers(3, 10**6), db=st.floats(0, 1e4), tau=st.integers(0, 50))
@FAST
def test_theorem2_paper_log_is_above_paper(steps, db, tau):
    kw = dict(iterations=steps, radius=1.0, gradient_bound=1.0, smoothness=1.0, max_staleness=tau, delta_b=db)
    assert mapa.theorem2_bound(**kw, variant="paper_log").value > mapa.theorem2_bound(**kw, variant="paper").value


# ---------------------------------------------------------------- property tests: the MAPA schedule

SCHEDULES = dict(
    epsilon=st.floats(0.01, 2.0), delta=st.floats(1e-9, 0.5), sigma=st.floats(0.1, 100), batch_size=st.integers(1, 64),
    smoothness=st.floats(0.1, 100), max_staleness=st.integers(0, 50), theta=st.floats(0.05, 0.95),
    iterations=st.integers(1, 5000), initial_gap=st.floats(0.01, 1000), num_edges=st.integers(1, 50),
    update_rule=st.sampled_from(mapa.UPDATE_RULES), model_dim=st.integers(1, 1000))


@given(**SCHEDULES)
@FAST
def test_schedule_spends_the_budget_and_keeps_its_invariants(**kw):
    plan = mapa.mapa_schedule(**kw, noise_model="corrected")
    stages, tau, L = plan.stages, kw["max_staleness"], kw["smoothness"]
    assert plan.iterations == kw["iterations"] and stages[0].start == 1 and stages[-1].end == kw["iterations"]
    assert all(a.end + 1 == b.start for a, b in zip(stages, stages[1:], strict=False))
    assert all(s.iterations == s.length for s in stages[:-1]) and 1 <= stages[-1].iterations <= stages[-1].length
    assert plan.valid and all(s.learning_rate <= 1 / (2 * L * (tau + 1)) * (1 + 1e-12) for s in stages)
    assert all(b.sensitivity < a.sensitivity for a, b in zip(stages, stages[1:], strict=False))
    for s in stages:
        assert s.noise_scale == pytest.approx(s.sensitivity / kw["epsilon"], rel=1e-12)  # ε per iteration fixed
        assert s.clipping_norm == pytest.approx(kw["batch_size"] * s.sensitivity / 2, rel=1e-12)
        target = kw["theta"] * s.sensitivity
        assert s.sensitivity_theory <= target * (1 + 1e-9)
        if not s.clamped:
            assert s.sensitivity_theory == pytest.approx(target, rel=1e-9)


@given(**{name: SCHEDULES[name] for name in ("delta", "sigma", "batch_size", "smoothness", "max_staleness", "theta",
                                              "initial_gap")}, eps=st.floats(0.01, 1.0), factor=st.floats(1.01, 10))
@FAST
def test_more_budget_means_a_larger_first_step(eps, factor, **kw):
    def first(epsilon):
        return mapa.mapa_schedule(**kw, epsilon=epsilon, iterations=1, num_edges=1, noise_model="paper").stages[0]

    low, high = first(eps), first(eps * factor)
    assert high.p_raw < low.p_raw and high.learning_rate >= low.learning_rate


def test_per_record_upload_epsilon_is_group_privacy_over_the_batch():
    # A record drawn into all b slots of a with-replacement batch changes b slots: b·ε_k (erratum LI-16).
    assert mapa.per_record_upload_epsilon(epsilon=0.1, batch_size=12) == pytest.approx(1.2, rel=1e-15)
    with pytest.raises(ValueError, match="batch_size must be an integer in"):
        mapa.per_record_upload_epsilon(epsilon=0.1, batch_size=0)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: mapa.noise_second_moment(scale=1e200, noise_model="paper"), "E||eta||^2 is not a finite number"),
    (lambda: mapa.theorem3_failure_probability(sigma=30, batch_size=12, sensitivity=1e-300),
     "the Chebyshev ratio"),
    (lambda: mapa.mapa_p(delta_b=75, max_staleness=5, batch_size=12, sensitivity=1e-300, theta=0.5), "P is not"),
    (lambda: mapa.mapa_stage_length(p=2, smoothness=10, max_staleness=5, initial_gap=1e308, delta_b=1.0),
     "the stage length T_0 is not a finite number"),
])
def test_overflowing_inputs_are_named_errors_not_crashes(call, message):
    with pytest.raises(ValueError, match=message.replace("|", r"\|").replace("(", r"\(").replace("^", r"\^")):
        call()


def test_a_gradient_std_whose_square_overflows_is_refused_by_name():
    """σ = 1.2e308 made σ² raise an OverflowError in Δ_b (fuzz seed 303); σ ≤ 1e100 keeps σ² = 1e200 finite."""
    with pytest.raises(ValueError, match=r"sigma must be a real number in \[0, 1e\+100\]; got 1e\+101"):
        mapa.delta_b(sigma=1e101, batch_size=3, sensitivity=1.0, epsilon=1.0)
    assert mapa.delta_b(sigma=1e100, batch_size=4, sensitivity=1.0, epsilon=1.0, noise_model="paper") == (
        pytest.approx(0.25e200, rel=1e-12))
    import fedplan
    with pytest.raises(ValueError, match=r"gradient_std must be a real number in \[0, 1e\+100\]; got 1\.19746e\+308"):
        fedplan.run("mapa bound theorem2", gradient_bound=4.45938, iterations=224, radius=25.2727,
                    gradient_std=1.19746e308)
