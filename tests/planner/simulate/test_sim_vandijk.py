"""van Dijk et al.'s Algorithms 1-4 on the engine: reduction to SGD, delays, wait rules, ledger, errors."""

import json
import math

import numpy as np
import pytest
from scipy.special import expit

from fedplan.bounds import accounting
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.engine import Durations, spawn_generators
from fedplan.planner.simulate.problem import make_problem
from fedplan.planner.simulate.vandijk import run_vandijk

ZERO = Durations("constant", 0.0)


@pytest.fixture(scope="module")
def problem():
    data = load_dataset("synthetic", n_samples=1200, n_features=5, seed=1)
    return make_problem(dataset=data, clients=4, seed=1, regularization=0.01)


@pytest.fixture(scope="module")
def single():
    data = load_dataset("synthetic", n_samples=300, n_features=4, seed=2)
    return make_problem(dataset=data, clients=1, seed=2, regularization=0.02)


def test_one_client_without_latency_is_plain_sgd_with_round_step_sizes(single):
    """n = 1, no latency, no noise: the server model is sequential SGD over the same sampled examples."""
    sizes, steps, clip = [3, 5, 7, 4], [0.5, 0.4, 0.3, 0.2], 0.6
    result = run_vandijk(problem=single, sizes=sizes, step_sizes=steps, clipping_norm=clip, seed=7,
                         uplink=ZERO, downlink=ZERO, eval_every=1)
    client = single.clients[0]
    rng = spawn_generators(7, 6)[0]  # the client's sampling stream
    w = np.zeros(4)
    for size, eta in zip(sizes, steps, strict=True):
        for j in rng.integers(0, client.size, size):
            x, y = client.X[j], client.y[j]
            g = (expit(x @ w) - y) * x + 0.02 * w
            w = w - eta * g * min(1.0, clip / np.linalg.norm(g))
    expected = single.evaluator()(w)
    assert result.final["loss"] == pytest.approx(expected["loss"], rel=1e-12)
    assert result.final["dist_sq"] == pytest.approx(expected["dist_sq"], rel=1e-10)
    assert result.delays == {"computations": 19, "max_delay": 0, "mean_delay": 0.0, "violations": 0}


def test_runs_are_deterministic_per_seed_and_differ_across_seeds(problem):
    options = {"sizes": [4 + i for i in range(10)], "step_sizes": 0.3, "noise_multiplier": 1.0, "clipping_norm": 1.0}
    first = run_vandijk(problem=problem, seed=3, **options)
    assert first.rows == run_vandijk(problem=problem, seed=3, **options).rows
    assert first.rows != run_vandijk(problem=problem, seed=4, **options).rows
    assert [row["round"] for row in first.rows] == list(range(10))
    assert all(b["time"] >= a["time"] for a, b in zip(first.rows, first.rows[1:], strict=False))


def test_exact_wait_rule_keeps_every_delay_within_tau_and_the_literal_alg1_rule_does_not(problem):
    """Spec I-1: only 'exact' (and the conservative Alg. 4 rule) enforce Definition 1's tau_hat(t) <= tau(t)."""
    options = {"sizes": [10 + i for i in range(25)], "step_sizes": 0.3, "seed": 3}

    def tau(t):
        return 60 + 2 * np.sqrt(t)

    for rule in ("exact", "alg4_literal"):
        result = run_vandijk(problem=problem, wait_rule=rule, tau=tau, **options)
        assert result.delays["violations"] == 0 and result.delays["max_delay"] <= tau(4000)
    literal = run_vandijk(problem=problem, wait_rule="alg1_literal", tau=tau, **options)
    free = run_vandijk(problem=problem, **options)
    assert literal.delays["violations"] > 0
    assert free.delays["max_delay"] > run_vandijk(problem=problem, wait_rule="exact", tau=tau,
                                                 **options).delays["max_delay"]
    d0 = run_vandijk(problem=problem, wait_rule="d_round", d=0, **options)
    assert d0.delays["max_delay"] < free.delays["max_delay"]


