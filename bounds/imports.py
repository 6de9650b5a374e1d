"""Imports of heavy libraries on first use, one thread at a time.

fedplan imports dp-accounting's PLD modules, scipy.signal, Opacus, scikit-learn and others when first needed (each
takes up to a couple of seconds that most answers never pay). The app computes in several threads at once, and two
threads importing parts of the same packages crosswise meet Python's import deadlock avoidance, which raises
``_DeadlockError`` in one of them or hands it a half-initialised module (on a fresh server: "NameError: name
'_signal_api' is not defined" from scipy.signal; tests/bounds/test_pld.py). Every such import goes through
:func:`import_lazily`, which imports under one process-wide lock (held for a microsecond once a module is in).
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterator
from types import ModuleType

_LOCK = threading.RLock()  # re-entrant: importing one module may import another through here


def fresh_lock_in_child() -> None:
    """Give a forked child a lock of its own, held by no thread (call it first in the child). The server forks its
    page work under :func:`held` (planner/simulate/executor.py), and the child runs its work inside that block and
    never leaves it: its copy of the lock stayed held by its first thread, and a second thread it started waited
    for it for ever (the add side of a large PLD, bounds/pld.py both_sides: the DP-SGD page at ε = 8 showed
    "Calibrating…" with no end)."""
    global _LOCK
    _LOCK = threading.RLock()


def import_lazily(name: str) -> ModuleType:
    """``importlib.import_module(name)``, under the process-wide lock (a microsecond once ``name`` is imported)."""
    with _LOCK:
        return importlib.import_module(name)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """The lock of :func:`import_lazily`, held for the block: no other thread is inside such an import meanwhile (a
    process forked in the block does not inherit the lock held by a thread it lacks)."""
    with _LOCK:
        yield
