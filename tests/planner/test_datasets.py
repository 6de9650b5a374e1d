"""planner.datasets: the LIBSVM reader, client splits and the synthetic data set."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fedplan.planner.datasets import load_libsvm, split_clients, synthetic_logistic

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def write(tmp_path, text, name="data.libsvm"):
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- load_libsvm


def test_reads_values_comments_blank_lines_and_unsorted_indices(tmp_path):
    path = write(tmp_path, "# header comment\n+1 1:0.5 3:-2\n\n-1 2:1e-3   # trailing comment\n-1\n+1 3:4 1:1.5\n")
    X, y = load_libsvm(path)
    expected = np.array([[0.5, 0, -2], [0, 1e-3, 0], [0, 0, 0], [1.5, 0, 4]])
    assert isinstance(X, np.ndarray) and X.dtype == np.float64
    np.testing.assert_array_equal(X, expected)
    np.testing.assert_array_equal(y, [1, 0, 0, 1])


def test_sparse_output_matches_dense_and_n_features_pads(tmp_path):
    path = write(tmp_path, "0 2:1 4:2\n1 1:3\n")
    X_sparse, y = load_libsvm(path, n_features=6, sparse=True)
    assert sp.issparse(X_sparse) and X_sparse.format == "csr" and X_sparse.shape == (2, 6)
    assert X_sparse.has_sorted_indices
    X_dense, _ = load_libsvm(path, n_features=6)
    np.testing.assert_array_equal(X_sparse.toarray(), X_dense)
    np.testing.assert_array_equal(X_dense, [[0, 1, 0, 2, 0, 0], [3, 0, 0, 0, 0, 0]])


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["-1", "+1", "1"], [0, 1, 1]),  # {-1, +1} -> {0, 1}
        (["1", "2", "2"], [0, 1, 1]),  # {1, 2} -> {0, 1}
        (["0", "1", "1"], [0, 1, 1]),  # already {0, 1}
        (["-1", "-1", "-1"], [0, 0, 0]),  # one class of {-1, +1}
        (["0", "1", "2"], [0, 1, 2]),  # multiclass: unchanged
        (["0.5", "-3.25", "7"], [0.5, -3.25, 7]),  # regression: unchanged
    ],
)
def test_label_mapping(tmp_path, labels, expected):
    path = write(tmp_path, "".join(f"{label} 1:1\n" for label in labels))
    _, y = load_libsvm(path)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, expected)


def test_label_mapping_can_be_switched_off(tmp_path):
    path = write(tmp_path, "-1 1:1\n+1 1:2\n")
    _, y = load_libsvm(path, map_labels=False)
    np.testing.assert_array_equal(y, [-1, 1])


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("1 1:1\nabc 1:1\n", 2, "label 'abc'"),
        ("1 1:1\n1 1:1 2\n", 2, "index:value"),
        ("1 x:1\n", 1, "not an integer"),
        ("1 1:1\n\n1 0:1\n", 3, "1-based"),
        ("1 -2:1\n", 1, "1-based"),
        ("1 1:a\n", 1, "not a number"),
        ("1 1:nan\n", 1, "not finite"),
        ("inf 1:1\n", 1, "not finite"),
        ("1 1:1 1:2\n", 1, "appears twice"),
        ("1 1:1\n1 7:1\n", 2, "exceeds n_features=5"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, text, name="broken.libsvm")
    with pytest.raises(ValueError) as info:
        load_libsvm(path, n_features=5)
    message = str(info.value)
    assert "broken.libsvm" in message and f"line {line}:" in message and fragment in message


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(ValueError, match=r"empty\.libsvm: no sample"):
        load_libsvm(write(tmp_path, "# only a comment\n\n", name="empty.libsvm"))
    with pytest.raises(ValueError, match=r"path must name an existing file; '.*absent\.libsvm' does not exist"):
        load_libsvm(tmp_path / "absent.libsvm")
    with pytest.raises(ValueError, match="n_features"):
        load_libsvm(write(tmp_path, "1 1:1\n"), n_features=0)


@pytest.mark.skipif(not (DATA / "phishing.libsvm").is_file(), reason="shared data set phishing.libsvm absent")
def test_phishing_file():
    X, y = load_libsvm(DATA / "phishing.libsvm")
    assert X.shape == (11_055, 68)  # README of the shared data: 11 055 rows, 68 features, labels 0/1
    np.testing.assert_array_equal(np.unique(y), [0, 1])
    assert int(y.sum()) == 6157
    assert 0.99 < np.linalg.norm(X, axis=1).max() <= 1.0  # rows are normalised


@pytest.mark.skipif(not (DATA / "a8a.libsvm").is_file(), reason="shared data set a8a.libsvm absent")
def test_a8a_file_maps_minus_one_labels():
    X, y = load_libsvm(DATA / "a8a.libsvm", n_features=123, sparse=True)
    assert X.shape == (22_696, 123) and sp.issparse(X)
    np.testing.assert_array_equal(np.unique(y), [0, 1])  # the file has -1/+1
    assert int(y.sum()) == 5506


# --------------------------------------------------------------------------- split_clients


def test_iid_split_is_a_deterministic_balanced_partition():
    blocks = split_clients(103, 10, seed=7)
    assert len(blocks) == 10
    sizes = [block.size for block in blocks]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 103
    np.testing.assert_array_equal(np.sort(np.concatenate(blocks)), np.arange(103))
    assert all(np.all(np.diff(block) > 0) and block.dtype == np.int64 for block in blocks)
    again = split_clients(103, 10, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(blocks, again, strict=True))
    other = split_clients(103, 10, seed=8)
    assert not all(np.array_equal(a, b) for a, b in zip(blocks, other, strict=True))


def test_non_iid_split_sorts_by_label():
    labels = np.repeat([2, 0, 1], [30, 30, 30])
    np.random.default_rng(0).shuffle(labels)
    blocks = split_clients(90, 6, seed=1, iid=False, labels=labels)
    np.testing.assert_array_equal(np.sort(np.concatenate(blocks)), np.arange(90))
    per_client = [np.unique(labels[block]) for block in blocks]
    assert all(values.size == 1 for values in per_client)  # 15 samples per client, 30 per label
    assert [int(values[0]) for values in per_client] == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize(
    ("args", "kwargs", "fragment"),
    [
        ((10, 11), {"seed": 0}, "clients must be an integer in \\[1, 10\\]; got 11"),
        ((10, 0), {"seed": 0}, "clients"),
        ((0, 1), {"seed": 0}, "n_samples"),
        ((10, 2), {"seed": -1}, "seed"),
        ((10, 2), {"seed": 0, "iid": False}, "labels must be given"),
        ((10, 2), {"seed": 0, "iid": False, "labels": np.zeros(9)}, "labels must have shape"),
        ((10, 2), {"seed": 0, "iid": "no"}, "iid must be True or False"),
    ],
)
def test_split_validation(args, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        split_clients(*args, **kwargs)


# --------------------------------------------------------------------------- synthetic_logistic


def test_synthetic_logistic_is_deterministic_and_plausible():
    X, y = synthetic_logistic(2000, 5, seed=3)
    assert X.shape == (2000, 5) and y.shape == (2000,)
    np.testing.assert_array_equal(np.unique(y), [0, 1])
    assert 0.5 < np.mean(np.sum(X * X, axis=1)) < 1.5  # ‖x‖² ≈ 1
    X2, y2 = synthetic_logistic(2000, 5, seed=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = synthetic_logistic(2000, 5, seed=4)
    assert not np.array_equal(X, X3)


def test_synthetic_labels_follow_the_model():
    # With tiny label noise the labels are (almost) the sign of a linear score: a linear fit separates them.
    X, y = synthetic_logistic(400, 3, seed=5, noise=1e-3)
    w, *_ = np.linalg.lstsq(X, 2 * y - 1, rcond=None)
    assert np.mean((X @ w > 0) == (y == 1)) > 0.95


def test_synthetic_multiclass():
    X, y = synthetic_logistic(600, 4, seed=2, n_classes=4)
    np.testing.assert_array_equal(np.unique(y), [0, 1, 2, 3])
    with pytest.raises(ValueError, match="n_classes"):
        synthetic_logistic(10, 2, seed=0, n_classes=1)
    with pytest.raises(ValueError, match="noise"):
        synthetic_logistic(10, 2, seed=0, noise=0.0)
