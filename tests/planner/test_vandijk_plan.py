"""planner.vandijk: the recipe, tight accounting and export (the CLI: tests/planner/tasks/test_vandijk.py)."""

import math
from types import SimpleNamespace

import pytest
from scipy.stats import norm

from fedplan.bounds import accounting, rdp
from fedplan.planner.export import load_schedule_file, render
from fedplan.planner.vandijk import (
    claim_needs_noise,
    matching_constant_noise,
    nearest_feasible,
    noise_against_growth_exponent,
    plan_vandijk,
    round_step_sizes,
    smallest_sigma,
)

EXAMPLE3 = dict(initial_size=16, client_size=10_000, grad_computations=25_000, epsilon=1, sigma=8, r0=1 / math.e)


@pytest.fixture(scope="module")
def paper_plan():
    return plan_vandijk(**EXAMPLE3, variant="paper", with_pld=False)


def test_plan_accounts_the_realised_schedule_at_the_papers_delta(paper_plan):
    sel = paper_plan.selection
    assert paper_plan.realised_rounds == 183 and sel.rounds == 195
    segments = [(s / 10_000, 8.0, 1) for s in sel.sizes]
    independent = rdp.epsilon_for_segments(segments, sel.delta)[0]
    assert paper_plan.tight_rdp.epsilon == pytest.approx(independent, rel=1e-12)
    assert paper_plan.tight_rdp.epsilon == pytest.approx(0.1308, abs=1e-4)  # spec §6 TV-9
    assert paper_plan.constant_rdp.epsilon == pytest.approx(0.0557, abs=1e-4)
    assert paper_plan.tight_rdp.epsilon < sel.epsilon  # the paper's claim is valid, and loose


def test_matching_constant_noise_reverses_under_tight_accounting(paper_plan):
    """Spec §9.3: a constant s = 16 schedule matching ε needs σ ≈ 3.154 (RDP): aggregated noise 124.7 vs 108.2."""
    matched = paper_plan.matched_constant
    assert matched["accountant"] == "rdp"
    assert matched["constant_noise_multiplier"] == pytest.approx(3.154, abs=1e-3)
    assert matched["constant_aggregated_noise"] == pytest.approx(124.7, abs=0.1)
    assert matched["increasing_aggregated_noise"] == pytest.approx(108.2, abs=0.1)
    check = accounting.get_epsilon(sample_rate=16 / 10_000, noise_multiplier=matched["constant_noise_multiplier"],
                                   steps=1563, delta=paper_plan.selection.delta, accountant="rdp")
    assert check.epsilon <= matched["epsilon"]


def test_plan_with_pld_matches_the_tight_values():
    plan = plan_vandijk(**EXAMPLE3, variant="paper")
    assert plan.tight_pld.accountant == "pld"
    assert plan.tight_pld.epsilon == pytest.approx(0.1145, abs=2e-4)  # spec: 0.1145
    assert plan.tight_pld.epsilon < plan.tight_rdp.epsilon
    assert matching_constant_noise(plan.selection, plan.tight_pld)["constant_aggregated_noise"] == pytest.approx(
        99.9, abs=0.5)


def test_smallest_sigma_meets_the_target_and_a_slightly_smaller_sigma_does_not():
    plan = plan_vandijk(**{**EXAMPLE3, "sigma": None}, sigma_range=(4, 20), delta=1e-10, with_pld=False)
    sel = plan.selection
    assert sel.delta <= 1e-10
    from fedplan.bounds.vandijk import select_parameters
    below = select_parameters(initial_size=16, client_size=10_000, grad_computations=25_000, p=1, epsilon=1,
                              sigma=sel.sigma * (1 - 2e-4), r0=1 / math.e)
    assert below.delta > 1e-10


def test_smallest_sigma_reports_an_unreachable_target():
    with pytest.raises(ValueError, match=r"no noise multiplier in \[4, 5\] makes the paper's claim reach δ ≤ 1e-30"):
        smallest_sigma(lambda s: plan_vandijk(**{**EXAMPLE3, "sigma": s}, with_pld=False).selection,
                       sigma_range=(4, 5), target_delta=1e-30)


def test_round_step_sizes_follow_the_per_iteration_rule():
    sizes = [16, 18, 19]
    assert round_step_sizes(sizes, learning_rate=0.15, decay=0.001, rule="inverse") == pytest.approx(
        (0.15, 0.15 / 1.016, 0.15 / 1.034))
    assert round_step_sizes(sizes, learning_rate=0.1, decay=0.01, rule="inverse-sqrt")[2] == pytest.approx(
        0.1 / (1 + 0.01 * math.sqrt(34)))


def test_export_round_trip(tmp_path, paper_plan):
    schedule = paper_plan.schedule()
    for suffix in ("json", "yaml"):
        path = tmp_path / f"plan.{suffix}"
        path.write_text(render(schedule, suffix))
        assert load_schedule_file(path) == schedule
    rows = schedule.rows()
    assert [row["sample_size"] for row in rows] == list(paper_plan.selection.sizes)
    assert schedule.metadata["neighboring_relation"] == "add_or_remove_one"
    assert "Poisson" in schedule.metadata["sampling"] and "replacement" in schedule.statement


