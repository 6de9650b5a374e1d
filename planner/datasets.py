"""Data for constant estimation and simulations: a LIBSVM reader, client splits and a synthetic set.

* :func:`load_libsvm` reads the LIBSVM/svmlight text format (the format of the data sets the papers use:
  phishing, w8a, a8a, a9a) into a dense array or a CSR matrix, with the usual binary-label mapping.
* :func:`split_clients` partitions sample indices over ``N`` clients, i.i.d. or non-i.i.d. (sorted by
  label, the "sort and shard" device of Zhou et al.'s MNIST experiment, zhou L435-437).
* :func:`synthetic_logistic` draws a logistic (or softmax) data set from a fixed seed; it is the data of the
  no-file path, since scikit-learn is not a dependency of fedplan.

Every random choice goes through ``numpy.random.default_rng(seed)``: the same seed gives the same data
and the same split on every platform numpy supports.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from fedplan.bounds.validation import check_int

__all__ = ["load_libsvm", "split_clients", "synthetic_logistic"]

#: Binary label sets recognised by :func:`load_libsvm` and the {0, 1} labels they map to.
BINARY_LABEL_MAPS = (
    ({0.0, 1.0}, {0.0: 0.0, 1.0: 1.0}),
    ({-1.0, 1.0}, {-1.0: 0.0, 1.0: 1.0}),
    ({1.0, 2.0}, {1.0: 0.0, 2.0: 1.0}),
)


def _parse_error(path: Path, line_number: int, message: str) -> ValueError:
    return ValueError(f"{path}, line {line_number}: {message}")


def load_libsvm(
    path: str | os.PathLike, *, n_features: int | None = None, sparse: bool = False, map_labels: bool = True
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    """Read a LIBSVM (svmlight) file: one sample per line, ``<label> <index>:<value> ...``.

    Parameters
    ----------
    path : str or path-like
        The text file. Blank lines are skipped; ``#`` starts a comment that runs to the end of the line.
        Feature indices are 1-based (LIBSVM convention), need not be sorted, and may not repeat on a line;
        absent features are zero.
    n_features : int, optional
        Number of columns of ``X``. Default: the largest index in the file. Pass it so that a training
        and a test file agree (e.g. 123 for a8a/a9a, 300 for w8a, 68 for phishing). An index above
        ``n_features`` is an error.
    sparse : bool, default False
        Return ``X`` as a ``scipy.sparse.csr_matrix`` (sorted indices) instead of a dense array.
    map_labels : bool, default True
        Map binary label sets to {0, 1}: {-1, +1} → {0, 1} (-1 → 0, +1 → 1) and {1, 2} → {0, 1}
        (1 → 0, 2 → 1); labels already in {0, 1} are kept. A file whose labels form any other set
        (multiclass, regression targets) is returned unchanged. With ``map_labels=False`` labels are
        always returned as written.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64, or csr_matrix
    y : ndarray of shape (n_samples,), float64

    Raises
    ------
    ValueError
        If the file does not exist, holds no sample, or a line is malformed (bad label, a token without
        ``:``, a non-integer or non-positive index, a repeated index, an index above ``n_features``, a
        non-numeric or non-finite value). The message names the file and the line number.
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"path must name an existing LIBSVM file; got {str(path)!r}")
    if n_features is not None:
        n_features = check_int("n_features", n_features, low=1)
    labels: list[float] = []
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    largest = 0
    with file.open("r", encoding="utf-8", errors="replace") as handle:
        for line_number, raw in enumerate(handle, start=1):
            content = raw.split("#", 1)[0].split()
            if not content:
                continue
            try:
                label = float(content[0])
            except ValueError:
                raise _parse_error(file, line_number, f"label {content[0]!r} is not a number") from None
            if not math.isfinite(label):
                raise _parse_error(file, line_number, f"label {content[0]!r} is not finite")
            seen: set[int] = set()
            for token in content[1:]:
                index_text, colon, value_text = token.partition(":")
                if not colon:
                    raise _parse_error(file, line_number, f"token {token!r} is not of the form index:value")
                try:
                    index = int(index_text)
                except ValueError:
                    raise _parse_error(file, line_number, f"feature index {index_text!r} is not an integer") from None
                if index < 1:
                    raise _parse_error(file, line_number, f"feature index {index} is not >= 1 (indices are 1-based)")
                if n_features is not None and index > n_features:
                    raise _parse_error(file, line_number, f"feature index {index} exceeds n_features={n_features}")
                if index in seen:
                    raise _parse_error(file, line_number, f"feature index {index} appears twice")
                seen.add(index)
                try:
                    value = float(value_text)
                except ValueError:
                    message = f"value {value_text!r} of feature {index} is not a number"
                    raise _parse_error(file, line_number, message) from None
                if not math.isfinite(value):
                    raise _parse_error(file, line_number, f"value {value_text!r} of feature {index} is not finite")
                indices.append(index - 1)
                values.append(value)
                largest = max(largest, index)
            labels.append(label)
            indptr.append(len(indices))
    if not labels:
        raise ValueError(f"{file}: no sample found (the file is empty or holds only comments)")
    columns = n_features if n_features is not None else largest
    matrix = sp.csr_matrix(
        (np.asarray(values, dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
        shape=(len(labels), columns),
    )
    matrix.sort_indices()
    y = np.asarray(labels, dtype=np.float64)
    if map_labels:
        y = _map_binary_labels(y)
    return (matrix if sparse else matrix.toarray()), y


def _map_binary_labels(y: np.ndarray) -> np.ndarray:
    present = set(np.unique(y).tolist())
    for label_set, mapping in BINARY_LABEL_MAPS:
        if present <= label_set:
            mapped = np.empty_like(y)
            for source, target in mapping.items():
                mapped[y == source] = target
            return mapped
    return y


def split_clients(
    n_samples: int, clients: int, *, seed: int, iid: bool = True, labels: np.ndarray | None = None
) -> list[np.ndarray]:
    """Partition ``range(n_samples)`` over ``clients`` clients (the sets 𝒟_i of zhou L83).

    Parameters
    ----------
    n_samples : int
        Number of samples d (>= 1).
    clients : int
        Number of clients N, in [1, n_samples]. Client sizes d_i differ by at most one (the paper's
        analysis assumes equal sizes, zhou L250).
    seed : int
        Seed of the ``numpy.random.Generator`` that orders the samples (>= 0).
    iid : bool, default True
        True: a uniformly random permutation cut into N consecutive blocks. False: the samples are sorted
        by ``labels`` (ties in random order) and cut into N consecutive blocks, so each client holds one
        or few labels (zhou L435: "each client holding only two digits"; this helper gives each client
        one contiguous label range).
    labels : array of shape (n_samples,), optional
        Required when ``iid=False``.

    Returns
    -------
    list of N int64 arrays
        Disjoint index arrays that together cover ``range(n_samples)``; each is sorted ascending.
    """
    n_samples = check_int("n_samples", n_samples, low=1)
    clients = check_int("clients", clients, low=1, high=n_samples)
    seed = check_int("seed", seed, low=0)
    if not isinstance(iid, bool | np.bool_):
        raise ValueError(f"iid must be True or False; got {iid!r}")
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_samples)
    if not iid:
        if labels is None:
            raise ValueError("labels must be given when iid=False (the non-iid split sorts the samples by label)")
        labels = np.asarray(labels)
        if labels.shape != (n_samples,):
            raise ValueError(f"labels must have shape ({n_samples},) to match n_samples; got {labels.shape}")
        order = order[np.argsort(labels[order], kind="stable")]
    return [np.sort(block).astype(np.int64) for block in np.array_split(order, clients)]


def synthetic_logistic(
    n_samples: int, n_features: int, *, seed: int, n_classes: int = 2, noise: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Draw a data set from a logistic (``n_classes=2``) or softmax model, for the no-file path.

    ``X`` has i.i.d. standard normal entries scaled by ``1/sqrt(n_features)`` (so ‖x‖ ≈ 1 and the
    per-sample smoothness ‖x‖²/4 is about 1/4); there is no intercept column (append a constant column
    yourself if one is wanted). The true weights ``W`` (one row for the binary case, ``n_classes`` rows
    otherwise) have i.i.d. N(0, 4) entries, so the logits ``X Wᵀ`` have standard deviation about 2.
    Labels are drawn from the model: binary
    ``y ~ Bernoulli(sigmoid(x·w / noise))``; multiclass ``y ~ Categorical(softmax(W x / noise))``.
    Larger ``noise`` gives noisier labels.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), float64 with values in {0, ..., n_classes - 1}
    """
    n_samples = check_int("n_samples", n_samples, low=1)
    n_features = check_int("n_features", n_features, low=1)
    seed = check_int("seed", seed, low=0)
    n_classes = check_int("n_classes", n_classes, low=2)
    if isinstance(noise, bool) or not isinstance(noise, int | float) or not (0 < noise < math.inf):
        raise ValueError(f"noise must be a real number in (0, inf); got {noise!r}")
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, n_features)) / math.sqrt(n_features)
    rows = 1 if n_classes == 2 else n_classes
    W = 2.0 * rng.standard_normal((rows, n_features))
    logits = (X @ W.T) / noise
    if n_classes == 2:
        y = (rng.random(n_samples) < expit(logits[:, 0])).astype(np.float64)
    else:
        gumbel = -np.log(-np.log(rng.random((n_samples, n_classes))))
        y = np.argmax(logits + gumbel, axis=1).astype(np.float64)
    return X, y
