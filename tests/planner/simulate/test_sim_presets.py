"""The van Dijk DP experiment preset and its constant-sample-size baseline (w8a, 5 clients)."""

import math

import numpy as np
import pytest

from fedplan.bounds import accounting
from fedplan.bounds.vandijk import privacy_budget
from fedplan.planner.simulate.presets import data_file, run_preset

pytestmark = pytest.mark.skipif(not data_file("w8a.libsvm").is_file(), reason="w8a.libsvm not available")


def test_dp_experiment_and_its_constant_baseline():
    increasing = run_preset("vandijk-dp")
    sizes = [row["sample_size"] for row in increasing.executed.rows()]
    assert increasing.rounds == 183 and not increasing.diverged
    assert sizes[:5] == [16 + math.ceil(1.3216 * i) for i in range(5)] and sizes[-1] == 257
    client_sizes = increasing.config["client_sizes"]
    assert len(client_sizes) == 5 and min(client_sizes) >= 9_400  # 47 261 training rows of w8a over 5
    # The run draws with replacement (Alg. 1) and is accounted as such, per client (N = N_c), by PLD only.
    n_c, delta = min(client_sizes), increasing.config["plan_delta"]
    assert increasing.privacy["sampling"] == "with_replacement"
    poisson = accounting.get_epsilon(segments=[(s / n_c, 8.0, 1) for s in sizes], delta=delta, accountant="rdp")
    assert poisson.epsilon > increasing.config["planned_epsilon_rdp"]  # N_c < 10 000 raises every q_i
    if increasing.epsilon is None:
        # 183 distinct with-replacement steps exceed the PLD time budget (or grid) and there is no RDP bound: the
        # ledger says so and prints no (Poisson) number.
        assert increasing.privacy["statement"].startswith("not accounted: ")
        assert increasing.privacy["not_accounted"]
    else:
        expected = accounting.get_epsilon(segments=[(s / n_c, 8.0, 1) for s in sizes], delta=delta,
                                          accountant="pld", sampling="with_replacement", dataset_size=n_c)
        assert increasing.epsilon == pytest.approx(expected.epsilon, rel=1e-12)
        assert increasing.epsilon >= poisson.epsilon
    assert 0.5 < increasing.final["accuracy"] <= 1.0

    constant = run_preset("vandijk-dp-constant")
    assert constant.rounds == 1563 and not constant.diverged
    assert {row["sample_size"] for row in constant.executed.rows()} == {16}
    (noise,) = {row["noise_multiplier"] for row in constant.executed.rows()}
    budget = privacy_budget(epsilon=1.0, delta=increasing.config["plan_delta"])  # sigma = B, vandijk L221
    assert noise == pytest.approx(budget, rel=1e-12) and noise == pytest.approx(5.78, abs=0.005)
    assert 0.5 < constant.final["accuracy"] <= 1.0
    constant_n = constant.privacy["dataset_size"]
    assert constant_n == n_c and constant.privacy["sampling"] == "with_replacement"
    expected = accounting.get_epsilon(segments=[(16 / n_c, noise, 1563)], delta=delta, accountant="pld",
                                      sampling="with_replacement", dataset_size=n_c)
    assert constant.epsilon == pytest.approx(expected.epsilon, rel=1e-12)
    assert constant.epsilon >= accounting.get_epsilon(segments=[(16 / n_c, noise, 1563)], delta=delta,
                                                      accountant="pld").epsilon
    assert increasing.epsilon is None or constant.epsilon < increasing.epsilon
    assert np.isclose(sum(sizes), 25_000, rtol=0.01) and 16 * 1563 >= 25_000
