"""planner.simulate.engine: event queue, duration models, delay log."""

import numpy as np
import pytest

from fedplan.planner.simulate.engine import DelayLog, Durations, EventQueue, UnitStream, spawn_generators


def test_event_queue_orders_by_time_then_insertion_and_moves_the_clock():
    queue = EventQueue()
    queue.push(2.0, 0, "late")
    queue.push(1.0, 0, "first")
    queue.push(1.0, 1, "second")
    assert [queue.pop()[2] for _ in range(3)] == ["first", "second", "late"]
    assert queue.now == 2.0 and len(queue) == 0
    with pytest.raises(ValueError, match="cannot be scheduled in the past"):
        queue.push(1.5, 0)


@pytest.mark.parametrize("distribution", ["constant", "exponential", "lognormal"])
def test_unit_streams_have_mean_one_and_are_reproducible(distribution):
    draws = UnitStream(distribution, np.random.default_rng(0), shape=0.8).block(200_000)
    assert draws.mean() == pytest.approx(1.0, abs=0.01)
    first = UnitStream(distribution, spawn_generators(4, 1)[0])
    second = UnitStream(distribution, spawn_generators(4, 1)[0])
    assert [first.draw() for _ in range(5)] == [second.draw() for _ in range(5)]


def test_durations_per_client_means_and_validation():
    assert Durations("constant", (1.0, 2.0)).means(2) == [1.0, 2.0]
    assert Durations("exponential", 3.0).means(3) == [3.0, 3.0, 3.0]
    with pytest.raises(ValueError, match=r"mean must have one entry per client \(3\); got 2"):
        Durations("constant", (1.0, 2.0)).means(3)
    with pytest.raises(ValueError, match="distribution must be one of 'constant', 'exponential', 'lognormal'"):
        Durations("gamma", 1.0)
    with pytest.raises(ValueError, match=r"mean\[1\] must be a real number in \[0, inf\); got -1"):
        Durations("constant", (1.0, -1.0))


def test_delay_log_summary_and_quantiles():
    log = DelayLog()
    log.append(np.array([5, 6]), np.array([0, 3]), np.array([2.0, 2.0]))
    log.append(np.array([1, 2]), np.array([1, 1]), np.array([np.inf, np.inf]))
    summary = log.summary()
    assert summary == {"computations": 4, "max_delay": 3, "mean_delay": 1.25, "violations": 1}
    t, tau_hat, _ = log.arrays()
    assert t.tolist() == [1, 2, 5, 6] and tau_hat.tolist() == [1, 1, 0, 3]
    rows = log.quantiles(bins=2)
    assert [row["t"] for row in rows] == [2, 6] and rows[0]["tau"] is None and rows[1]["tau_hat_q100"] == 3.0
