"""AUDP/MAPA simulation (Li Alg. 1): FIFO staleness (TV-S1..S3), the L2-Laplace noise, stages, drops, ledger."""

import dataclasses

import numpy as np
import pytest

from fedplan.bounds import composition
from fedplan.bounds import mapa as li
from fedplan.planner.simulate import mapa
from fedplan.planner.simulate.adp2sgd import unit_norm_problem
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.engine import Durations


@pytest.fixture(scope="module")
def data():
    return load_dataset("synthetic", n_samples=400, n_features=3, seed=2)


def audp(data, edges=5, iterations=200, **options):
    problem = unit_norm_problem(dataset=data, clients=edges, seed=0)
    defaults = {"batch_size": 4, "epsilon": 5.0, "clipping_norm": 1.0, "smoothness": 0.25, "max_staleness": edges,
                "sigma": 2.0, "compute": Durations("constant", 1.0), "eval_every": 100}
    return mapa.run_audp(problem=problem, iterations=iterations, **(defaults | options))


def test_tv_s1_computed_on_x2_applied_at_x8_has_staleness_6(data):
    rows = audp(data, edges=7, iterations=9).rows
    assert rows[7]["round"] == 7 and rows[7]["staleness"] == 6  # iteration t = 8 reads x_2 (li L181)


@pytest.mark.parametrize("edges", [5, 10])
def test_tv_s2_homogeneous_fifo_staleness_is_min_t_minus_1_k_minus_1(data, edges):
    result = audp(data, edges=edges, iterations=3 * edges)
    assert result.column("staleness").tolist() == [min(t - 1, edges - 1) for t in range(1, 3 * edges + 1)]
    assert result.config["uploads"] == [3] * edges


def test_tv_s3_heterogeneous_exponential_mean_staleness_is_k_minus_one_and_max_unbounded(data):
    result = audp(data, iterations=6000, compute=Durations("exponential", 1.0))
    assert result.delays["mean_delay"] == pytest.approx(4.0, abs=0.1)
    assert result.delays["max_delay"] > 2 * 5 and result.delays["violations"] > 0


def test_drop_policy_keeps_tau_max_and_counts_dropped_uploads(data):
    result = audp(data, iterations=800, compute=Durations("exponential", (1.0, 1.0, 2.0, 2.0, 4.0)),
                  tau_policy="drop", max_staleness=3)
    assert result.delays["max_delay"] <= 3 and result.config["dropped_uploads"] > 0
    assert sum(result.config["uploads"]) == 800 + result.config["dropped_uploads"]


def test_l2_laplace_noise_second_moment_and_radius_tv_n1():
    rng = np.random.default_rng(0)
    draws = np.array([mapa.l2_laplace_noise(rng, scale=2.5, dim=10) for _ in range(20_000)])
    radius = np.linalg.norm(draws, axis=1)
    assert np.mean(radius**2) == pytest.approx(687.5, rel=0.02)  # N(N+1) lambda^2, spec TV-N1
    assert np.mean(radius) == pytest.approx(25.0, rel=0.01)
    assert np.abs(draws.mean(axis=0)).max() < 0.3


def test_audp_eq10_steps_and_recorded_noise_moment_follow_the_bounds(data):
    result = audp(data, iterations=50)
    db = result.config["delta_b"]
    assert db == pytest.approx(2.0**2 / 4 + 3 * 4 * (2 * 1.0 / 4 / 5.0) ** 2, rel=1e-12)
    expected = [li.audp_learning_rate(t=t, smoothness=0.25, max_staleness=5, delta_b=db) for t in range(1, 51)]
    assert result.column("learning_rate").tolist() == pytest.approx(expected, rel=1e-15)
    assert set(result.column("noise_moment")) == {li.noise_second_moment(scale=0.5 / 5.0, model_dim=3)}
    constant = audp(data, iterations=20, step_rule="constant")
    assert set(constant.column("learning_rate")) == {1 / (2 * 0.25 * 6)}


def test_mapa_follows_its_plan_stage_by_stage(data):
    problem = unit_norm_problem(dataset=data, clients=5, seed=0)
    plan = mapa.plan_for_problem(problem, epsilon=5.0, batch_size=4, iterations=600)
    result = mapa.run_mapa(problem=problem, plan=plan, epsilon=5.0, compute=Durations("constant", 1.0),
                           eval_every=100)
    for stage in plan.stages:
        rows = result.rows[stage.start - 1:stage.end]
        assert {row["stage"] for row in rows} == {stage.index}
        assert {row["learning_rate"] for row in rows} == {stage.learning_rate}
        assert all(row["sensitivity"] >= stage.sensitivity for row in rows)  # late uploads carry older Delta S
    assert len(plan.stages) >= 2 and result.column("clipped_fraction").max() > 0


def mapa_run(data, edges=4, iterations=10, max_staleness=None, **options):
    problem = unit_norm_problem(dataset=data, clients=edges, seed=0)
    plan = mapa.plan_for_problem(problem, epsilon=0.5, batch_size=4, iterations=iterations)  # tau_max = K
    if max_staleness is not None:
        plan = dataclasses.replace(plan, inputs={**plan.inputs, "max_staleness": max_staleness})
    return plan, mapa.run_mapa(problem=problem, plan=plan, epsilon=0.5, **options)


def test_round_robin_gives_every_edge_floor_or_ceil_of_t_over_k_uploads_and_the_planned_epsilon(data):
    _, result = mapa_run(data, upload_order="round_robin", tau_policy="drop")
    assert result.config["uploads"] == [3, 3, 2, 2] and result.config["upload_order"] == "round_robin"
    assert result.column("edge").tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]  # k(t) = (t - 1) mod K
    assert result.column("staleness").tolist() == [0, 1, 2, 3, 3, 3, 3, 3, 3, 3]  # cyclic delays, li L401
    assert result.privacy["per_edge_optimal"][0] == composition.optimal_composition_epsilon(epsilon=0.5, count=3,
                                                                                            delta=1e-5)
    assert result.epsilon == 3 * 0.5 and result.config["dropped_uploads"] == 0


