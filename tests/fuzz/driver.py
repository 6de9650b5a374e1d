"""Drive hypothesis over one command: draw inputs, run each in the forked harness, collect distinct failures.

Failures are collected rather than raised inside hypothesis, so that one test reports every distinct failure of
its command (with a replay for each) and no time goes into shrinking inputs that may each take the full time cap.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import os
import pickle
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz import harness
from tests.fuzz.harness import ApiCase, CliCase, Failure, FailureLog, Outcome

#: A file to append one JSON line per input to (its replay, status, exit code, time, first stderr line).
TRACE = os.environ.get("FEDPLAN_FUZZ_TRACE")
#: Inputs already run this session (same command, same argv or kwargs, same files): their failures, reused.
SEEN: dict[tuple, list[Failure]] = {}
SUPPRESSED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
              HealthCheck.large_base_example]


def replay_hint(node: str, seed_value: int, fixed: bool) -> str:
    """How to run a test's inputs again: its node id, and for the random test the seed and the example count."""
    if fixed:
        return f"fixed seed {seed_value} (reproducible: FEDPLAN_FUZZ_EXAMPLES={harness.EXAMPLES} pytest '{node}')"
    return (f"random seed {seed_value} (replay: FEDPLAN_FUZZ_SEED={seed_value} FEDPLAN_FUZZ_EXAMPLES="
            f"{harness.EXAMPLES} pytest '{node}')")


def _identity(label: str, case: CliCase | ApiCase) -> tuple | None:
    """What makes an input the same input, or None when it cannot be told (it is then always run)."""
    files = tuple(sorted((name, None if content is None else hashlib.sha256(content).hexdigest())
                         for name, content in case.files.items()))
    if isinstance(case, CliCase):
        return label, tuple(case.argv), files
    try:
        return label, pickle.dumps(case.kwargs), files
    except Exception:  # noqa: BLE001 - an unpicklable value: run it
        return None


def run_fuzz(label: str, cases: st.SearchStrategy, judge: Callable[[CliCase | ApiCase, Outcome], list[Failure]],
             target: Callable[[CliCase | ApiCase], Callable], *, seed_value: int, examples: int,
             workdir: Path) -> FailureLog:
    """Run ``examples`` inputs drawn from ``cases`` (seeded) and return the distinct failures."""
    log = FailureLog(label=label, seed=seed_value)
    numbers = itertools.count()
    start = time.monotonic()

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=SUPPRESSED, print_blob=False)
    @seed(seed_value)
    @given(case=cases)
    def one(case: CliCase | ApiCase) -> None:
        identity = _identity(label, case)
        if identity in SEEN:  # e.g. the simplest input, which the fixed and the random test both start with
            log.inputs += 1
            log.add(copy.deepcopy(SEEN[identity]))
            return
        folder = workdir / f"input-{next(numbers)}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        harness.materialise(folder, case.files)
        outcome = harness.run_isolated(target(case), folder)
        found = judge(case, outcome)
        log.inputs += 1
        log.add(found)
        if identity is not None:
            SEEN[identity] = copy.deepcopy(found)
        if TRACE:
            with open(TRACE, "a") as handle:
                handle.write(json.dumps({"test": label, "replay": case.replay(), "status": outcome.status,
                                         "value": outcome.value, "exception": outcome.exception,
                                         "seconds": round(outcome.seconds, 3), "rss": outcome.max_rss,
                                         "stderr": outcome.stderr.strip().split("\n")[-1][:300],
                                         "failures": [failure.kind for failure in found]}, default=repr) + "\n")
        if not found:  # keep a failing input's folder (its files) for replay
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(folder.parent / f".{folder.name}.harness", ignore_errors=True)

    one()
    log.seconds = time.monotonic() - start
    return log
