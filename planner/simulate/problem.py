"""A learning problem for the engines: data split over clients, a model and (optionally) its optimum w*."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fedplan.bounds.validation import check_int, check_real
from fedplan.planner.simulate.data import Dataset, partition
from fedplan.planner.simulate.models import Model
from fedplan.planner.simulate.records import Evaluator

__all__ = ["ClientArrays", "ClientSplit", "Problem", "client_split", "make_problem"]

#: Evaluation (a full pass over the data every few rounds) uses sparse products below this density.
SPARSE_DENSITY = 0.2


@dataclass(frozen=True, eq=False)
class ClientArrays:
    """One client's samples as contiguous arrays, with the squared row norms clipping needs."""

    X: np.ndarray
    y: np.ndarray
    row_sq_norms: np.ndarray

    @property
    def size(self) -> int:
        return int(self.X.shape[0])


@dataclass(frozen=True, eq=False)
class ClientSplit:
    """Training samples over clients: the index blocks and what engines derive from them, each built once.

    ``X`` and ``y`` are the data set's training arrays (referenced, never modified); ``indices[c]`` are
    client c's rows. :func:`make_problem` keeps the split of each (data set, partition, seed) in a cache,
    so every run on the same split shares these arrays. Derived arrays are built on first use: ``order``
    (the blocks concatenated: stacked position → training row) with ``sizes`` and ``offsets`` (client c
    holds stacked positions ``offsets[c]:offsets[c] + sizes[c]``), ``row_sq_norms`` (‖x‖² of every training
    row, in training order), ``stacked`` (one gather of the samples in client order) and ``clients``
    (views into ``stacked``, one per client).
    """

    X: np.ndarray
    y: np.ndarray
    indices: tuple[np.ndarray, ...]

    @cached_property
    def order(self) -> np.ndarray:
        return np.concatenate(self.indices)

    @cached_property
    def sizes(self) -> np.ndarray:
        return np.fromiter((block.size for block in self.indices), dtype=np.int64, count=len(self.indices))

    @cached_property
    def offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.sizes)[:-1]))

    @cached_property
    def row_sq_norms(self) -> np.ndarray:
        return np.einsum("ij,ij->i", self.X, self.X)

    @cached_property
    def stacked(self) -> ClientArrays:
        order = self.order
        return ClientArrays(X=self.X[order], y=self.y[order], row_sq_norms=self.row_sq_norms[order])

    @cached_property
    def clients(self) -> tuple[ClientArrays, ...]:
        stacked = self.stacked
        return tuple(ClientArrays(X=stacked.X[lo:hi], y=stacked.y[lo:hi], row_sq_norms=stacked.row_sq_norms[lo:hi])
                     for lo, hi in zip(self.offsets.tolist(), (self.offsets + self.sizes).tolist(), strict=True))


#: Splits cached per data set; beyond this many, the least recently used one is dropped.
SPLITS_PER_DATASET = 4
_SPLITS: weakref.WeakKeyDictionary[Dataset, OrderedDict] = weakref.WeakKeyDictionary()


def client_split(dataset: Dataset, **options) -> ClientSplit:
    """The :class:`ClientSplit` of ``dataset`` under :func:`~planner.simulate.data.partition` ``options``.

    Cached per data set (weakly: the entry goes with the data set) and per ``options`` (which include the
    seed), at most :data:`SPLITS_PER_DATASET` per data set, least recently used dropped first. A data set's
    arrays are treated as immutable.
    """
    key = tuple(sorted((name, tuple(value) if isinstance(value, list | tuple | np.ndarray) else value)
                       for name, value in options.items()))
    splits = _SPLITS.setdefault(dataset, OrderedDict())
    if key in splits:
        splits.move_to_end(key)
        return splits[key]
    blocks = partition(n_samples=dataset.X_train.shape[0], labels=dataset.y_train, **options)
    split = splits[key] = ClientSplit(X=dataset.X_train, y=dataset.y_train, indices=tuple(blocks))
    while len(splits) > SPLITS_PER_DATASET:
        splits.popitem(last=False)
    return split


@dataclass(frozen=True, eq=False)
class Problem:
    """Model, data set, its split over clients and the optimum; ``clients[c]`` holds client c's arrays."""

    model: Model
    dataset: Dataset
    split: ClientSplit
    w_star: np.ndarray | None

    @property
    def indices(self) -> tuple[np.ndarray, ...]:
        return self.split.indices

    @property
    def clients(self) -> tuple[ClientArrays, ...]:
        return self.split.clients

    @property
    def stacked(self) -> ClientArrays:
        """Every client's samples concatenated in client order (built once per split, shared by runs and seeds)."""
        return self.split.stacked

    @property
    def n_clients(self) -> int:
        return len(self.split.indices)

    @property
    def client_sizes(self) -> tuple[int, ...]:
        return tuple(self.split.sizes.tolist())

    @cached_property
    def _evaluation_features(self) -> tuple:
        """Training and test features for evaluation: CSR when at most :data:`SPARSE_DENSITY` are non-zero."""
        data = self.dataset
        density = np.count_nonzero(data.X_train) / max(data.X_train.size, 1)
        if density > SPARSE_DENSITY:
            return data.X_train, data.X_test
        return sp.csr_matrix(data.X_train), sp.csr_matrix(data.X_test)

    def evaluator(self) -> Evaluator:
        data = self.dataset
        X_train, X_test = self._evaluation_features
        return Evaluator(model=self.model, X_train=X_train, y_train=data.y_train, X_test=X_test,
                         y_test=data.y_test, w_star=self.w_star)

    def describe(self) -> dict:
        return {"dataset": self.dataset.name, "model": self.model.kind, "regularization": self.model.rho,
                "n_train": int(self.dataset.X_train.shape[0]), "n_test": int(self.dataset.X_test.shape[0]),
                "n_features": self.dataset.n_features, "clients": self.n_clients,
                "client_sizes": list(self.client_sizes)}


def make_problem(*, dataset: Dataset, clients: int, seed: int = 0, scheme: str = "iid", model: str | None = None,
                 regularization: float | None = None, with_optimum: bool = True, alpha: float | None = None,
                 classes_per_client: int = 2, sizes=None) -> Problem:
    """Split ``dataset`` over ``clients`` (:func:`planner.simulate.data.partition`) and set up the model.

    ``model`` defaults to the data set's task (logistic, softmax or ridge); ``regularization`` to
    ρ = 1/n_train (van Dijk's λ = 1/N, L1839). ``with_optimum`` computes w* (L-BFGS) for ‖w − w*‖².
    """
    clients = check_int("clients", clients, low=1)
    kind = model or dataset.default_model
    n_train = dataset.X_train.shape[0]
    rho = 1.0 / n_train if regularization is None else check_real("regularization", regularization, low=0.0)
    learner = Model(kind=kind, n_features=dataset.n_features, regularization=rho,
                    n_classes=dataset.n_classes if kind == "softmax" else None)
    split = client_split(dataset, clients=clients, scheme=scheme, seed=seed, alpha=alpha,
                         classes_per_client=classes_per_client, sizes=sizes)
    w_star = learner.optimum(dataset.X_train, dataset.y_train) if with_optimum else None
    return Problem(model=learner, dataset=dataset, split=split, w_star=w_star)
