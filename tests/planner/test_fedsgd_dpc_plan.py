"""planner.fedsgd_dpc: Laplace and Gaussian plans, fixed b or T, curve, landscape (CLI: tests/planner/tasks/)."""

import math

import numpy as np
import pytest

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.planner.fedsgd_dpc import (
    landscape_clients,
    laplace_landscape,
    plan_fedsgd_dpc,
    smallest_epsilon_to_train,
)


def problem():
    return zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10, smoothness=20,
                        gradient_bound=1, heterogeneity=0, initial_distance=1)


def test_laplace_plan_is_the_brute_force_integer_optimum():
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1)
    constants = zhou.laplace_constants(problem=problem(), epsilon=1, clipping_norm=1)
    grid = [(zhou.laplace_bound(constants=constants, rounds=t, clients_per_round=b), t, b)
            for b in range(1, 11) for t in range(0, 3 * plan.choice.rounds + 2, 1)]
    best = min(grid)
    assert plan.choice.bound == pytest.approx(best[0], rel=1e-12)
    assert plan.choice.bound <= plan.paper_choice.bound
    assert plan.summary()["regime"]["regime"] == "b*=1" and plan.choice.clients_per_round == 1
    curve = dict(plan.curve)
    assert all(curve[t] >= plan.choice.bound * (1 - 1e-12) for t in curve)


def test_fixed_b_and_fixed_T():
    constants = zhou.laplace_constants(problem=problem(), epsilon=1, clipping_norm=1)
    fixed_b = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1, fix_b=5)
    assert fixed_b.choice.clients_per_round == 5
    assert fixed_b.choice.rounds == zhou.optimal_rounds(constants=constants, clients_per_round=5).best
    fixed_t = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1, fix_T=50)
    assert fixed_t.choice.rounds == 50
    assert fixed_t.choice.clients_per_round == zhou.optimal_clients(constants=constants, rounds=50).best


def test_gaussian_with_c2_follows_the_sign_of_e1_over_n_plus_e2():
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="gaussian", epsilon=1, delta=1e-5, clipping_norm=1,
                           sample_rate=0.01, c2=1.0, max_rounds=500)
    constants = zhou.gaussian_constants(problem=problem(), epsilon=1, delta=1e-5, clipping_norm=1, sample_rate=0.01,
                                        c2=1.0)
    expected = 500 if constants.E1 / 10 + constants.E2 > 0 else 0
    assert plan.choice.clients_per_round == 10 and plan.choice.rounds == expected
    assert not plan.summary()["hypotheses_hold"]  # c2 is assumed, and the summary says so


def test_gaussian_with_accountant_noise_matches_the_bounds_search():
    small = zhou.Problem(num_clients=4, model_dim=5, client_sizes=200, strong_convexity=1, smoothness=2,
                         gradient_bound=1, heterogeneity=0.1, initial_distance=1, local_gradient_std=0.5)
    plan = plan_fedsgd_dpc(problem=small, mechanism="gaussian", epsilon=2, delta=1e-5, clipping_norm=1,
                           sample_rate=0.1, max_rounds=6)
    direct = zhou.gaussian_accountant_choice(problem=small, epsilon=2, delta=1e-5, clipping_norm=1, sample_rate=0.1,
                                             max_rounds=6)
    assert (plan.choice.rounds, plan.choice.clients_per_round) == (direct.rounds, direct.clients_per_round)
    assert plan.noise["noise_multipliers"] == list(direct.noise_multipliers)


def test_curve_has_rounds_zero_and_grows_past_the_optimum():
    plan = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1, clipping_norm=1)
    rounds = np.array([t for t, _ in plan.curve])
    assert rounds[0] == 0 and rounds[-1] >= 2 * plan.choice.rounds and math.isfinite(plan.curve[-1][1])
    assert dict(plan.curve)[plan.choice.rounds] == plan.choice.bound  # T* is on the curve, at its bound


def test_laplace_landscape_minimum_is_the_exact_integer_optimum():
    problem = zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10.0, smoothness=20.0,
                           gradient_bound=1.0, heterogeneity=0.0, initial_distance=1.0)
    plan = plan_fedsgd_dpc(problem=problem, mechanism="laplace", epsilon=0.05, clipping_norm=1.0)
    cells = laplace_landscape(problem=problem, epsilon=0.05, clipping_norm=1.0,
                              rounds=range(3 * plan.choice.rounds + 1))
    assert len(cells) == 10 * (3 * plan.choice.rounds + 1)
    best = min(cells, key=lambda cell: cell["U"])
    assert (best["T"], best["b"]) == (plan.choice.rounds, plan.choice.clients_per_round)
    assert best["U"] == pytest.approx(plan.choice.bound, rel=1e-12)
    with pytest.raises(ValueError, match="rounds must hold 1 to 1000 values; got 0"):
        laplace_landscape(problem=problem, epsilon=0.05, clipping_norm=1.0, rounds=[])
    with pytest.raises(ValueError, match="rounds must be an integer in"):
        laplace_landscape(problem=problem, epsilon=0.05, clipping_norm=1.0, rounds=[-1])