def test_noise_against_growth_exponent_has_no_bound_between_the_transitions(paper_plan):
    rows, transitions = noise_against_growth_exponent(paper_plan, grad_computations=100_000, points=60)
    (p_minus,), (p_plus,) = transitions["p_minus"], transitions["p_plus"]
    assert p_minus < p_plus and [row["p"] for row in rows] == sorted(row["p"] for row in rows)
    for row in rows:
        if p_minus < row["p"] < p_plus:
            assert row["aggregated_noise"] is None
        elif row["p"] < p_minus or row["p"] > p_plus:
            assert row["aggregated_noise"] > 0


def _selection(delta: float, sigma: float = 1.0):
    return SimpleNamespace(sizes=(50, 100), client_size=1000, sigma=sigma, delta=delta)


def test_claim_needs_noise_compares_one_rounds_total_variation_with_the_claimed_delta():
    tv = 0.1 * (2 * norm.cdf(1 / (2 * 3.0)) - 1)  # the largest q = 0.1 at σ = 3: TV of its two output laws
    assert claim_needs_noise(_selection(tv * (1 - 1e-9), 3.0)) and not claim_needs_noise(_selection(tv * (1 + 1e-9),
                                                                                                      3.0))


def test_nearest_feasible_takes_the_selections_boundary_when_it_plans_else_the_certified_one():
    """The selection fails below 2.5, the claim δ = 0.1/v is certified above 0.1/TV = 2.6115 (TV = 0.1 erf(1/(2√2)))
    and the plan fails below 2.55: 2.5 rounded up to 3 digits (2.51) does not plan, so the answer is the certified
    boundary rounded up, 2.62."""
    tv = 0.1 * (2 * norm.cdf(0.5) - 1)
    calls = []

    def select(value):
        calls.append(value)
        if value < 2.5:
            raise ValueError("no increasing schedule")
        return _selection(0.1 / value)

    def plan(value):
        if value < 2.55:
            raise ValueError("nothing to plan")

    assert 0.1 / tv == pytest.approx(2.6115, abs=1e-4)
    assert nearest_feasible(select, plan, start=1.0, end=1e8) == 2.62
    assert len(calls) < 60
    assert nearest_feasible(select, lambda value: None, start=1.0, end=1e8) == 2.51  # the selection's boundary plans
    assert nearest_feasible(select, plan, start=1.0, end=2.0) is None  # nothing up to the end

    def fragile(value):  # a formula that cannot take the probed value: no plan there, not a crash
        if value < 2.5:
            raise ZeroDivisionError("float division by zero")
        return _selection(1e-9)

    assert nearest_feasible(fragile, lambda value: None, start=1.0, end=1e8) == 2.51
    assert nearest_feasible(select, plan, start=1.0, end=1e8, time_budget=0.0) is None


def test_nearest_feasible_searches_down_in_whole_numbers():
    def select(value):
        assert value == int(value)
        if value > 45_873:
            raise ValueError("no increasing schedule")
        return _selection(1e-9)

    assert nearest_feasible(select, lambda value: None, start=1e7, end=16, integer=True) == 45_800


def test_nearest_feasible_bisects_the_plan_itself_where_selection_and_claim_pass_and_plans_each_value_once():
    """Theorem 3 refusing the sizes (K = 17 at s₀ = 16 on the page) is neither a failed selection nor a vacuous
    claim: the plan's own boundary is sought, here 100.3 -> 100 (3 digits, rounded down), each value planned once."""
    planned = []

    def plan(value):
        planned.append(value)
        if value > 100.3:
            raise ValueError("sizes must keep max_i s_i/N_c below ...")

    assert nearest_feasible(lambda value: _selection(1e-9), plan, start=200.0, end=1.0) == 100.0
    assert len(planned) == len(set(planned)) < 30


def test_step_sizes_with_a_decay_near_the_largest_float_are_zero_after_the_first_round_without_a_warning():
    # API fuzz seed 3741284715 (CI): decay = 1.1e308 made β t overflow with a RuntimeWarning. η0/(1 + βt) is then
    # below 0.03/(1.1e308 · 16) ≈ 1.7e-311: 0.0 (or a subnormal) is its float value.
    import warnings

    from fedplan.planner.vandijk import round_step_sizes

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        steps = round_step_sizes([16, 17, 18], learning_rate=0.030589400286685393, decay=1.0990625371437174e+308,
                                 rule="inverse")
        rooted = round_step_sizes([16, 17], learning_rate=0.03, decay=1.0990625371437174e+308, rule="inverse-sqrt")
    assert steps[0] == 0.030589400286685393 and all(0.0 <= step < 1e-300 for step in steps[1:])
    assert rooted[0] == 0.03 and 0.0 <= rooted[1] < 1e-300
    # a moderate β is the printed η0/(1 + β t) at t = Σ_{j<i} s_j (Table 2, L1910): t = 0, 16, 33
    assert round_step_sizes([16, 17, 18], learning_rate=0.15, decay=0.001, rule="inverse") == pytest.approx(
        (0.15, 0.15 / 1.016, 0.15 / 1.033), rel=1e-15)
