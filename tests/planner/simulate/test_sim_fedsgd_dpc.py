"""FedSGD-DPC (Zhou Alg. 1) on the engine: reduction to gradient descent, selections, ledgers, errors."""

import math

import numpy as np
import pytest

from fedplan.bounds import accounting
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.fedsgd_dpc import run_fedsgd_dpc
from fedplan.planner.simulate.problem import make_problem


@pytest.fixture(scope="module")
def problem():
    data = load_dataset("synthetic", n_samples=1000, n_features=5, seed=3, test_fraction=0.2)
    return make_problem(dataset=data, clients=8, seed=3, regularization=0.02)


def test_full_participation_without_noise_is_gradient_descent(problem):
    """b = N, equal d_i, no mechanism: θ_{t+1} = mean_i (θ_t − η ∇F_i(θ_t)) = θ_t − η ∇F(θ_t)."""
    steps = [0.8, 0.6, 0.5, 0.4, 0.3]
    result = run_fedsgd_dpc(problem=problem, rounds=5, clients_per_round=8, step_sizes=steps, mechanism="none")
    X, y = problem.dataset.X_train, problem.dataset.y_train
    theta = np.zeros(5)
    for eta in steps:
        theta = theta - eta * problem.model.gradient(X, y, theta)
    assert result.final["loss"] == pytest.approx(problem.evaluator()(theta)["loss"], rel=1e-12)
    assert result.privacy["epsilon"] is None


@pytest.mark.parametrize("selection", ["round_robin", "shuffle_partition"])
def test_gaussian_ledger_counts_ceil_bT_over_N_replies_and_meets_the_target(problem, selection):
    result = run_fedsgd_dpc(problem=problem, rounds=12, clients_per_round=2, step_sizes=0.3, mechanism="gaussian",
                            clipping_norm=1.0, sample_rate=0.3, epsilon=1.5, selection=selection, delta=1e-5)
    assert result.privacy["releases_per_client"] == [3] * 8  # ceil(bT/N) = 3
    assert result.epsilon <= 1.5
    z = result.config["noise_per_client"][0]
    expected = accounting.get_epsilon(sample_rate=0.3, noise_multiplier=z, steps=3, delta=1e-5, accountant="rdp")
    assert result.epsilon == pytest.approx(expected.epsilon, rel=1e-12)


def test_uniform_selection_is_accounted_on_the_replies_made(problem):
    result = run_fedsgd_dpc(problem=problem, rounds=20, clients_per_round=2, step_sizes=0.3, mechanism="laplace",
                            clipping_norm=3.0, epsilon=2.0, selection="uniform", seed=5)
    replies = result.privacy["releases_per_client"]
    assert sum(replies) == 40 and max(replies) > 5  # more than bT/N = 5 for some client
    # noise calibrated for T = 20 replies (the most uniform selection allows): epsilon = replies * 2/20
    assert result.epsilon == pytest.approx(max(replies) * 2.0 / 20, rel=1e-12)


def test_determinism_time_and_divergence(problem):
    options = {"rounds": 6, "clients_per_round": 3, "step_sizes": 0.5, "mechanism": "gaussian",
               "clipping_norm": 1.0, "sample_rate": 0.5, "noise_multiplier": 1.0, "seed": 9}
    first = run_fedsgd_dpc(problem=problem, **options)
    assert first.rows == run_fedsgd_dpc(problem=problem, **options).rows
    assert first.virtual_time > 0 and all(math.isfinite(row["time"]) for row in first.rows)
    data = load_dataset("synthetic-linear", n_samples=500, n_features=4, seed=0)
    ridge = make_problem(dataset=data, clients=4, seed=0, with_optimum=False)
    diverged = run_fedsgd_dpc(problem=ridge, rounds=200, clients_per_round=4, step_sizes=100.0, mechanism="none")
    assert diverged.diverged and diverged.final["loss"] is None


@pytest.mark.parametrize(("options", "message"), [
    ({"mechanism": "gaussian", "clipping_norm": 1.0, "sample_rate": 0.5},
     "give exactly one of epsilon .calibrated noise. and noise_multiplier"),
    ({"mechanism": "laplace"}, "clipping_norm must be a real number in"),
    ({"mechanism": "none", "selection": "random"}, "selection must be one of"),
    ({"mechanism": "none", "clients_per_round": 9}, r"clients_per_round must be an integer in \[1, 8\]; got 9"),
])
def test_bad_options(problem, options, message):
    arguments = {"rounds": 3, "clients_per_round": 2, "step_sizes": 0.1, **options}
    with pytest.raises(ValueError, match=message):
        run_fedsgd_dpc(problem=problem, **arguments)
