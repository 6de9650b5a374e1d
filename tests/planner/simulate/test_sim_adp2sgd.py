"""A(DP)²SGD simulation (Xu Alg. 1): graphs and their spectral gap, staleness, mean identity, ledger, presets."""

import math

import numpy as np
import pytest

from fedplan.bounds import adp2sgd as xu
from fedplan.planner.simulate import adp2sgd
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.engine import Durations
from fedplan.planner.simulate.graphs import gossip_expectation, make_graph, spectral_gap


@pytest.fixture(scope="module")
def data():
    return load_dataset("synthetic", n_samples=800, n_features=5, seed=3)


def problem_for(data, workers):
    return adp2sgd.unit_norm_problem(dataset=data, clients=workers, seed=0)


def run(data, workers=4, topology="complete", **options):
    defaults = {"steps": 300, "batch_size": 8, "learning_rate": 0.5, "noise_to_sensitivity": 2.0, "clipping_norm": 1.0,
                "eval_every": 100}
    return adp2sgd.run_adp2sgd(problem=problem_for(data, workers), graph=make_graph(topology=topology, workers=workers),
                               **(defaults | options))


@pytest.mark.parametrize("workers", [4, 8, 16])
def test_ring_and_complete_spectral_gaps_match_their_closed_forms(workers):
    assert spectral_gap(make_graph(topology="ring", workers=workers)) == pytest.approx(
        1 - (1 - math.cos(2 * math.pi / workers)) / workers, rel=1e-12)
    assert spectral_gap(make_graph(topology="complete", workers=workers)) == pytest.approx(1 - 1 / (workers - 1),
                                                                                        rel=1e-12)


def test_spec_topology_table_rho_values():
    # spec xu §4.7 graph_calc.out: K=4 ring 0.75, K=8 ring 0.96339, K=16 ring 0.99524, K=32 ring 0.99940
    for workers, rho in ((4, 0.75), (8, 0.96339), (16, 0.99524), (32, 0.99940)):
        assert spectral_gap(make_graph(topology="ring", workers=workers)) == pytest.approx(rho, abs=5e-6)


def test_gossip_expectation_matches_a_monte_carlo_average_of_pairwise_averaging():
    graph = make_graph(topology="random_regular", workers=10, degree=3, seed=1)
    rng = np.random.default_rng(0)
    total, draws = np.zeros((10, 10)), 20_000
    for _ in range(draws):
        k = rng.integers(10)
        j = graph.neighbors[k][rng.integers(3)]
        e = np.zeros(10)
        e[k], e[j] = 1.0, -1.0
        A = np.eye(10) - 0.5 * np.outer(e, e)
        total += A.T @ A
    assert np.max(np.abs(total / draws - gossip_expectation(graph))) < 0.01


def test_torus_and_random_regular_shapes_and_determinism():
    torus = make_graph(topology="torus", workers=12)
    assert {len(row) for row in torus.neighbors} == {4} and torus.edges == 24
    a = make_graph(topology="random_regular", workers=12, degree=3, seed=5)
    b = make_graph(topology="random_regular", workers=12, degree=3, seed=5)
    assert a.neighbors == b.neighbors and {len(row) for row in a.neighbors} == {3}


@pytest.mark.parametrize("options, message", [
    ({"topology": "torus", "workers": 10}, "r, c >= 3"),
    ({"topology": "random_regular", "workers": 9, "degree": 3}, "even"),
    ({"topology": "random_regular", "workers": 9}, "degree"),
    ({"topology": "star", "workers": 9}, "topology"),
    ({"topology": "ring", "workers": 2}, "workers"),
])
def test_bad_graphs_raise_naming_the_problem(options, message):
    with pytest.raises(ValueError, match=message):
        make_graph(**options)


def test_mean_identity_holds_to_rounding_and_runs_are_deterministic(data):
    first, second = run(data), run(data)
    assert first.config["mean_identity_residual"] < 1e-12
    assert first.rows == second.rows and first.column("grad_norm_sq")[0] > 0
    assert run(data, seed=1).rows != first.rows