def test_a_too_small_tau_stalls_with_a_clear_error(problem):
    with pytest.raises(ValueError, match="stalled at round 0: with wait_rule='exact'"):
        run_vandijk(problem=problem, sizes=[10] * 3, step_sizes=0.1, wait_rule="exact", tau=lambda t: 0 * t + 5)
    with pytest.raises(ValueError, match=r"d must be an integer in \[1, inf\); got 0"):
        run_vandijk(problem=problem, sizes=[10] * 3, step_sizes=0.1, wait_rule="d_round_literal", d=0)


def test_ledger_is_the_accountant_on_the_planned_rates(problem):
    """A Poisson run is accounted as Poisson (unchanged); a with-replacement run (the default, Alg. 1) as
    with_replacement with each client's N_c, by PLD (with_replacement has no RDP bound), and never below Poisson."""
    sizes = [5, 8, 11]
    options = {"problem": problem, "sizes": sizes, "step_sizes": 0.2, "noise_multiplier": 2.0, "clipping_norm": 0.5,
               "delta": 1e-6}
    n_c = min(problem.client_sizes)
    assert set(problem.client_sizes) == {n_c}
    segments = [(s / n_c, 2.0, 1) for s in sizes]
    poisson = run_vandijk(**options, sampling="poisson")
    expected = accounting.get_epsilon(segments=segments, delta=1e-6, accountant="rdp")
    assert poisson.epsilon == pytest.approx(expected.epsilon, rel=1e-12)
    assert poisson.privacy["sampling"] == "poisson" and poisson.privacy["accountant"] == "rdp"
    replaced = run_vandijk(**options)
    assert replaced.privacy["sampling"] == "with_replacement" and replaced.config["sampling"] == "with_replacement"
    assert replaced.privacy["accountant"] == "pld" and replaced.privacy["requested_accountant"] == "rdp"
    assert replaced.privacy["dataset_size"] == n_c and replaced.privacy["bound"] == "upper bound"
    assert replaced.privacy["releases_per_client"] == [3, 3, 3, 3]
    assert [row["sample_size"] for row in replaced.executed.rows()] == sizes
    assert "with_replacement" in replaced.executed.metadata["sampling"]


def test_with_replacement_epsilon_is_the_with_replacement_accountant_and_above_poisson(problem):
    """The ledger's ε is bounds.accounting's with_replacement ε for the same (q = s/N_c, σ, T, N = N_c), computed
    here independently, for both accountants; it is at least the Poisson ε of the same parameters."""
    sizes, sigma, delta = [6, 6, 9, 9], 3.0, 1e-5
    n_c = min(problem.client_sizes)
    segments = [(6 / n_c, sigma, 2), (9 / n_c, sigma, 2)]
    independent = accounting.get_epsilon(segments=segments, delta=delta, accountant="pld",
                                         sampling="with_replacement", dataset_size=n_c)
    poisson = accounting.get_epsilon(segments=segments, delta=delta, accountant="pld")
    for accountant in ("pld", "rdp"):
        result = run_vandijk(problem=problem, sizes=sizes, step_sizes=0.1, noise_multiplier=sigma, clipping_norm=1.0,
                             delta=delta, accountant=accountant, seed=2)
        assert result.epsilon == pytest.approx(independent.epsilon, rel=1e-12)
        assert result.privacy["segments"] == [list(segment) for segment in segments]
        assert "under with-replacement sampling" in result.privacy["statement"]
        assert "Poisson" not in result.privacy["statement"]
    assert independent.epsilon >= poisson.epsilon
    assert result.epsilon >= run_vandijk(problem=problem, sizes=sizes, step_sizes=0.1, noise_multiplier=sigma,
                                         clipping_norm=1.0, delta=delta, accountant="pld", sampling="poisson",
                                         seed=2).epsilon


