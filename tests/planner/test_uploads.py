"""planner.uploads: LIBSVM and CSV bytes from the app's uploader."""

from __future__ import annotations

import numpy as np
import pytest

from fedplan.planner.uploads import dataset_from_upload


def test_libsvm_upload_maps_binary_labels():
    X, y = dataset_from_upload("small.libsvm", b"+1 1:0.5 3:2\n-1 2:1\n")
    np.testing.assert_array_equal(X, [[0.5, 0, 2], [0, 1, 0]])
    np.testing.assert_array_equal(y, [1, 0])


def test_libsvm_errors_name_the_uploaded_file_not_a_temporary_path():
    with pytest.raises(ValueError) as error:
        dataset_from_upload("bad.libsvm", b"+1 1:0.5\n-1 x:1\n")
    assert "bad.libsvm" in str(error.value) and "/tmp" not in str(error.value)


def test_csv_label_column_by_name_or_last():
    X, y = dataset_from_upload("d.csv", b"label,a,b\n1,0.5,2\n0,1,3\n")
    np.testing.assert_array_equal(X, [[0.5, 2], [1, 3]])
    np.testing.assert_array_equal(y, [1, 0])
    X, y = dataset_from_upload("d.csv", b"a,b,c\n1,2,0\n3,4,1\n")
    np.testing.assert_array_equal(y, [0, 1])


@pytest.mark.parametrize(("name", "content", "message"), [
    ("d.csv", b"", "uploaded file 'd.csv' is empty"),
    ("d.csv", b"  \n", "uploaded file 'd.csv' is empty"),
    ("d.xlsx", b"a", "uploaded file 'd.xlsx' must end in one of .libsvm, .svm, .txt, .csv"),
    ("d.csv", b"a,b\nx,1\ny,0\n", "uploaded file 'd.csv' has non-numeric columns: a"),
    ("d.csv", b"a,b\n1,1\n,0\n", "uploaded file 'd.csv' has empty or missing cells"),
    ("d.csv", b"a\n1\n2\n",
     "uploaded file 'd.csv' needs at least one feature column and a label column; got 1 column(s)"),
    ("d.csv", b"a,b\n1,0\n", "uploaded file 'd.csv' must hold at least 2 examples; got 1"),
])
def test_malformed_uploads_are_clear_errors(name, content, message):
    with pytest.raises(ValueError) as error:
        dataset_from_upload(name, content)
    assert str(error.value) == message


def test_uploaded_schedule_segments_and_their_errors():
    from fedplan.planner.uploads import segments_from_upload

    segments = segments_from_upload("s.csv", b"sample_rate,noise_multiplier,steps\n0.01,1.1,100\n0.02,2,50\n")
    assert [(s.sample_rate, s.noise_multiplier, s.steps) for s in segments] == [(0.01, 1.1, 100), (0.02, 2.0, 50)]
    with pytest.raises(ValueError) as error:
        segments_from_upload("s.csv", b"sample_rate,noise_multiplier,steps\n2,1.1,100\n")
    assert str(error.value).startswith("uploaded file 's.csv', segment 1: sample_rate must be a real number in (0, 1]")
    with pytest.raises(ValueError, match="uploaded file 's.json' is empty"):
        segments_from_upload("s.json", b"")
