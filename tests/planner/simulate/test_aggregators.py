"""GARs: distances and scores vs brute force, Bulyan vs a loop transcription of spec §2.7, tolerance errors."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedplan.planner.simulate import aggregators as gar


def brute_scores(G, f):
    n = len(G)
    D = [[float(np.sum((G[i] - G[j]) ** 2)) for j in range(n)] for i in range(n)]
    return [sum(sorted(D[i][j] for j in range(n) if j != i)[: n - f - 2]) for i in range(n)], D


def brute_bulyan(G, f):
    """Spec §2.7 pseudocode, line by line with Python loops."""
    n, d = G.shape
    scores, D = brute_scores(G, f)
    theta, beta, m0 = n - 2 * f - 2, n - 4 * f - 2, n - f - 2
    remaining = list(range(n))
    selections = []
    for k in range(theta):
        ranked = sorted(remaining, key=lambda i: (scores[i], i))
        selections.append(np.mean([G[i] for i in ranked[: m0 - k]], axis=0))
        best = ranked[0]
        remaining.remove(best)
        scores = [scores[i] - D[i][best] for i in range(n)]
    out = np.zeros(d)
    for c in range(d):
        values = [s[c] for s in selections]
        median = float(np.median(values))
        out[c] = np.mean(sorted(values, key=lambda x: abs(x - median))[:beta])
    return out


def test_pairwise_distances_and_scores_match_brute_force():
    G = np.random.default_rng(0).normal(size=(9, 4))
    scores, D = brute_scores(G, 2)
    assert np.allclose(gar.pairwise_sq_distances(G), D, atol=1e-12)
    assert np.allclose(gar.krum_scores(gar.pairwise_sq_distances(G), 2), scores, atol=1e-12)


def test_non_finite_rows_are_infinitely_far_and_never_chosen():
    G = np.random.default_rng(1).normal(size=(7, 3))
    G[2, 1] = np.nan
    D = gar.pairwise_sq_distances(G)
    assert np.all(np.isinf(np.delete(D[2], 2))) and D[2, 2] == 0
    assert np.all(np.isfinite(gar.multi_krum(G, faults=2)))


def test_krum_and_multi_krum_discard_far_outliers():
    rng = np.random.default_rng(2)
    G = rng.normal(size=(11, 5))
    G[:4] += 1e3
    chosen = gar.krum(G, faults=4)
    assert any(np.array_equal(chosen, row) for row in G[4:])
    m = 11 - 4 - 2
    order = np.argsort(brute_scores(G, 4)[0], kind="stable")[:m]
    assert set(order.tolist()) <= set(range(4, 11))
    assert np.allclose(gar.multi_krum(G, faults=4), G[order].mean(axis=0))


@pytest.mark.parametrize("n, f", [(7, 1), (11, 2), (19, 4)])
def test_bulyan_matches_the_spec_pseudocode(n, f):
    G = np.random.default_rng(n).normal(size=(n, 6))
    G[:f] = 50.0
    assert np.allclose(gar.bulyan(G, faults=f), brute_bulyan(G, f), atol=1e-12)


def test_identical_gradients_are_returned_by_every_rule():
    G = np.tile(np.array([1.0, -2.0, 3.0]), (11, 1))
    for rule in gar.RULES:
        assert np.allclose(gar.aggregate(rule, G, faults=0 if rule == "averaging" else 2), G[0])


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_rules_do_not_depend_on_the_order_of_the_workers(seed):
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(11, 3))
    perm = rng.permutation(11)
    for rule in ("multi-krum", "bulyan"):
        assert np.allclose(gar.aggregate(rule, G, faults=2), gar.aggregate(rule, G[perm], faults=2), atol=1e-9)


@pytest.mark.parametrize("rule, n, f, text", [("bulyan", 10, 2, "n >= 4f + 3: at most f = 1"),
                                             ("multi-krum", 10, 4, "n >= 2f + 3: at most f = 3"),
                                             ("averaging", 5, 1, "at most f = 0"),
                                             ("average", 5, 1, "at most f = 0")])  # its old name
def test_faults_beyond_the_tolerance_are_rejected(rule, n, f, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        gar.aggregate(rule, np.zeros((n, 2)), faults=f)


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="m"):
        gar.multi_krum(np.zeros((9, 2)), faults=2, m=6)
    with pytest.raises(ValueError, match="gradients"):
        gar.krum(np.zeros(5), faults=1)
    with pytest.raises(ValueError, match="rule"):
        gar.aggregate("median", np.zeros((5, 2)), faults=0)
