"""A learning problem for the engines: data split over clients, a model and (optionally) its optimum w*."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from fedplan.bounds.validation import check_int, check_real
from fedplan.planner.simulate.data import Dataset, partition
from fedplan.planner.simulate.models import Model
from fedplan.planner.simulate.records import Evaluator

__all__ = ["ClientArrays", "Problem", "make_problem"]

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
class Problem:
    """Model, data set, client partition and optimum; ``clients[c]`` holds client c's arrays."""

    model: Model
    dataset: Dataset
    indices: tuple[np.ndarray, ...]
    clients: tuple[ClientArrays, ...]
    w_star: np.ndarray | None

    @cached_property
    def stacked(self) -> ClientArrays:
        """Every client's samples concatenated in client order (built once, shared by runs and seeds)."""
        return ClientArrays(X=np.concatenate([client.X for client in self.clients]),
                            y=np.concatenate([client.y for client in self.clients]),
                            row_sq_norms=np.concatenate([client.row_sq_norms for client in self.clients]))

    @property
    def n_clients(self) -> int:
        return len(self.clients)

    @property
    def client_sizes(self) -> tuple[int, ...]:
        return tuple(client.size for client in self.clients)

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
    blocks = partition(n_samples=n_train, clients=clients, scheme=scheme, seed=seed, labels=dataset.y_train,
                       alpha=alpha, classes_per_client=classes_per_client, sizes=sizes)
    arrays = []
    for block in blocks:
        X = np.ascontiguousarray(dataset.X_train[block])
        arrays.append(ClientArrays(X=X, y=dataset.y_train[block], row_sq_norms=np.einsum("ij,ij->i", X, X)))
    w_star = learner.optimum(dataset.X_train, dataset.y_train) if with_optimum else None
    return Problem(model=learner, dataset=dataset, indices=tuple(blocks), clients=tuple(arrays), w_star=w_star)