def test_logical_staleness_fixed_and_uniform(data):
    fixed = run(data, staleness="fixed", max_staleness=3)
    assert fixed.column("staleness").tolist() == [min(t, 3) for t in range(300)]
    uniform = run(data, staleness="uniform", max_staleness=3).column("staleness")
    assert uniform.max() <= 3 and 1.0 < uniform.mean() < 2.0


def test_event_staleness_has_mean_k_minus_one_and_case_ii_slows_one_worker(data):
    equal = run(data, workers=8, topology="ring", steps=2000, staleness="event")
    assert equal.delays["mean_delay"] == pytest.approx(7.0, abs=0.3)
    slow = run(data, workers=8, topology="ring", steps=2000, staleness="event",
               compute=Durations("exponential", (10.0,) + (1.0,) * 7))
    share = slow.config["worker_updates"][0] / 2000
    assert share == pytest.approx(0.1 / (0.1 + 7), abs=0.006)  # spec xu S8


def test_ledger_headline_is_the_tight_per_worker_epsilon_of_the_busiest_worker(data):
    result = run(data)
    busiest = max(result.config["worker_updates"])
    setting = xu.Setting(workers=4, examples_per_worker=result.config["client_sizes"][0], batch_size=8, steps=300,
                         delta=1e-5,
                         worker_steps=busiest)
    expected = xu.tight_epsilon(setting=setting, noise_to_sensitivity=2.0, sampling="per_worker").epsilon
    assert result.epsilon == expected
    assert result.privacy["paper_model"]["epsilon"] < result.epsilon
    assert result.privacy["neighboring_relation"] == "replace_one"
    assert run(data, noise_to_sensitivity=0.0).epsilon is None


def test_config_records_xus_z_and_fedplans_noise_multiplier_of_the_same_noise(data):
    """z = noise std / (2G/B) on the mean gradient; fedplan's (Opacus's) noise_multiplier of that noise is noise std /
    G on the sum of the B clipped gradients, 2z."""
    config = run(data, steps=10, noise_to_sensitivity=1.5, clipping_norm=2.0).config
    assert config["noise_to_sensitivity"] == 1.5 and config["noise_multiplier"] == 3.0
    assert config["noise_std"] == pytest.approx(2 * 2.0 * 1.5 / 8, rel=1e-15)
    assert config["noise_std"] * 8 / 2.0 == pytest.approx(config["noise_multiplier"], rel=1e-15)


def test_round_robin_gives_every_worker_floor_or_ceil_of_t_over_k_and_the_planned_epsilon(data):
    result = run(data, steps=10, staleness="fixed", max_staleness=0, worker_order="round_robin")
    assert result.config["worker_updates"] == [3, 3, 2, 2] and result.config["worker_order"] == "round_robin"
    assert result.column("worker").tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert result.config["client_sizes"] == [160] * 4  # the 640 training examples of the fixture, 4 clients
    setting = xu.Setting(workers=4, examples_per_worker=160, batch_size=8, steps=10, delta=1e-5, worker_steps=3)
    assert result.epsilon == xu.tight_epsilon(setting=setting, noise_to_sensitivity=2.0, sampling="per_worker").epsilon
    assert run(data, steps=10, staleness="uniform", max_staleness=2,
               worker_order="round_robin").config["worker_updates"] == [3, 3, 2, 2]


def test_random_order_is_the_default_and_can_load_one_worker_beyond_ceil_t_over_k(data):
    result = run(data, steps=10, staleness="fixed", max_staleness=0)
    assert result.config["worker_order"] == "random" and max(result.config["worker_updates"]) > 3


