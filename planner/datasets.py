"""Data for constant estimation and simulations: a LIBSVM reader, client splits and a synthetic set.

* :func:`load_libsvm` reads the LIBSVM/svmlight text format (the format of the data sets the papers use:
  phishing, w8a, a8a, a9a) into a dense array or a CSR matrix, with the usual binary-label mapping. It parses
  with scikit-learn (the ``fedplan[sim]`` extra) within the file-size and memory limits of
  :mod:`planner.limits`.
* :func:`split_clients` partitions sample indices over ``N`` clients, i.i.d. or non-i.i.d. (sorted by
  label, the "sort and shard" device of Zhou et al.'s MNIST experiment, zhou L435-437).
* :func:`synthetic_logistic` draws a logistic (or softmax) data set from a fixed seed; it is the data of the
  no-file path, which needs no scikit-learn.

Every random choice goes through ``numpy.random.default_rng(seed)``: the same seed gives the same data
and the same split on every platform numpy supports.
"""

from __future__ import annotations

import io
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from fedplan.bounds.validation import check_int
from fedplan.planner import limits
from fedplan.planner.extras import optional_import

__all__ = ["load_libsvm", "split_clients", "synthetic_logistic"]

#: Binary label sets recognised by :func:`load_libsvm` and the {0, 1} labels they map to.
BINARY_LABEL_MAPS = (
    ({0.0, 1.0}, {0.0: 0.0, 1.0: 1.0}),
    ({-1.0, 1.0}, {-1.0: 0.0, 1.0: 1.0}),
    ({1.0, 2.0}, {1.0: 0.0, 2.0: 1.0}),
)


#: The largest feature index scikit-learn's reader accepts (it parses an index as a C ``int``).
MAX_INDEX = 2**31 - 1


def load_libsvm(
    path: str | os.PathLike, *, n_features: int | None = None, sparse: bool = False, map_labels: bool = True,
    name: str = "path",
) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray]:
    """Read a LIBSVM (svmlight) file: one sample per line, ``<label> <index>:<value> ...``.

    The file is parsed by scikit-learn's ``load_svmlight_file`` (the ``fedplan[sim]`` extra); this function
    adds the limits, the checks and the messages. Only a file that fails a check is read a second time, line
    by line, to say which line is wrong.

    Parameters
    ----------
    path : str or path-like
        The text file (UTF-8 or ASCII; a leading byte-order mark and ``\\r\\n`` or ``\\r`` line ends are
        accepted; a ``.gz`` or ``.bz2`` file is *not* decompressed). Blank lines are skipped; ``#`` starts a
        comment that runs to the end of the line. Feature indices are 1-based (LIBSVM convention), need not be
        sorted (a file with unsorted lines is read more slowly), and may not repeat on a line; absent features
        are zero. A ``qid:<n>`` token right after the label (svmlight's query id) is ignored. The file must
        be within the file-size limit (:mod:`planner.limits`, 64 MiB by default).
    n_features : int, optional
        Number of columns of ``X``. Default: the largest index in the file. Pass it so that a training
        and a test file agree (e.g. 123 for a8a/a9a, 300 for w8a, 68 for phishing). An index above
        ``n_features`` is an error.
    sparse : bool, default False
        Return ``X`` as a ``scipy.sparse.csr_matrix`` (sorted indices) instead of a dense array. A dense
        ``X`` (n_samples × n_features × 8 bytes) must fit the memory limit (:mod:`planner.limits`, 2 GiB by
        default): a single large feature index is enough to exceed it. Feature indices above
        2 147 483 647 (``MAX_INDEX``) cannot be read either way.
    map_labels : bool, default True
        Map binary label sets to {0, 1}: {-1, +1} → {0, 1} (-1 → 0, +1 → 1) and {1, 2} → {0, 1}
        (1 → 0, 2 → 1); labels already in {0, 1} are kept. A file whose labels form any other set
        (multiclass, regression targets) is returned unchanged. With ``map_labels=False`` labels are
        always returned as written.
    name : str, default "path"
        The parameter that gave ``path`` in the caller's vocabulary (``"dataset"``), used in the messages
        about a missing, too-large or folder path.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64, or csr_matrix
    y : ndarray of shape (n_samples,), float64

    Raises
    ------
    ValueError
        If the path is not an existing file, the file exceeds the file-size limit, holds no sample, is not
        text, or a line is malformed (bad label, a token without ``:``, a non-integer or non-positive index,
        a repeated index, an index above ``n_features`` or ``MAX_INDEX``, a non-numeric or non-finite value),
        or the dense ``X`` would exceed the memory limit (a :class:`planner.limits.LimitError`). Every
        message names the file, and the line number for a malformed line.
    ModuleNotFoundError
        If scikit-learn is not installed; the message names the extra to install (``fedplan[sim]``).
    """
    if n_features is not None:
        n_features = check_int("n_features", n_features, low=1)
    file = limits.check_file(name, path)
    datasets = optional_import("sklearn.datasets", purpose="reading LIBSVM files")
    data = _libsvm_bytes(file)
    try:
        X, y = _svmlight(datasets, data, n_features)
    except (ValueError, OverflowError) as error:
        X, y = _after_failure(datasets, file, data, n_features, sparse, error)
    if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
        _scan(file, data, n_features)  # raises at the first line with a non-finite label or value
        raise ValueError(f"{file}: holds a non-finite label or value")
    if X.shape[0] == 0:
        raise ValueError(f"{file}: no sample found (the file is empty or holds only comments)")
    columns = n_features if n_features is not None else (int(X.indices.max()) + 1 if X.nnz else 0)
    matrix = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], columns))
    matrix.sort_indices()
    if map_labels:
        y = _map_binary_labels(y)
    if sparse:
        return matrix, y
    _check_dense(file, matrix.shape[0], columns, given=n_features is not None)
    return matrix.toarray(), y


