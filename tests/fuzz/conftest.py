"""Fuzz suite set-up: single-threaded BLAS (each input runs in a forked child under an address-space cap, where
a pool of BLAS threads would only cost memory and CPU on a shared machine) and the files every input may name.

The suite (``pytest tests/fuzz``, about 3 minutes at the default 3 inputs per command and test, plus the time cap
of each input that hangs) is steered by environment variables:

=========================  ==========================================================================
FEDPLAN_FUZZ_EXAMPLES      inputs per command and test (default 3)
FEDPLAN_FUZZ_SEED          the random tests' seed (default: a new one, printed in failures and at the end)
FEDPLAN_FUZZ_TIME_CAP      seconds one input may run (default 45; a child runs with FEDPLAN_MAX_SECONDS at a third)
FEDPLAN_FUZZ_LOG           append every failure to this file as one JSON line
FEDPLAN_FUZZ_TRACE         append every input (replay, status, exit code, time, last stderr line) likewise
=========================  ==========================================================================
"""

from __future__ import annotations

import os

# Before numpy is imported (when tests/fuzz runs alone): one BLAS thread, in the test process and its children.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402 - after the environment above

from tests.fuzz import files  # noqa: E402


@pytest.fixture(scope="session")
def fuzz_files(tmp_path_factory) -> files.SharedFiles:
    """Files made once per session: the large and the pathological ones, and real fedplan exports."""
    return files.make_shared_files(tmp_path_factory.mktemp("fuzz-files"))


def pytest_terminal_summary(terminalreporter) -> None:
    """The random seed of this session, to replay its random fuzz tests."""
    from tests.fuzz import harness

    terminalreporter.write_line(f"fedplan fuzz: random seed {harness.RANDOM_SEED} (replay: FEDPLAN_FUZZ_SEED="
                                f"{harness.RANDOM_SEED}), {harness.EXAMPLES} inputs per command and test, time cap "
                                f"{harness.TIME_CAP:g} s, memory cap +{harness.MEMORY_CAP / 2**30:g} GiB")
