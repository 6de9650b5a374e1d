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
    expected = accounting.get_epsilon(segments=[(s / min(client_sizes), 8.0, 1) for s in sizes],
                                      delta=increasing.config["plan_delta"], accountant="rdp")
    assert increasing.epsilon == pytest.approx(expected.epsilon, rel=1e-12)
    assert increasing.epsilon > increasing.config["planned_epsilon_rdp"]  # N_c < 10 000 raises every q_i
    assert 0.5 < increasing.final["accuracy"] <= 1.0

    constant = run_preset("vandijk-dp-constant")
    assert constant.rounds == 1563 and not constant.diverged
    assert {row["sample_size"] for row in constant.executed.rows()} == {16}
    (noise,) = {row["noise_multiplier"] for row in constant.executed.rows()}
    budget = privacy_budget(epsilon=1.0, delta=increasing.config["plan_delta"])  # sigma = B, vandijk L221
    assert noise == pytest.approx(budget, rel=1e-12) and noise == pytest.approx(5.78, abs=0.005)
    assert 0.5 < constant.final["accuracy"] <= 1.0 and constant.epsilon < increasing.epsilon
    assert np.isclose(sum(sizes), 25_000, rtol=0.01) and 16 * 1563 >= 25_000
