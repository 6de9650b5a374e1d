"""Data for the backing simulations: sources, a train/test split and client partitions.

* :func:`load_dataset` resolves a source name to a :class:`Dataset`: ``"synthetic"`` (logistic, from
  :func:`planner.datasets.synthetic_logistic`), ``"synthetic-softmax"``, ``"synthetic-linear"`` (a linear
  model with Gaussian noise, whose ridge optimum is known in closed form), one of scikit-learn's bundled
  sets (:data:`SKLEARN_SETS`), or the path of any LIBSVM file (read by :func:`planner.datasets.load_libsvm`).
* :func:`train_test_indices` holds out a test part with a seeded permutation.
* :func:`partition` splits training samples over clients: ``"iid"``, ``"label"`` (each client holds few
  classes: label-sorted shards), ``"dirichlet"`` (class proportions per client drawn from Dir(α)) or
  ``"sizes"`` (explicit client sizes).

Every random choice goes through ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.datasets import load_libsvm, split_clients, synthetic_logistic
from fedplan.planner.extras import optional_import

__all__ = ["SCHEMES", "SKLEARN_SETS", "Dataset", "load_dataset", "partition", "synthetic_linear",
           "train_test_indices"]

#: scikit-learn's bundled data sets: loader name and task.
SKLEARN_SETS = {
    "breast_cancer": ("load_breast_cancer", "binary"),
    "iris": ("load_iris", "multiclass"),
    "wine": ("load_wine", "multiclass"),
    "digits": ("load_digits", "multiclass"),
    "diabetes": ("load_diabetes", "regression"),
}
SYNTHETIC_SETS = ("synthetic", "synthetic-softmax", "synthetic-linear")
SCHEMES = ("iid", "label", "dirichlet", "sizes")
#: Dirichlet partitions are redrawn until every client holds a sample, at most this many times.
DIRICHLET_ATTEMPTS = 100


@dataclass(frozen=True, eq=False)
class Dataset:
    """Training and test samples of one source, with its task (``binary``, ``multiclass``, ``regression``)."""

    name: str
    task: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def n_classes(self) -> int | None:
        """Number of classes (``None`` for regression)."""
        if self.task == "regression":
            return None
        return int(max(self.y_train.max(initial=0), self.y_test.max(initial=0))) + 1

    @property
    def default_model(self) -> str:
        return {"binary": "logistic", "multiclass": "softmax", "regression": "ridge"}[self.task]


def synthetic_linear(n_samples: int, n_features: int, *, seed: int, noise: float = 0.1) -> tuple[np.ndarray,
                                                                                                 np.ndarray]:
    """A linear-regression set: ``x ~ N(0, I/f)``, ``w ~ N(0, I)``, ``y = xᵀw + noise·N(0, 1)``.

    The ridge optimum of these samples is ``(XᵀX/n + ρI)⁻¹ Xᵀy/n`` (checked in the tests against the
    L-BFGS optimum of :mod:`planner.simulate.models`).
    """
    n_samples = check_int("n_samples", n_samples, low=1)
    n_features = check_int("n_features", n_features, low=1)
    seed = check_int("seed", seed, low=0)
    noise = check_real("noise", noise, low=0.0)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features)) / math.sqrt(n_features)
    w = rng.standard_normal(n_features)
    return X, X @ w + noise * rng.standard_normal(n_samples)


def train_test_indices(n_samples: int, *, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) index arrays; the test part has ``round(test_fraction · n)`` samples."""
    n_samples = check_int("n_samples", n_samples, low=2)
    test_fraction = check_real("test_fraction", test_fraction, low=0.0, high=1.0, high_open=True)
    seed = check_int("seed", seed, low=0)
    order = np.random.default_rng(seed).permutation(n_samples)
    test = int(round(test_fraction * n_samples))
    if test >= n_samples:
        raise ValueError(f"test_fraction must leave at least one of the {n_samples} examples for training, in "
                         f"[0, {(n_samples - 1) / n_samples:.6g}]; got {test_fraction!r}")
    return np.sort(order[test:]), np.sort(order[:test])