def test_gradient_every_k_computes_the_full_gradient_at_every_kth_iteration_of_the_same_run(data):
    every = run(data, steps=30, staleness="fixed", max_staleness=0, worker_order="round_robin", seed=4)
    third = run(data, steps=30, staleness="fixed", max_staleness=0, worker_order="round_robin", seed=4,
                gradient_every=3)
    assert third.config["gradient_every"] == 3
    assert [row["grad_norm_sq"] is None for row in third.rows] == [t % 3 != 0 for t in range(30)]
    assert [row["grad_norm_sq"] for row in third.rows[::3]] == [row["grad_norm_sq"] for row in every.rows[::3]]
    assert every.final == third.final  # the same trajectory: the gradient norms draw no randomness


def test_divergence_is_reported(data):
    result = run(data, learning_rate=1e308, noise_to_sensitivity=100.0)
    assert result.diverged and "finite" in result.divergence


@pytest.mark.parametrize("options, message", [
    ({"steps": 0}, "steps"), ({"batch_size": 1000}, "batch_size"), ({"staleness": "late"}, "staleness"),
    ({"learning_rate": 0.0}, "learning_rate"), ({"workers": 5, "topology": "ring"}, "clients"),
    ({"worker_order": "fastest"}, "worker_order must be one of 'random', 'round_robin'; got 'fastest'"),
    ({"gradient_every": 0}, "gradient_every must be"),
    ({"noise_to_sensitivity": -1.0}, r"^noise_to_sensitivity must be a real number in \[0, inf\); got -1"),
    ({"worker_order": "round_robin", "staleness": "event"},
     r"worker_order='round_robin' needs the logical view, staleness 'fixed' or 'uniform'.*got staleness='event'"),
])
def test_bad_options_raise(data, options, message):
    workers = options.pop("workers", 4)
    topology = options.pop("topology", "complete")
    with pytest.raises(ValueError, match=message):
        if workers != 4:
            adp2sgd.run_adp2sgd(problem=problem_for(data, 4), graph=make_graph(topology=topology, workers=workers),
                                steps=10, batch_size=4, learning_rate=0.1, noise_to_sensitivity=1.0, clipping_norm=1.0)
        else:
            run(data, **options)


def test_unit_norm_problem_has_unit_rows_equal_clients_and_no_regularization(data):
    problem = problem_for(data, 3)
    assert np.allclose(problem.stacked.row_sq_norms, 1.0) and len(set(problem.client_sizes)) == 1
    assert problem.model.rho == 0.0


def test_preset_case2_runs_in_seconds_and_reports_its_name():
    result = adp2sgd.run_preset("adp2sgd-case2")
    assert result.rounds == 3000 and result.config["preset"] == "adp2sgd-case2" and result.wall_time_s < 5
    assert result.config["worker_updates"][0] < 3000 / 9 / 3


def test_ledger_shows_theorem2s_number_without_a_guarantee_below_lemma2s_noise():
    # z = 1 < sqrt(1.5) (xu L508): Theorem 2's formula at the best mu, alpha = min(1 + sqrt(L/rho), log(1/(2 gamma)))
    ledger = adp2sgd.adp2sgd_ledger(sizes=(200, 200, 200, 200), batch_size=8, steps=300, worker_updates=(75,) * 4,
                                    noise_to_sensitivity=1.0, delta=1e-5)
    gamma, lam = 8 / (4 * 200), math.log(1e5)
    rho = 5 * 300 * gamma**2
    alpha = min(1 + math.sqrt(lam / rho), math.log(1 / (2 * gamma)))
    assert ledger["theorem2_certificate"] == pytest.approx(rho * alpha + lam / (alpha - 1), rel=1e-12)
    assert ledger["theorem2_guarantee"] == "no guarantee"
    assert "no guarantee (failing: sigma^2/Delta^2 >= 1.5 (Lemma 2))" in ledger["statement"]
    inside = adp2sgd.adp2sgd_ledger(sizes=(200, 200, 200, 200), batch_size=8, steps=300, worker_updates=(75,) * 4,
                                    noise_to_sensitivity=2.0, delta=1e-5)
    assert inside["theorem2_guarantee"] == "guarantee" and "Theorem 2 certifies" in inside["statement"]
