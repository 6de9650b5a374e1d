"""Fuzz every ``fedplan`` command (but ``app``) with random values, random strings and random files.

Each input runs in a forked child under a memory cap and a time cap (:mod:`tests.fuzz.harness`). An input fails on:
a traceback (any exception but a clean exit); a hang or a run over the time cap; a crash (a signal); an exit code
other than 0 or 2; on exit 2, stderr that is not exactly one line (progress-bar lines aside) starting with
``fedplan``, or a message that names no parameter (a field name such as ``sample_rate``, its flag
``--sample-rate``, or the name of a file the input gave; argparse's usage errors count as naming it); on exit 0
with ``--json``, output that does not parse or a number under a key containing ``epsilon`` that is NaN, infinite or
negative; and a Python warning (``…Warning``) on stderr.

One test per command with a fixed seed (reproducible) and one with a random seed (printed in the failure; set
FEDPLAN_FUZZ_SEED to replay it). FEDPLAN_FUZZ_EXAMPLES sets the inputs per command and test.
"""

from __future__ import annotations

import pytest

from tests.fuzz import harness
from tests.fuzz.driver import replay_hint, run_fuzz
from tests.fuzz.strategies import COMMANDS, cli_cases


def fuzz_command(command: str, shared, tmp_path, node: str, *, seed_value: int, fixed: bool) -> None:
    request_type = COMMANDS[command]
    log = run_fuzz(f"fedplan {command}", cli_cases(request_type, shared),
                   lambda case, outcome: harness.judge_cli(case, outcome, request_type),
                   lambda case: harness.cli_target(case.argv), seed_value=seed_value, examples=harness.EXAMPLES,
                   workdir=tmp_path)
    assert not log.failures, log.report(replay_hint(node, seed_value, fixed))


@pytest.mark.parametrize("command", COMMANDS, ids=[command.replace(" ", "-") for command in COMMANDS])
def test_cli_fixed_seed(command, fuzz_files, tmp_path, request):
    fuzz_command(command, fuzz_files, tmp_path, request.node.nodeid, seed_value=0, fixed=True)


@pytest.mark.parametrize("command", COMMANDS, ids=[command.replace(" ", "-") for command in COMMANDS])
def test_cli_random_seed(command, fuzz_files, tmp_path, request):
    fuzz_command(command, fuzz_files, tmp_path, request.node.nodeid, seed_value=harness.RANDOM_SEED, fixed=False)