def test_random_order_is_the_default_and_can_load_one_edge_beyond_ceil_t_over_k(data):
    _, result = mapa_run(data, iterations=40)
    assert result.config["upload_order"] == "random" and max(result.config["uploads"]) > 10


def test_gradient_every_k_computes_the_full_pass_at_every_kth_update_and_each_stage_start(data):
    plan, every = mapa_run(data, edges=5, iterations=600, upload_order="round_robin", seed=3)
    _, third = mapa_run(data, edges=5, iterations=600, upload_order="round_robin", seed=3, gradient_every=3)
    starts = {stage.start for stage in plan.stages}
    assert len(starts) >= 2 and third.config["gradient_every"] == 3
    # row t - 1 holds ||grad f(x_t)||^2, computed at t = 1, 4, 7, ... and at each stage's first update
    assert [row["grad_norm_sq"] is not None for row in third.rows] == [(t - 1) % 3 == 0 or t in starts
                                                                       for t in range(1, 601)]
    assert [row["objective"] is not None for row in third.rows[:-1]] == [t % 3 == 0 or t + 1 in starts
                                                                         for t in range(1, 600)]
    assert all(a["grad_norm_sq"] == b["grad_norm_sq"] for a, b in zip(every.rows, third.rows, strict=True)
               if b["grad_norm_sq"] is not None)
    assert every.final == third.final  # the same trajectory: the full passes draw no randomness


def test_mapa_ledger_reproduces_tv_a1_and_composes_with_bounds_composition():
    ledger = mapa.mapa_ledger(uploads=[5000] * 5, epsilon=0.1, delta_slack=1e-5, iterations=25_000)
    assert ledger["paper_global"] == pytest.approx(2500, rel=1e-12)
    assert ledger["epsilon"] == pytest.approx(500, rel=1e-12) and ledger["delta"] == 0.0
    assert ledger["per_edge_advanced"][0] == pytest.approx(86.5162, abs=5e-5)
    assert ledger["per_edge_optimal"][0] == composition.optimal_composition_epsilon(epsilon=0.1, count=5000,
                                                                                    delta=1e-5)
    assert ledger["per_edge_optimal"][0] < ledger["per_edge_advanced"][0] < ledger["epsilon"]
    assert ledger["round_robin_uploads"] == [5000] * 5


def test_ledger_says_the_gaussian_with_replacement_accountant_does_not_apply(data):
    """Batches are drawn with replacement, but the noise is Laplace-type: the pure-DP statement stays, no
    with-replacement (Gaussian mixture) ε is invented."""
    result = audp(data, iterations=50, epsilon=1.0)
    ledger = result.privacy
    assert ledger["mechanism"] == "laplace-type (l2)" and ledger["delta"] == 0.0
    assert ledger["with_replacement_accountant"].startswith("not applicable: the upload noise is Laplace-type")
    assert "with_replacement accountant" in ledger["statement"] and "does not apply" in ledger["statement"]
    assert ledger["statement"].startswith("Every upload is pure epsilon_k-DP")
    assert ledger["epsilon"] == max(ledger["per_edge_basic"])


def test_ledger_counts_actual_uploads_per_edge_with_their_own_epsilon(data):
    result = audp(data, iterations=100, epsilon=[1.0, 2.0, 3.0, 4.0, 5.0])
    assert result.privacy["per_edge_basic"] == pytest.approx([20.0, 40.0, 60.0, 80.0, 100.0])
    assert result.epsilon == 100.0 and result.privacy["worst_edge"] == 4


@pytest.mark.parametrize("options, message", [
    ({"epsilon": [1.0, 2.0]}, "epsilon"), ({"tau_policy": "wait"}, "tau_policy"), ({"iterations": 0}, "iterations"),
    ({"step_rule": "adagrad"}, "step_rule"), ({"clipping_norm": 0.0}, "clipping_norm"),
])
def test_bad_options_raise(data, options, message):
    with pytest.raises(ValueError, match=message):
        audp(data, **options)


@pytest.mark.parametrize("options, message", [
    ({"upload_order": "fastest"}, "^upload_order must be one of 'random', 'round_robin'; got 'fastest'"),
    ({"upload_order": "round_robin", "compute": Durations("constant", 1.0)},
     r"^compute must be None with upload_order='round_robin' .*; got Durations\("),
    ({"upload_order": "round_robin", "tau_policy": "drop", "max_staleness": 2},
     r"^tau_policy='drop' with upload_order='round_robin' needs K - 1 <= max_staleness .*got K = 4, max_staleness = "
     "2: use tau_policy='none'$"),
    ({"gradient_every": 0}, "^gradient_every must be"),
])
def test_bad_mapa_options_raise(data, options, message):
    with pytest.raises(ValueError, match=message):
        mapa_run(data, **options)


def test_plan_for_another_number_of_edges_is_rejected(data):
    problem = unit_norm_problem(dataset=data, clients=5, seed=0)
    plan = mapa.plan_for_problem(unit_norm_problem(dataset=data, clients=4, seed=0), epsilon=5.0, batch_size=4,
                                 iterations=10)
    with pytest.raises(ValueError, match="edges"):
        mapa.run_mapa(problem=problem, plan=plan, epsilon=5.0)


def test_presets_run_in_seconds():
    for name in mapa.PRESETS:
        result = mapa.run_preset(name)
        assert result.rounds == 4000 and result.wall_time_s < 6 and result.config["preset"] == name