def test_the_engine_draws_what_the_ledger_accounts(problem, monkeypatch):
    """with_replacement: every round of a client is s_i uniform draws from its N_c examples, duplicates included;
    poisson: distinct examples, a count that varies around s_i."""
    from fedplan.planner.simulate import vandijk as engine

    original = engine._Run.start_round
    draws: dict[str, list] = {"with_replacement": [], "poisson": []}

    def recording(self, c, now):
        original(self, c, now)
        draws[self.sampling].append((c, self.i[c], list(self.batch[c])))

    monkeypatch.setattr(engine._Run, "start_round", recording)
    sizes = [40] * 6
    for sampling in draws:
        run_vandijk(problem=problem, sizes=sizes, step_sizes=0.05, sampling=sampling, seed=5)
    replaced, poisson = draws["with_replacement"], draws["poisson"]
    assert len(replaced) == len(poisson) == 6 * problem.n_clients
    for c, i, batch in replaced:
        assert len(batch) == sizes[i] and all(0 <= j < problem.client_sizes[c] for j in batch)
    duplicated = [len(set(batch)) < len(batch) for _, _, batch in replaced]
    assert sum(duplicated) >= len(replaced) // 2  # P(no repeat among 40 of 240) ≈ 0.03
    assert all(len(set(batch)) == len(batch) for _, _, batch in poisson)
    assert len({len(batch) for _, _, batch in poisson}) > 1


def test_a_configuration_the_accountant_refuses_is_reported_not_accounted(problem, monkeypatch):
    from fedplan.planner.simulate import records
    from fedplan.planner.simulate.records import gaussian_ledger

    replace = gaussian_ledger([[(0.1, 2.0, 5)]], delta=1e-5, sampling="with_replacement", dataset_sizes=100,
                              neighboring_relation="replace_one")
    add_remove = gaussian_ledger([[(0.1, 2.0, 5)]], delta=1e-5, sampling="with_replacement", dataset_sizes=100)
    assert replace["neighboring_relation"] == "replace_one" and replace["accountant"] == "pld"
    assert replace["epsilon"] >= add_remove["epsilon"] and "replace-one" in replace["statement"]

    def refuse(**options):
        raise ValueError("PLD would need about 9e+06 grid points (limit 5e+06)")

    monkeypatch.setattr(records.accounting, "get_epsilon", refuse)
    result = run_vandijk(problem=problem, sizes=[4, 4], step_sizes=0.1, noise_multiplier=1.0, clipping_norm=1.0)
    assert result.epsilon is None and result.privacy["sampling"] == "with_replacement"
    assert result.privacy["statement"].startswith("not accounted: PLD would need about 9e+06 grid points")
    json.dumps(result.to_dict(), allow_nan=False)


def test_poisson_sampling_draws_the_planned_sizes_on_average(problem):
    result = run_vandijk(problem=problem, sizes=[40] * 20, step_sizes=0.1, sampling="poisson", seed=1)
    assert result.delays["computations"] == pytest.approx(4 * 20 * 40, rel=0.05)


def test_divergence_is_reported_not_printed(problem):
    data = load_dataset("synthetic-linear", n_samples=400, n_features=5, seed=0)
    ridge = make_problem(dataset=data, clients=2, seed=0, with_optimum=False)
    result = run_vandijk(problem=ridge, sizes=[20] * 30, step_sizes=50.0)
    assert result.diverged and "stopped being finite" in result.divergence
    assert result.final == {"loss": None, "accuracy": None, "dist_sq": None}
    json.dumps(result.to_dict(), allow_nan=False)


@pytest.mark.parametrize(("options", "message"), [
    ({"sizes": [1, 2], "step_sizes": 0.0}, r"step_sizes\[0\] must be a real number in \(0, inf\)"),
    ({"sizes": [1, 2], "step_sizes": 0.1, "noise_multiplier": 1.0}, "noise_multiplier > 0 needs a clipping_norm"),
    ({"sizes": [1, 10**6], "step_sizes": 0.1}, "sizes must be <= the client's number of examples"),
    ({"sizes": [1, 2], "step_sizes": 0.1, "wait_rule": "sometimes"}, "wait_rule must be one of"),
    ({"sizes": [1, 2], "step_sizes": 0.1, "wait_rule": "exact"}, "needs a delay function tau"),
])
def test_bad_options_name_the_parameter(problem, options, message):
    with pytest.raises(ValueError, match=message):
        run_vandijk(problem=problem, **options)


