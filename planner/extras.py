"""Optional dependencies: which ``fedplan[extra]`` brings each one, and an import that says so when it is missing.

``pip install fedplan`` gives the accountant, the bounds, the planners, exports and the command line; the app,
simulations on scikit-learn's data sets, Dask sweeps and Parquet tables need an extra.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

from fedplan.bounds.imports import import_lazily

#: Top-level module -> the extra that installs it.
EXTRAS = {"sklearn": "sim", "streamlit": "app", "altair": "app", "pandas": "app", "distributed": "dask",
          "dask": "dask", "pyarrow": "dask", "sympy": "symbolic"}


def optional_import(name: str, *, purpose: str) -> ModuleType:
    """``import name``, or a ``ModuleNotFoundError`` that names the extra to install (e.g. ``fedplan[sim]``)."""
    try:
        return import_lazily(name)
    except ModuleNotFoundError as error:
        root = name.split(".")[0]
        if error.name is None or error.name.split(".")[0] != root:
            raise
        raise _not_installed(root, purpose) from None


def require_installed(name: str, *, purpose: str) -> None:
    """The ``ModuleNotFoundError`` of :func:`optional_import` if ``name``'s package is not installed, without
    importing it (``distributed`` takes 0.4-2 s to import)."""
    root = name.split(".")[0]
    if importlib.util.find_spec(root) is None:
        raise _not_installed(root, purpose)


def _not_installed(root: str, purpose: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"{purpose} needs {root}, which is not installed: pip install "
                               f"'fedplan[{EXTRAS[root]}]'", name=root)