def _standardised(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Features scaled to zero mean and unit variance on the training part (constant columns left at 0)."""
    mean = X_train.mean(axis=0)
    scale = X_train.std(axis=0)
    scale[scale == 0] = 1.0
    return (X_train - mean) / scale, (X_test - mean) / scale


def _class_indices(y: np.ndarray) -> np.ndarray:
    """Labels 0..K-1 for a multiclass set whose labels are arbitrary numbers (kept in sorted order)."""
    return np.unique(y, return_inverse=True)[1].astype(np.float64)


def _task_of(y: np.ndarray) -> str:
    values = np.unique(y)
    if np.all(np.isin(values, (0.0, 1.0))):
        return "binary"
    if np.all(values == np.round(values)) and values.size <= 100:
        return "multiclass"
    return "regression"


def _raw(source: str, *, seed: int, n_samples: int, n_features: int, n_features_file: int | None):
    if source == "synthetic":
        return synthetic_logistic(n_samples, n_features, seed=seed) + ("binary",)
    if source == "synthetic-softmax":
        return synthetic_logistic(n_samples, n_features, seed=seed, n_classes=3) + ("multiclass",)
    if source == "synthetic-linear":
        return synthetic_linear(n_samples, n_features, seed=seed) + ("regression",)
    if source in SKLEARN_SETS:
        datasets = optional_import("sklearn.datasets", purpose=f"the data set {source!r}")
        loader, task = SKLEARN_SETS[source]
        bunch = getattr(datasets, loader)()
        X = np.asarray(bunch.data, dtype=np.float64)
        y = np.asarray(bunch.target, dtype=np.float64)
        return X, (_class_indices(y) if task == "multiclass" else y), task
    path = Path(source)
    if not path.is_file():
        names = ", ".join(SYNTHETIC_SETS + tuple(SKLEARN_SETS))
        raise ValueError(f"dataset must be one of {names} or the path of an existing LIBSVM file; got {source!r}")
    X, y = load_libsvm(path, n_features=n_features_file)
    task = _task_of(y)
    return X, (_class_indices(y) if task == "multiclass" else y), task


def load_dataset(source: str, *, seed: int = 0, test_fraction: float = 0.2, test_file: str | None = None,
                 n_samples: int = 10_000, n_features: int = 20, standardize: bool | None = None,
                 n_features_file: int | None = None) -> Dataset:
    """Resolve ``source`` to a :class:`Dataset` with a held-out test part.

    Parameters
    ----------
    source : str
        ``"synthetic"``, ``"synthetic-softmax"``, ``"synthetic-linear"``, a key of :data:`SKLEARN_SETS`, or
        the path of a LIBSVM file (binary labels mapped to {0, 1}; other integer labels to 0..K-1).
    seed : int
        Seeds the synthetic draw and the train/test permutation.
    test_fraction : float in [0, 1)
        Share of the samples held out, unless ``test_file`` names a separate LIBSVM test file.
    n_samples, n_features : int
        Size of a synthetic set (ignored otherwise).
    standardize : bool, optional
        Scale features to zero mean, unit variance (training statistics). Default: True for the
        scikit-learn sets (their features have very different scales), False otherwise.
    n_features_file : int, optional
        Columns of a LIBSVM file (so that a training and a test file agree).
    """
    if not isinstance(source, str) or not source:
        raise ValueError(f"dataset must be a non-empty string; got {source!r}")
    seed = check_int("seed", seed, low=0)
    X, y, task = _raw(source, seed=seed, n_samples=n_samples, n_features=n_features,
                      n_features_file=n_features_file)
    if test_file is not None:
        X_test, y_test = load_libsvm(test_file, n_features=X.shape[1])
        X_train, y_train = X, y
        if task == "multiclass":
            raise ValueError("test_file is supported for binary and regression LIBSVM files only")
    else:
        train, test = train_test_indices(X.shape[0], test_fraction=test_fraction, seed=seed)
        X_train, y_train, X_test, y_test = X[train], y[train], X[test], y[test]
    if standardize is None:
        standardize = source in SKLEARN_SETS
    if standardize:
        X_train, X_test = _standardised(X_train, X_test)
    name = Path(source).stem if source not in SYNTHETIC_SETS + tuple(SKLEARN_SETS) else source
    return Dataset(name=name, task=task, X_train=np.ascontiguousarray(X_train), y_train=y_train,
                   X_test=np.ascontiguousarray(X_test), y_test=y_test)


def _label_shards(labels: np.ndarray, clients: int, classes_per_client: int, rng) -> list[np.ndarray]:
    order = rng.permutation(labels.size)
    order = order[np.argsort(labels[order], kind="stable")]
    shards = np.array_split(order, clients * classes_per_client)
    chosen = rng.permutation(len(shards)).reshape(clients, classes_per_client)
    return [np.sort(np.concatenate([shards[s] for s in row])) for row in chosen]


def _dirichlet(labels: np.ndarray, clients: int, alpha: float, rng) -> list[np.ndarray]:
    classes = np.unique(labels)
    for _ in range(DIRICHLET_ATTEMPTS):
        blocks: list[list[np.ndarray]] = [[] for _ in range(clients)]
        for label in classes:
            members = rng.permutation(np.flatnonzero(labels == label))
            cuts = (np.cumsum(rng.dirichlet(np.full(clients, alpha)))[:-1] * members.size).astype(int)
            for client, part in enumerate(np.split(members, cuts)):
                blocks[client].append(part)
        result = [np.sort(np.concatenate(parts)) for parts in blocks]
        if min(block.size for block in result) > 0:
            return result
    raise ValueError(f"alpha = {alpha:g} leaves some of the {clients} clients without samples in "
                     f"{DIRICHLET_ATTEMPTS} draws; raise alpha or use fewer clients")


def partition(*, n_samples: int, clients: int, scheme: str = "iid", seed: int = 0, labels: np.ndarray | None = None,
              alpha: float | None = None, classes_per_client: int = 2, sizes=None) -> list[np.ndarray]:
    """Split ``range(n_samples)`` over clients (disjoint, sorted index arrays, every client non-empty).

    ``"iid"``: a random permutation cut into blocks whose sizes differ by at most one.
    ``"label"``: samples sorted by label, cut into ``clients·classes_per_client`` shards, each client
    gets ``classes_per_client`` random shards (so it holds few classes). ``"dirichlet"``: for every
    class, its samples are divided in proportions drawn from Dir(``alpha``·1) (small α: very skewed).
    ``"sizes"``: a random permutation cut into the given ``sizes`` (their sum may be below
    ``n_samples``; the rest is unused).
    """
    n_samples = check_int("n_samples", n_samples, low=1)
    scheme = check_choice("scheme", scheme, SCHEMES)
    seed = check_int("seed", seed, low=0)
    if scheme == "sizes":
        if sizes is None:
            raise ValueError("scheme='sizes' needs sizes, one positive integer per client")
        sizes = [check_int(f"sizes[{i}]", size, low=1) for i, size in enumerate(sizes)]
        if not sizes or sum(sizes) > n_samples:
            raise ValueError(f"sizes must be non-empty and sum to at most n_samples = {n_samples}; "
                             f"got sum {sum(sizes)}")
        order = np.random.default_rng(seed).permutation(n_samples)
        return [np.sort(block) for block in np.split(order[:sum(sizes)], np.cumsum(sizes)[:-1])]
    clients = check_int("clients", clients, low=1, high=n_samples)
    if scheme == "iid":
        return split_clients(n_samples, clients, seed=seed)
    if labels is None or np.shape(labels) != (n_samples,):
        raise ValueError(f"scheme={scheme!r} needs labels of shape ({n_samples},)")
    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    if scheme == "label":
        classes_per_client = check_int("classes_per_client", classes_per_client, low=1,
                                       high=max(1, n_samples // clients))
        return _label_shards(labels, clients, classes_per_client, rng)
    alpha = check_real("alpha", alpha if alpha is not None else float("nan"), low=0.0, low_open=True)
    return _dirichlet(labels, clients, alpha, rng)
