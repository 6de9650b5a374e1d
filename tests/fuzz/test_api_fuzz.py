"""Fuzz every request class through the API: ``RequestType(**kwargs).run()`` with random keyword arguments.

The required fields are always given (leaving one out is Python's own TypeError); values are in range most of
the time, boundary values, random text and random files, and wrong Python types (lists, None, dicts, tuples,
bytes, 10**400, complex, numpy scalars and arrays, Fraction, Decimal…). Each input runs in the forked harness
(:mod:`tests.fuzz.harness`) and passes if it returns a Report (whose JSON parses, whose table renders, and whose
epsilon-like numbers are finite and ≥ 0) or raises a ValueError (or subclass) whose message names a field of the
request or a file the input gave. Anything else fails: TypeError, ZeroDivisionError, OverflowError,
RecursionError, MemoryError, KeyError…, a hang, a crash, or a Python warning on stderr.

A fixed seed and a random one (FEDPLAN_FUZZ_SEED replays it), FEDPLAN_FUZZ_EXAMPLES inputs per class and test.
"""

from __future__ import annotations

import pytest

from tests.fuzz import harness
from tests.fuzz.driver import replay_hint, run_fuzz
from tests.fuzz.strategies import COMMANDS, api_cases


def fuzz_request(command: str, shared, tmp_path, node: str, *, seed_value: int, fixed: bool) -> None:
    request_type = COMMANDS[command]
    log = run_fuzz(f"{request_type.__module__}.{request_type.__qualname__} ({command})",
                   api_cases(request_type, shared), harness.judge_api,
                   lambda case: harness.api_target(case.request_type, case.kwargs), seed_value=seed_value,
                   examples=harness.EXAMPLES, workdir=tmp_path)
    assert not log.failures, log.report(replay_hint(node, seed_value, fixed))


@pytest.mark.parametrize("command", COMMANDS, ids=[command.replace(" ", "-") for command in COMMANDS])
def test_api_fixed_seed(command, fuzz_files, tmp_path, request):
    fuzz_request(command, fuzz_files, tmp_path, request.node.nodeid, seed_value=0, fixed=True)


@pytest.mark.parametrize("command", COMMANDS, ids=[command.replace(" ", "-") for command in COMMANDS])
def test_api_random_seed(command, fuzz_files, tmp_path, request):
    fuzz_request(command, fuzz_files, tmp_path, request.node.nodeid, seed_value=harness.RANDOM_SEED, fixed=False)
