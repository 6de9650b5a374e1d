"""Kardam and synchronous GAR runs: filters' rates, attacks, tolerance errors, determinism."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from fedplan.bounds import kardam
from fedplan.planner.simulate.byzantine import little_is_enough_z, run_byzantine_sync, run_kardam
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.problem import make_problem


@pytest.fixture(scope="module")
def ten():
    return make_problem(dataset=load_dataset("synthetic", n_samples=2000, n_features=8), clients=10)


def test_little_is_enough_z():
    assert little_is_enough_z(workers=10, faults=3) == pytest.approx(norm.ppf(0.7), rel=1e-12)  # s = 6 - 3
    assert little_is_enough_z(workers=19, faults=4) == pytest.approx(norm.ppf(13 / 19), rel=1e-12)  # s = 10 - 4
    assert little_is_enough_z(workers=4, faults=3) == 0.0


def test_without_filters_every_push_is_accepted_and_one_per_update(ten):
    run = run_kardam(problem=ten, rounds=50, learning_rate=0.5, filters=False, dampening="constant", arrivals="iid")
    assert run.config["pushes"] == run.config["updates"] == 50 and run.config["filters"] is None


def test_frequency_filter_rejects_two_f_over_n_under_iid_arrivals(ten):
    run = run_kardam(problem=ten, rounds=400, learning_rate=0.5, faults=3, arrivals="iid", seed=1)
    rates = run.config["filters"]
    pushes = run.config["pushes"]
    predicted = kardam.frequency_reject_probability(workers=10, byzantine=3)
    assert abs(rates["frequency_reject_rate"] - predicted) <= 3 * math.sqrt(predicted * (1 - predicted) / pushes)
    band = kardam.accept_ratio_bounds(workers=10, byzantine=3)
    assert rates["theorem1_band"] == [band.lower, band.upper] == [4 / 7, 0.7]


def test_round_robin_arrivals_count_every_push_and_make_the_updates(ten):
    run = run_kardam(problem=ten, rounds=30, learning_rate=0.5, faults=3, arrivals="round_robin")
    counts = run.config["filters"]["counts"]["honest"]
    assert counts["delivered"] == run.config["pushes"] and counts["accepted"] == 30


@pytest.mark.parametrize("attack", ["sign_flip", "noise", "stale_replay", "little"])
def test_attacks_run_deterministically_and_count_byzantine_pushes(ten, attack):
    options = {"problem": ten, "rounds": 60, "learning_rate": 0.5, "faults": 3, "byzantine": 3, "attack": attack}
    a, b = run_kardam(**options, seed=2), run_kardam(**options, seed=2)
    assert a.rows == b.rows
    counts = a.config["filters"]["counts"]
    assert counts["byzantine"]["delivered"] > 0
    assert counts["byzantine"]["delivered"] + counts["honest"]["delivered"] == a.config["pushes"]


def test_adasgd_dampening_with_estimated_threshold_and_adaptive_rate(ten):
    run = run_kardam(problem=ten, rounds=80, learning_rate=0.2, dampening="adasgd", adaptive_rate=True,
                     filters=False, arrivals="event")
    assert not run.diverged and run.final["accuracy"] > 0.6
    assert all(row["staleness"] >= 0 for row in run.rows)


def test_too_many_faults_for_kardam_and_a_stalled_run_are_reported(ten):
    with pytest.raises(ValueError, match="3f \\+ 1"):
        run_kardam(problem=ten, rounds=5, learning_rate=0.1, faults=4)
    run = run_kardam(problem=ten, rounds=100, learning_rate=0.1, faults=3, max_pushes=20)
    assert run.config["stalled"] and run.config["pushes"] == 20


def test_robust_rules_survive_sign_flips_that_break_averaging():
    problem = make_problem(dataset=load_dataset("synthetic", n_samples=2000, n_features=8), clients=11)
    options = {"problem": problem, "rounds": 60, "learning_rate": 0.5, "byzantine": 2, "attack": "sign_flip"}
    averaged = run_byzantine_sync(rule="average", faults=0, **options)
    for rule in ("krum", "multi-krum", "bulyan"):
        robust = run_byzantine_sync(rule=rule, faults=2, **options)
        assert robust.final["accuracy"] > averaged.final["accuracy"] + 0.2
    honest = run_byzantine_sync(rule="average", faults=0, problem=problem, rounds=60, learning_rate=0.5, byzantine=0)
    assert honest.final["accuracy"] == pytest.approx(run_byzantine_sync(rule="multi-krum", faults=2, **options)
                                                     .final["accuracy"], abs=0.05)


def test_sync_rule_tolerance_is_checked_before_running():
    problem = make_problem(dataset=load_dataset("synthetic", n_samples=500, n_features=4), clients=10,
                           with_optimum=False)
    with pytest.raises(ValueError, match="bulyan"):
        run_byzantine_sync(problem=problem, rule="bulyan", rounds=3, learning_rate=0.1, faults=2)
    assert np.isfinite(run_byzantine_sync(problem=problem, rule="bulyan", rounds=3, learning_rate=0.1,
                                          faults=1).final["loss"])