def test_records_are_json_ready_with_every_field(problem):
    result = run_vandijk(problem=problem, sizes=[3] * 6, step_sizes=0.1, eval_every=4)
    row = result.rows[0]
    assert list(row) == ["round", "time", "loss", "accuracy", "dist_sq", "staleness", "noise"]
    assert row["loss"] is None and result.rows[3]["loss"] is not None and result.rows[-1]["loss"] is not None
    assert math.isfinite(result.rows[-1]["dist_sq"])
    json.dumps(result.to_dict(), allow_nan=False)


def _bare_run(problem, sizes, sigma=0.0, clip=None):
    from fedplan.planner.simulate import vandijk as engine
    from fedplan.planner.simulate.records import RoundRecorder

    counts = np.array(sizes)[:, None].repeat(problem.n_clients, axis=1)
    rounds = len(sizes)
    return engine._Run(problem, counts, counts, np.full(rounds, 0.2), np.full(rounds, sigma), clip,
                       "with_replacement", "none", None, 1, Durations("constant", 1.0), ZERO, ZERO,
                       spawn_generators(0, 3 * problem.n_clients + 3), RoundRecorder(problem.evaluator()))


def test_server_advances_over_every_complete_round_at_once(problem):
    """Alg. 3 checks 'H holds round k from all clients' once per message (L346); with reordered messages a later
    round can be complete first, so the server loops (erratum row I-47 of this simulator)."""
    run = _bare_run(problem, [2, 2, 2])
    update = np.zeros(problem.model.dim)
    for client in range(4):
        run.on_receive(0.0, (1, client, update))
    for client in range(3):
        run.on_receive(0.0, (0, client, update))
    assert run.server_k == 0
    run.on_receive(1.0, (0, 3, update))
    assert run.server_k == 2 and len(run.recorder.rows) == 2


def test_noise_enters_client_and_server_with_the_same_sign(single):
    """I-4: the client applies ŵ ← ŵ − η̄n (L117 prints +), so that ŵ = v̂ − η̄U holds: with one client and no
    latency the server model equals the client's after every round, noise included."""
    run = _bare_run(single, [3, 4, 5], sigma=2.0, clip=0.5)
    run.run()
    assert run.round_noise_sq.min() > 0
    np.testing.assert_allclose(run.server_w, run.w[0], rtol=1e-12, atol=1e-12)


def test_the_ledger_says_which_sampling_was_executed():
    from fedplan.bounds.sampling import SAMPLING_HELP
    from fedplan.planner.simulate.data import load_dataset
    from fedplan.planner.simulate.problem import make_problem
    from fedplan.planner.simulate.vandijk import run_vandijk

    problem = make_problem(dataset=load_dataset("synthetic", n_samples=600, n_features=4), clients=2,
                           with_optimum=False)
    common = dict(problem=problem, sizes=[4] * 5, step_sizes=[0.1] * 5, noise_multiplier=2.0, clipping_norm=1.0,
                  delta=1e-5, seed=0)
    replaced = run_vandijk(**common, sampling="with_replacement").privacy
    poisson = run_vandijk(**common, sampling="poisson").privacy
    assert replaced["sampling"] == "with_replacement"
    assert replaced["sampling_description"] == f"with_replacement ({SAMPLING_HELP['with_replacement']})"
    assert "Poisson" not in replaced["statement"] and "with-replacement sampling" in replaced["statement"]
    assert poisson["sampling"] == "poisson" and "under Poisson sampling" in poisson["statement"]
    assert poisson["sampling_description"] == f"poisson ({SAMPLING_HELP['poisson']})"
