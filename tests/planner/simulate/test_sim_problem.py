"""planner.simulate.problem: the client split is built once per (data set, partition, seed) and shared."""

import gc

import numpy as np

from fedplan.planner.simulate import problem as problems
from fedplan.planner.simulate.data import load_dataset, partition
from fedplan.planner.simulate.problem import make_problem


def _data(seed=0):
    return load_dataset("synthetic", n_samples=400, n_features=5, seed=seed, test_fraction=0.0)


def test_the_same_split_is_shared_and_its_arrays_are_built_once():
    data = _data()
    first = make_problem(dataset=data, clients=7, seed=3, with_optimum=False)
    again = make_problem(dataset=data, clients=7, seed=3, with_optimum=False, regularization=0.5)
    assert again.split is first.split and again.stacked is first.stacked and again.clients is first.clients
    expected = partition(n_samples=400, clients=7, seed=3)
    for block, client, want in zip(first.indices, first.clients, expected, strict=True):
        np.testing.assert_array_equal(block, want)
        np.testing.assert_array_equal(client.X, data.X_train[want])
        np.testing.assert_array_equal(client.row_sq_norms, np.einsum("ij,ij->i", client.X, client.X))
        assert np.shares_memory(client.X, first.stacked.X)  # views, not copies
    split = first.split
    np.testing.assert_array_equal(split.X[split.order[split.offsets[4]:split.offsets[4] + split.sizes[4]]],
                                  first.clients[4].X)


def test_the_cache_does_not_leak_across_seeds_partitions_or_data_sets():
    data, other = _data(), _data()
    base = make_problem(dataset=data, clients=7, seed=3, with_optimum=False)
    seeded = make_problem(dataset=data, clients=7, seed=4, with_optimum=False)
    assert seeded.split is not base.split
    assert not np.array_equal(seeded.split.order, base.split.order)
    np.testing.assert_array_equal(seeded.split.order, np.concatenate(partition(n_samples=400, clients=7, seed=4)))
    assert make_problem(dataset=data, clients=8, seed=3, with_optimum=False).split is not base.split
    assert make_problem(dataset=data, clients=7, seed=3, scheme="label", with_optimum=False).split is not base.split
    assert make_problem(dataset=other, clients=7, seed=3, with_optimum=False).split is not base.split


def test_the_cache_keeps_a_few_splits_per_data_set_and_goes_with_it():
    data = _data()
    splits = [make_problem(dataset=data, clients=5, seed=seed, with_optimum=False).split
              for seed in range(problems.SPLITS_PER_DATASET + 1)]
    assert make_problem(dataset=data, clients=5, seed=problems.SPLITS_PER_DATASET, with_optimum=False).split \
        is splits[-1]
    assert make_problem(dataset=data, clients=5, seed=0, with_optimum=False).split is not splits[0]  # dropped
    entries = len(problems._SPLITS)
    del data, splits
    gc.collect()
    assert len(problems._SPLITS) == entries - 1