def brute_force_trains(problem, epsilon, rounds=50) -> bool:
    """Whether the smallest U(T, b) over T ≤ ``rounds`` and every b (zhou L354, corrected) is at some T ≥ 1."""
    constants = zhou.laplace_constants(problem=problem, epsilon=epsilon, clipping_norm=1.0)
    best = min((zhou.laplace_bound(constants=constants, rounds=t, clients_per_round=b), t)
               for b in range(1, problem.num_clients + 1) for t in range(rounds + 1))
    return best[1] >= 1


def test_smallest_epsilon_to_train_is_where_the_brute_force_optimum_leaves_t_zero():
    """At ε = 1e-6 the optimum is T* = 0 (no training); the answer ε₀ (3 digits, rounded up) trains, ε₀ less one unit
    in its last digit does not, by a brute-force search of U(T, b) over the grid."""
    found = smallest_epsilon_to_train(problem=problem(), clipping_norm=1.0, epsilon=1e-6)
    assert found == 0.00265
    assert brute_force_trains(problem(), found) and not brute_force_trains(problem(), 0.00264)
    assert plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=found, clipping_norm=1).choice.rounds == 1
    paper = smallest_epsilon_to_train(problem=problem(), clipping_norm=1.0, epsilon=1e-6, variant="paper")
    rounds = [plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=e, clipping_norm=1,
                              variant="paper").choice.rounds for e in (paper, paper - 1e-5)]
    assert paper == 0.00125 and rounds == [1, 0]
    with pytest.raises(ValueError, match="epsilon must be an ε at which T\\* = 0; got 0.05, where T\\* >= 1"):
        smallest_epsilon_to_train(problem=problem(), clipping_norm=1.0, epsilon=0.05)


def test_smallest_epsilon_to_train_is_none_when_no_epsilon_trains():
    """Y₀ = 0 and Γ = 0: θ₀ is θ*, C₁/N + C₃ = 0 (zhou L356), U(0, N) = 0 and no round can improve on it."""
    still = zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10, smoothness=20,
                         gradient_bound=1, heterogeneity=0, initial_distance=0)
    assert smallest_epsilon_to_train(problem=still, clipping_norm=1.0, epsilon=1.0) is None


def test_landscape_clients_keeps_every_b_up_to_the_limit_and_the_answer_beyond():
    assert landscape_clients(num_clients=10, marked=3) == list(range(1, 11))
    spread = landscape_clients(num_clients=1000, marked=500)
    assert spread[0] == 1 and spread[-1] == 1000 and 500 in spread and len(spread) <= 41
    assert all(later / earlier <= 1.25 for earlier, later in zip(spread[:-1], spread[1:], strict=True) if earlier >= 8)
    cells = laplace_landscape(problem=problem(), epsilon=0.05, clipping_norm=1.0, rounds=[0, 120],
                              clients_per_round=[1, 10])
    assert [(cell["T"], cell["b"]) for cell in cells] == [(0, 1), (120, 1), (0, 10), (120, 10)]
    with pytest.raises(ValueError, match=r"clients_per_round must be an integer in \[1, 10\]; got 11"):
        laplace_landscape(problem=problem(), epsilon=0.05, clipping_norm=1.0, rounds=[0], clients_per_round=[11])


def test_laplace_schedule_states_the_guarantee_of_its_noise():
    """The export's privacy block: record-level pure ε by basic composition over the most replies. Corrected: the
    target 0.05 over ⌈bT/N⌉ = 12 replies; paper, b = 5: noise for bT/N = 24.5 replies, 25 made, ε = 25 · 0.05/24.5
    (erratum Z-1). One change-point whatever T (ε = 1000 runs T* = 2 418 080 rounds)."""
    corrected = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=0.05, clipping_norm=1).schedule()
    assert corrected.privacy["epsilon"] == pytest.approx(0.05, rel=1e-12) and corrected.privacy["releases"] == 12
    assert corrected.privacy["epsilon_per_release"] == pytest.approx(0.05 / 12, rel=1e-12)
    assert (corrected.privacy["unit"], corrected.privacy["accountant"], corrected.privacy["delta"]) == (
        "example", "basic", 0.0)
    paper = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=0.05, clipping_norm=1, fix_b=5,
                            variant="paper").schedule()
    assert paper.rounds == 49 and paper.privacy["releases"] == 25
    assert paper.privacy["epsilon"] == pytest.approx(25 * 0.05 / 24.5, rel=1e-12)
    long = plan_fedsgd_dpc(problem=problem(), mechanism="laplace", epsilon=1000, clipping_norm=1).schedule()
    assert long.rounds == 2418080 and len(long.change_points) == 1
