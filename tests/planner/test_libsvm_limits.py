"""planner.datasets.load_libsvm within the limits of planner.limits, and files that are not LIBSVM text."""

from __future__ import annotations

import gzip
import sys
import tempfile
import time

import numpy as np
import pytest

from fedplan.planner import limits
from fedplan.planner.datasets import load_libsvm
from fedplan.planner.uploads import dataset_from_upload

GIB, MIB, TIB = 2**30, 2**20, 2**40


def write(tmp_path, content, name="data.libsvm"):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


# --------------------------------------------------------------------------- memory: a feature index is bounded


def test_a_huge_feature_index_is_refused_at_once_with_the_memory_limit(tmp_path):
    load_libsvm(write(tmp_path, "1 1:1\n", name="warm.libsvm"))  # scikit-learn's import is not what is timed
    path = write(tmp_path, "1 99999999999:1\n", name="huge.libsvm")
    start = time.perf_counter()
    with limits.using(memory=2 * GIB), pytest.raises(limits.LimitError) as info:
        load_libsvm(path)
    assert time.perf_counter() - start < 0.5
    # 1 × 99 999 999 999 × 8 bytes = 7.9999e11 bytes = 745.06 GiB
    assert str(info.value) == (f"{path}: 1 example × 99999999999 features (largest feature index) would need about "
                               f"745 GiB of memory for the dense feature matrix; the limit is 2 GiB (raise it with "
                               f"--max-memory or FEDPLAN_MAX_MEMORY)")


def test_a_large_n_features_is_refused_before_densifying(tmp_path):
    path = write(tmp_path, "1 1:1\n-1 2:1\n", name="small.libsvm")
    with limits.using(memory=2 * GIB), pytest.raises(limits.LimitError) as info:
        load_libsvm(path, n_features=10**9)
    # 2 × 1e9 × 8 bytes = 1.6e10 bytes = 14.90 GiB
    assert ("small.libsvm: 2 examples × 1000000000 features (n_features) would need about 14.9 GiB" in str(info.value)
            and "the limit is 2 GiB" in str(info.value))
    X, _ = load_libsvm(path, n_features=10**9, sparse=True)  # sparse: no dense matrix, no memory check
    assert X.shape == (2, 10**9) and X.nnz == 2


def moderate_file(tmp_path):
    """100 examples, feature i on line i (value i) and feature 20000 (value 0.5): dense, 16 000 000 bytes."""
    return write(tmp_path, "".join(f"{i % 2} {i}:{i} 20000:0.5\n" for i in range(1, 101)), name="moderate.libsvm")


def test_raising_the_memory_limit_lets_a_moderately_large_file_through(tmp_path):
    path = moderate_file(tmp_path)
    with limits.using(memory=8 * MIB), pytest.raises(limits.LimitError) as info:
        load_libsvm(path)
    assert ("moderate.libsvm: 100 examples × 20000 features (largest feature index) would need about 15.3 MiB of "
            "memory for the dense feature matrix; the limit is 8 MiB" in str(info.value))
    with limits.using(memory=32 * MIB):
        X, y = load_libsvm(path)
    assert X.shape == (100, 20000) and np.count_nonzero(X) == 200
    assert X[0, 0] == 1 and X[41, 41] == 42 and X[99, 99] == 100
    np.testing.assert_array_equal(X[:, 19999], np.full(100, 0.5))
    np.testing.assert_array_equal(y[:4], [1, 0, 1, 0])
    with limits.using(memory=8 * MIB):
        X_sparse, _ = load_libsvm(path, sparse=True)  # the sparse matrix is not bounded by the dense estimate
    assert X_sparse.shape == (100, 20000) and X_sparse.nnz == 200


def test_indices_above_two_to_the_31_are_a_clean_error_even_when_sparse(tmp_path):
    largest = write(tmp_path, "1 2147483647:3\n", name="edge.libsvm")  # 2**31 - 1: scikit-learn still reads it
    X, _ = load_libsvm(largest, sparse=True)
    assert X.shape == (1, 2147483647) and X[0, 2147483646] == 3
    for index in ("2147483648", "99999999999", "99999999999999999999"):
        path = write(tmp_path, f"1 1:1\n-1 {index}:1\n", name="over.libsvm")
        with pytest.raises(ValueError) as info:
            load_libsvm(path, sparse=True)
        assert str(info.value) == (f"{path}, line 2: feature index {index} is above 2147483647, the largest index "
                                   f"the LIBSVM reader (scikit-learn) supports")
    # dense, with a memory limit high enough for the estimate (2 × 3e9 × 8 bytes = 44.7 GiB): the same error
    path = write(tmp_path, "1 1:1\n-1 3000000000:1\n", name="over.libsvm")
    with limits.using(memory=4 * TIB), pytest.raises(ValueError, match="line 2: feature index 3000000000 is above "):
        load_libsvm(path)
    with limits.using(memory=2 * GIB), pytest.raises(limits.LimitError, match="2 examples × 3000000000 features"):
        load_libsvm(path)


# --------------------------------------------------------------------------- file size, folders


