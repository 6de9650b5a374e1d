"""bounds.byzantine: tolerance n vs f for each rule against brute-force search over f, and the inverse."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.bounds import byzantine

RESILIENT = ("krum", "multi-krum", "bulyan", "kardam", "kardam-strict")


def satisfies(rule: str, n: int, f: int) -> bool:
    """The requirement as stated in the thesis, written out per rule."""
    return {"krum": n >= 2 * f + 3, "multi-krum": n >= 2 * f + 3, "bulyan": n >= 4 * f + 3,
            "kardam": n >= 3 * f + 1, "kardam-strict": n > 3 * f + 1, "averaging": f == 0}[rule]


@pytest.mark.parametrize("workers, expected", [
    (19, {"multi-krum": 8, "krum": 8, "bulyan": 4, "kardam": 6, "averaging": 0}),   # spec §4.1
    (10, {"multi-krum": 3, "krum": 3, "bulyan": 1, "kardam": 3, "kardam-strict": 2, "averaging": 0}),
])
def test_spec_vectors(workers, expected):
    for rule, faults in expected.items():
        assert byzantine.max_byzantine(workers=workers, rule=rule).max_faults == faults


def test_min_workers_spec_vectors():
    assert byzantine.min_workers(faults=4, rule="bulyan") == 19
    assert byzantine.min_workers(faults=3, rule="kardam") == 10
    assert byzantine.min_workers(faults=8, rule="multi-krum") == 19
    assert byzantine.min_workers(faults=0, rule="averaging") == 1
    with pytest.raises(ValueError, match="averaging tolerates no Byzantine worker"):
        byzantine.min_workers(faults=1, rule="averaging")


def test_rules_that_cannot_run():
    with pytest.raises(ValueError, match="workers must be >= 3 for bulyan"):
        byzantine.max_byzantine(workers=2, rule="bulyan")
    with pytest.raises(ValueError, match="rule must be one of"):
        byzantine.max_byzantine(workers=10, rule="median")


def test_bulyan_parameters():
    assert byzantine.bulyan_parameters(workers=19, faults=4) == {"selection_size": 9, "averaged_per_coordinate": 1,
                                                                 "multikrum_m0": 13}
    with pytest.raises(ValueError, match="workers must be an integer in \\[19, inf\\)"):
        byzantine.bulyan_parameters(workers=18, faults=4)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(3, 500), rule=st.sampled_from(byzantine.RULES))
def test_max_is_the_brute_force_largest_f(n, rule):
    result = byzantine.max_byzantine(workers=n, rule=rule)
    feasible = [f for f in range(n + 1) if satisfies(rule, n, f)]
    assert result.max_faults == max(feasible)


@settings(max_examples=50, deadline=None)
@given(f=st.integers(0, 300), rule=st.sampled_from(RESILIENT))
def test_min_workers_is_the_inverse(f, rule):
    n = byzantine.min_workers(faults=f, rule=rule)
    assert satisfies(rule, n, f) and not satisfies(rule, n - 1, f)
    assert byzantine.max_byzantine(workers=n, rule=rule).max_faults == f


@settings(max_examples=50, deadline=None)
@given(n=st.integers(3, 500))
def test_tolerance_is_monotone_in_n_and_ordered_by_rule(n):
    for rule in byzantine.RULES:
        assert byzantine.max_byzantine(workers=n + 1, rule=rule).max_faults >= byzantine.max_byzantine(
            workers=n, rule=rule).max_faults
    values = {rule: byzantine.max_byzantine(workers=n, rule=rule).max_faults for rule in byzantine.RULES}
    assert values["averaging"] <= values["bulyan"] <= min(values["multi-krum"], values["kardam-strict"])