def _libsvm_bytes(file: Path) -> bytes:
    """The file's bytes without a UTF-8 byte-order mark and with ``\\r\\n`` and ``\\r`` line ends as ``\\n``."""
    data = file.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


def _svmlight(datasets, data: bytes, n_features: int | None) -> tuple[sp.csr_matrix, np.ndarray]:
    # A file object, not the path: scikit-learn would decompress a .gz or .bz2 path past the file-size limit.
    X, y = datasets.load_svmlight_file(io.BytesIO(data), n_features=n_features, dtype=np.float64,
                                       zero_based=False)
    return X, np.asarray(y, dtype=np.float64)


def _after_failure(datasets, file: Path, data: bytes, n_features: int | None, sparse: bool,
                   error: Exception) -> tuple[sp.csr_matrix, np.ndarray]:
    """Say which line scikit-learn refused, or read the file again with its unsorted lines sorted."""
    scan = _scan(file, data, n_features)  # raises at the first malformed line
    if scan.too_large is not None:
        line, index = scan.too_large
        if not sparse:
            columns = n_features if n_features is not None else scan.largest
            _check_dense(file, scan.samples, columns, given=n_features is not None)
        raise ValueError(f"{file}, line {line}: feature index {index} is above {MAX_INDEX}, the largest index "
                         f"the LIBSVM reader (scikit-learn) supports")
    if scan.sorted_data is not None:
        try:
            return _svmlight(datasets, scan.sorted_data, n_features)
        except (ValueError, OverflowError) as again:
            error = again
    raise ValueError(f"{file}: not a LIBSVM file scikit-learn can read ({type(error).__name__}: {error})") from None


def _check_dense(file: Path, samples: int, columns: int, *, given: bool) -> None:
    source = "n_features" if given else "largest feature index"
    limits.check_memory("the dense feature matrix", float(samples) * columns * limits.FLOAT_BYTES,
                        because=f"{file}: {samples} example{'s' if samples != 1 else ''} × {columns} features "
                                f"({source})")


@dataclass
class _Scan:
    samples: int  # lines that hold a sample
    largest: int  # the largest feature index
    too_large: tuple[int, int] | None  # (line, index) of the first index above MAX_INDEX
    sorted_data: bytes | None  # the file with its unsorted lines sorted, if it has any


def _scan(file: Path, data: bytes, n_features: int | None) -> _Scan:
    """Check every line as the LIBSVM format wants it; raise a ``ValueError`` at the first malformed line."""
    lines = data.split(b"\n")
    samples = largest = 0
    too_large: tuple[int, int] | None = None
    resorted = False
    for number, raw in enumerate(lines, start=1):
        body = raw.split(b"#", 1)[0]  # "#" is never part of a multi-byte UTF-8 character
        if b"\x00" in body or not _is_utf8(body):  # outside a comment, such bytes always fail to parse
            raise ValueError(f"{file}, line {number}: not LIBSVM text: the line holds bytes that are not text (NUL "
                             f"or not UTF-8); is it a binary or compressed file?")
        content = body.decode("utf-8").split()
        if not content:
            continue
        try:
            pairs = _check_line(content, n_features)
        except ValueError as problem:
            raise ValueError(f"{file}, line {number}: {problem}") from None
        samples += 1
        indices = [index for index, _ in pairs]
        if indices:
            largest = max(largest, *indices)
            if too_large is None and max(indices) > MAX_INDEX:
                too_large = (number, max(indices))
            if any(later <= earlier for earlier, later in zip(indices, indices[1:], strict=False)):
                ordered = sorted(pairs, key=lambda pair: pair[0])
                lines[number - 1] = " ".join([content[0], *(token for _, token in ordered)]).encode()
                resorted = True
    return _Scan(samples, largest, too_large, b"\n".join(lines) if resorted else None)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _check_line(content: list[str], n_features: int | None) -> list[tuple[int, str]]:
    """The (index, token) pairs of one line's tokens (comment removed), or a ``ValueError`` saying what is wrong."""
    try:
        label = float(content[0])
    except ValueError:
        raise ValueError(f"label {content[0]!r} is not a number") from None
    if not math.isfinite(label):
        raise ValueError(f"label {content[0]!r} is not finite")
    tokens = content[1:]
    if tokens and tokens[0].startswith("qid:"):
        tokens = tokens[1:]  # svmlight's query id, which scikit-learn skips
    pairs: list[tuple[int, str]] = []
    seen: set[int] = set()
    for token in tokens:
        index_text, colon, value_text = token.partition(":")
        if not colon:
            raise ValueError(f"token {token!r} is not of the form index:value")
        try:
            index = int(index_text)
        except ValueError:
            raise ValueError(f"feature index {index_text!r} is not an integer") from None
        if index < 1:
            raise ValueError(f"feature index {index} is not >= 1 (indices are 1-based)")
        if n_features is not None and index > n_features:
            raise ValueError(f"feature index {index} exceeds n_features={n_features}")
        if index in seen:
            raise ValueError(f"feature index {index} appears twice")
        seen.add(index)
        try:
            value = float(value_text)
        except ValueError:
            raise ValueError(f"value {value_text!r} of feature {index} is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"value {value_text!r} of feature {index} is not finite")
        pairs.append((index, token))
    return pairs


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