def test_the_file_size_limit_refuses_a_file_before_parsing_it(tmp_path):
    path = write(tmp_path, "1 1:1\n" * 400, name="big.libsvm")  # 2400 bytes = 2.34 KiB
    with limits.using(file_size=1024), pytest.raises(limits.LimitError) as info:
        load_libsvm(path)
    assert str(info.value) == ("path file 'big.libsvm' is 2.34 KiB; the limit is 1 KiB (raise it with "
                               "--max-file-size or FEDPLAN_MAX_FILE_SIZE)")
    with limits.using(file_size=1024), pytest.raises(ValueError, match="^dataset file 'big.libsvm' is 2.34 KiB"):
        load_libsvm(path, name="dataset")
    garbage = write(tmp_path, "not a LIBSVM line\n" * 100, name="garbage.libsvm")  # 1800 bytes
    with limits.using(file_size=1024), pytest.raises(ValueError, match="^path file 'garbage.libsvm' is 1.76 KiB"):
        load_libsvm(garbage)  # the size is refused, the content is never parsed
    with limits.using(file_size=64 * MIB):
        X, y = load_libsvm(path)
    assert X.shape == (400, 1) and y.shape == (400,)


def test_a_folder_and_a_missing_file_name_the_parameter(tmp_path):
    with pytest.raises(ValueError, match=f"^path must name a file; '{tmp_path}' is a folder$"):
        load_libsvm(tmp_path)
    with pytest.raises(ValueError, match="^dataset must name an existing file; '.*absent.libsvm' does not exist$"):
        load_libsvm(tmp_path / "absent.libsvm", name="dataset")


# --------------------------------------------------------------------------- files that are not LIBSVM text


@pytest.mark.parametrize("content", [
    np.random.default_rng(0).bytes(4096),  # random bytes
    gzip.compress(b"1 1:1\n-1 2:1\n"),  # a compressed LIBSVM file
    b"\x00\x00\x00\x01 1:1\n",  # NUL bytes
    "1 1:caf\xe9\n".encode("latin-1"),  # a value in another encoding
], ids=["random-bytes", "gzip", "nul", "latin-1"])
def test_a_binary_file_is_refused_by_name(tmp_path, content):
    path = write(tmp_path, content, name="binary.libsvm")
    with pytest.raises(ValueError) as info:
        load_libsvm(path)
    assert str(info.value) == (f"{path}, line 1: not LIBSVM text: the line holds bytes that are not text (NUL or not "
                               f"UTF-8); is it a binary or compressed file?")


def test_accepted_forms_bom_line_ends_comments_qid_and_unsorted_lines(tmp_path):
    expected_X = [[1, 2, 0], [1, 0, 3], [0, 5, 0]]
    for content in (
        b"\xef\xbb\xbf1 1:1 2:2\n0 3:3 1:1\n1 2:5\n",  # byte-order mark; the second line is unsorted
        b"1 1:1 2:2\r\n0 1:1 3:3\r\n1 2:5\r\n",  # Windows line ends
        b"1 1:1 2:2\r0 1:1 3:3\r1 2:5\r",  # old Mac line ends
        b"1 1:1 2:2 # caf\xe9 (latin-1, in a comment)\n0 1:1 3:3\n1 2:5\n",
        b"1 qid:7 1:1 2:2\n0 qid:7 1:1 3:3\n1 qid:8 2:5\n",  # svmlight's query ids are skipped
    ):
        X, y = load_libsvm(write(tmp_path, content))
        np.testing.assert_array_equal(X, expected_X)
        np.testing.assert_array_equal(y, [1, 0, 1])


def test_unsorted_lines_keep_the_line_of_a_later_error(tmp_path):
    path = write(tmp_path, "1 3:1 1:1\n1 2:1\n1 1:nan\n", name="late.libsvm")
    with pytest.raises(ValueError, match=r"late\.libsvm, line 3: value 'nan' of feature 1 is not finite"):
        load_libsvm(path)


def test_without_scikit_learn_the_extra_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # makes `import sklearn.datasets` fail
    with pytest.raises(ModuleNotFoundError, match=r"reading LIBSVM files needs sklearn.*pip install 'fedplan\[sim\]'"):
        load_libsvm(write(tmp_path, "1 1:1\n"))


# --------------------------------------------------------------------------- app uploads name the uploaded file


@pytest.mark.parametrize(("name", "content", "message"), [
    ("huge.libsvm", b"1 99999999999:1\n-1 1:1\n",
     "huge.libsvm: 2 examples × 99999999999 features (largest feature index) would need about 1.46 TiB"),
    ("bin.libsvm", gzip.compress(b"1 1:1\n-1 2:1\n"), "bin.libsvm, line 1: not LIBSVM text"),
    ("twice.libsvm", b"1 1:1\n-1 1:1 1:2\n", "twice.libsvm, line 2: feature index 1 appears twice"),
], ids=["huge-index", "gzip", "repeated-index"])
def test_upload_errors_name_the_upload_not_the_temporary_file(name, content, message):
    with limits.using(memory=2 * GIB, file_size=64 * MIB), pytest.raises(ValueError) as info:
        dataset_from_upload(name, content)
    assert str(info.value).startswith(message) and tempfile.gettempdir() not in str(info.value)


def test_upload_over_the_file_size_limit_names_the_upload():
    with limits.using(file_size=1024), pytest.raises(ValueError) as info:
        dataset_from_upload("big.libsvm", b"1 1:1\n" * 400)
    assert str(info.value).startswith("uploaded file 'big.libsvm' is 2.34 KiB; the limit is 1 KiB")
