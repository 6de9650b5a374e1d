"""Files a user uploads in the app, as bytes: data sets (LIBSVM or CSV) and accounting schedules.

* LIBSVM (``.libsvm``, ``.svm``, ``.txt``): read by :func:`planner.datasets.load_libsvm` (binary labels
  mapped to {0, 1}; scikit-learn parses it, within the file-size and memory limits of :mod:`planner.limits`).
* CSV (``.csv``): a header row, numeric columns only; the label column is the one named ``label``,
  ``y`` or ``target``, else the last column.

An accounting schedule is a CSV or JSON file of segments (:func:`planner.schedule_io.load_schedule`).
Errors are ``ValueError`` naming the uploaded file and what is wrong with it.
"""

from __future__ import annotations

import functools
import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

from fedplan.bounds.accounting import Segment
from fedplan.planner.datasets import load_libsvm
from fedplan.planner.extras import optional_import
from fedplan.planner.schedule_io import load_schedule

Result = TypeVar("Result")

LIBSVM_SUFFIXES = (".libsvm", ".svm", ".txt")
UPLOAD_SUFFIXES = (*LIBSVM_SUFFIXES, ".csv")
LABEL_COLUMNS = ("label", "y", "target")


def dataset_from_upload(filename: str, content: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Features (dense) and labels of an uploaded LIBSVM or CSV file."""
    suffix = Path(filename).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise ValueError(f"uploaded file {filename!r} must end in one of {', '.join(UPLOAD_SUFFIXES)}")
    if not content.strip():
        raise ValueError(f"uploaded file {filename!r} is empty")
    X, y = _read_csv(filename, content) if suffix == ".csv" else _read_libsvm(filename, content)
    if X.shape[0] < 2:
        raise ValueError(f"uploaded file {filename!r} must hold at least 2 examples; got {X.shape[0]}")
    return X, y


def segments_from_upload(filename: str, content: bytes) -> tuple[Segment, ...]:
    """The validated segments of an uploaded ``.csv`` or ``.json`` accounting schedule."""
    if not content.strip():
        raise ValueError(f"uploaded file {filename!r} is empty")
    return _read_through_file(filename, content, functools.partial(load_schedule, name="uploaded"))


def _read_through_file(filename: str, content: bytes, reader: Callable[[Path], Result]) -> Result:
    """Run a path-based reader on the bytes; its errors name the uploaded file, not the temporary path."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / Path(filename).name
        path.write_bytes(content)
        try:
            return reader(path)
        except ValueError as error:
            raise ValueError(str(error).replace(str(path), filename)) from None


def _read_libsvm(filename: str, content: bytes) -> tuple[np.ndarray, np.ndarray]:
    # name="uploaded": a file over the size limit is "uploaded file 'name.libsvm' is ...", as the other messages
    return _read_through_file(filename, content, lambda path: load_libsvm(path, name="uploaded"))


def _read_csv(filename: str, content: bytes) -> tuple[np.ndarray, np.ndarray]:
    pd = optional_import("pandas", purpose="reading a CSV upload")

    try:
        frame = pd.read_csv(io.BytesIO(content))
    except (ValueError, pd.errors.ParserError) as error:
        raise ValueError(f"uploaded file {filename!r} is not a readable CSV: {error}") from None
    if frame.shape[1] < 2:
        raise ValueError(f"uploaded file {filename!r} needs at least one feature column and a label column; "
                         f"got {frame.shape[1]} column(s)")
    non_numeric = [str(name) for name in frame.columns if not pd.api.types.is_numeric_dtype(frame[name])]
    if non_numeric:
        raise ValueError(f"uploaded file {filename!r} has non-numeric columns: {', '.join(non_numeric[:5])}")
    if frame.isna().any().any():
        raise ValueError(f"uploaded file {filename!r} has empty or missing cells")
    label = next((name for name in frame.columns if str(name).lower() in LABEL_COLUMNS), frame.columns[-1])
    return frame.drop(columns=[label]).to_numpy(dtype=np.float64), frame[label].to_numpy(dtype=np.float64)
