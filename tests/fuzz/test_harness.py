"""The fuzz harness itself: a crashing, hanging, noisy or wrong fake command is reported, a good one is not.

No hypothesis luck involved: each test runs chosen inputs through the same fork, caps and judges as the fuzz tests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from hypothesis import strategies as st

from fedplan.planner import cli
from fedplan.planner.tasks.base import Report, Request, real
from tests.fuzz import harness
from tests.fuzz.driver import run_fuzz
from tests.fuzz.harness import ApiCase, CliCase


@dataclass(frozen=True, kw_only=True)
class Fake(Request):
    """A fake command: ``fedplan fake --sample-rate Q``; some values of Q misbehave on purpose."""

    command: ClassVar = ("fake",)
    summary: ClassVar = "a command that misbehaves on purpose"
    sample_rate: float = real(0.5, help="share q", low=0.0, high=1.0)

    def run(self, *, progress=None) -> Report:
        q = self.sample_rate
        if q == 0.25:
            raise TypeError("a crash the fuzz suite must see")
        if q == 0.125:
            return Report(values={"epsilon": 1 / (q - q)})  # ZeroDivisionError: main turns it into one line
        if q == 0.75:
            return Report(values={"epsilon": float("nan"), "per_round": {"epsilon": [1.0, -2.0]}})
        if q == 0.375:
            warnings.warn("overflow encountered", RuntimeWarning, stacklevel=1)
        if q == 0.625:
            np.log(np.zeros(1))  # numpy's own RuntimeWarning
        if q == 0.875:
            raise ValueError("something is wrong")  # names no parameter
        if q == 1.0:
            while True:
                pass
        if progress is not None:
            progress(1, 2)
        if q == 0.0625:
            raise ValueError("sample_rate 0.0625 is refused on purpose")  # after a progress bar was drawn
        return Report(values={"epsilon": 1.5, "statement": "fine"})

    # Requests append their inputs to an error that names none of their fields (Request.explained); the fake
    # keeps its bare message so that the judge's "names no parameter" rule is still exercised.
    run.explains_errors = True


def fake_main(*argv: str):
    """``fedplan fake ARGV`` with the fake command registered (in the child only)."""

    def run() -> int:
        cli.TASKS = (*cli.TASKS, Fake)
        return cli.main(["fake", *argv])

    return run


def judged(tmp_path, *argv: str, cap: float = harness.TIME_CAP) -> list[harness.Failure]:
    case = CliCase(argv=["fake", *argv])
    outcome = harness.run_isolated(fake_main(*argv), tmp_path / "run", cap=cap)
    return harness.judge_cli(case, outcome, Fake)


def kinds(failures: list[harness.Failure]) -> list[str]:
    return [failure.kind for failure in failures]


def test_a_good_run_and_a_clean_error_pass(tmp_path):
    assert judged(tmp_path, "--sample-rate", "0.5", "--json") == []
    assert judged(tmp_path, "--sample-rate", "0.5") == []
    assert judged(tmp_path, "--sample-rate", "2") == []  # fedplan: error: sample_rate must be in [0, 1] …
    assert judged(tmp_path, "--sample-rate", "x") == []  # argparse's usage error
    assert judged(tmp_path, "--sample-rate", "0.0625") == []  # a progress bar line, then the one-line error


def test_a_crashing_fake_command_is_a_failure(tmp_path):
    failures = judged(tmp_path, "--sample-rate", "0.25")
    assert kinds(failures) == ["traceback"]
    assert "TypeError: a crash the fuzz suite must see" in failures[0].detail
    assert failures[0].replay == "fedplan fake --sample-rate 0.25"
    assert "Traceback" in failures[0].extra


def test_an_error_that_names_no_parameter_is_a_failure(tmp_path):
    assert kinds(judged(tmp_path, "--sample-rate", "0.875")) == ["message"]
    assert kinds(judged(tmp_path, "--sample-rate", "0.125")) == ["message"]  # ArithmeticError's generic line


def test_a_nan_or_negative_epsilon_is_a_failure_with_json(tmp_path):
    failures = judged(tmp_path, "--sample-rate", "0.75", "--json")
    assert kinds(failures) == ["epsilon"]
    assert "epsilon=nan" in failures[0].detail and "per_round.epsilon[1]=-2.0" in failures[0].detail
    assert judged(tmp_path, "--sample-rate", "0.75") == []  # the table is not checked


def test_python_warnings_are_failures(tmp_path):
    assert kinds(judged(tmp_path, "--sample-rate", "0.375", "--json")) == ["warning"]
    failures = judged(tmp_path, "--sample-rate", "0.625", "--json")
    assert kinds(failures) == ["warning"] and "RuntimeWarning" in failures[0].detail


def test_a_hang_is_a_failure_within_the_cap(tmp_path):
    start = time.monotonic()
    failures = judged(tmp_path, "--sample-rate", "1", cap=1.0)
    assert kinds(failures) == ["hang"]
    assert "test_harness.py" in failures[0].detail and "in run" in failures[0].detail
    assert time.monotonic() - start < 1.0 + harness.GRACE


def test_a_child_that_ignores_the_cap_is_killed(tmp_path):
    def stubborn():
        import faulthandler

        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        time.sleep(60)

    start = time.monotonic()
    outcome = harness.run_isolated(stubborn, tmp_path / "run", cap=0.5, grace=1.0)
    assert outcome.status == "hang" and outcome.signal == signal.SIGKILL
    assert time.monotonic() - start < 5


def test_exit_codes_and_stderr_lines(tmp_path):
    def returns(code: int, *lines: str):
        def run() -> int:
            for line in lines:
                print(line, file=sys.stderr)
            return code

        return run

    case = CliCase(argv=["fake"])
    cases = {
        (3,): ["exit code"],
        (1, "fedplan: error: sample_rate"): ["exit code"],
        (2, "fedplan: error: sample_rate is wrong", "and a second line"): ["stderr"],
        (2,): ["stderr"],
        (2, "error: sample_rate is wrong"): ["message"],
        (2, "fedplan: error: sample_rate is wrong"): [],
        (2, "fedplan fake: error: argument --sample-rate: invalid value"): [],
        (0,): [],
    }
    for (code, *lines), expected in cases.items():
        outcome = harness.run_isolated(returns(code, *lines), tmp_path / "run")
        assert kinds(harness.judge_cli(case, outcome, Fake)) == expected, (code, lines)
    outcome = harness.run_isolated(lambda: sys.exit("a string"), tmp_path / "run")
    assert kinds(harness.judge_cli(case, outcome, Fake)) == ["exit code"]


def test_a_file_name_counts_as_naming_the_parameter(tmp_path):
    def error() -> int:
        print("fedplan: error: 'my file.json' is not UTF-8 text", file=sys.stderr)
        return 2

    outcome = harness.run_isolated(error, tmp_path / "run")
    assert harness.judge_cli(CliCase(argv=["fake", "x"], paths=["my file.json"]), outcome, Fake) == []
    assert kinds(harness.judge_cli(CliCase(argv=["fake", "x"]), outcome, Fake)) == ["message"]


def test_the_memory_cap_holds_and_numpy_works_under_it(tmp_path):
    def too_much() -> int:
        block = bytearray(harness.MEMORY_CAP + 2**28)
        return len(block)

    failures = harness.judge_cli(CliCase(argv=["fake"]), harness.run_isolated(too_much, tmp_path / "run"), Fake)
    assert kinds(failures) == ["traceback"] and "MemoryError" in failures[0].detail

    def linear_algebra() -> int:
        matrix = np.random.default_rng(0).normal(size=(400, 400))
        assert np.allclose(np.linalg.solve(matrix, matrix @ np.ones(400)), 1.0)
        big = np.ones(2**27)  # 1 GiB: under the cap
        return 0 if big.sum() == 2**27 else 1

    outcome = harness.run_isolated(linear_algebra, tmp_path / "run")
    assert outcome.status == "returned" and outcome.value == 0, outcome


def test_a_fatal_signal_is_a_crash(tmp_path):
    outcome = harness.run_isolated(lambda: os.kill(os.getpid(), signal.SIGSEGV), tmp_path / "run")
    failures = harness.judge_cli(CliCase(argv=["fake"]), outcome, Fake)
    assert kinds(failures) == ["crash"] and "SIGSEGV" in failures[0].detail


def test_what_a_child_starts_is_ended_with_it_and_stdin_is_empty(tmp_path):
    def start_and_leave() -> int:
        child = subprocess.Popen(["sleep", "300"])
        print(child.pid)
        return len(sys.stdin.read())  # /dev/null: returns at once

    outcome = harness.run_isolated(start_and_leave, tmp_path / "run")
    assert outcome.status == "returned" and outcome.value == 0
    left = int(outcome.stdout)
    time.sleep(0.2)
    try:  # gone, or a zombie of init's that is no longer running
        with open(f"/proc/{left}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X")


def test_the_api_judge(tmp_path):
    def run(kwargs):
        case = ApiCase(request_type=Fake, kwargs=kwargs)
        return kinds(harness.judge_api(case, harness.run_isolated(harness.api_target(Fake, kwargs), tmp_path / "r")))

    assert run({"sample_rate": 0.5}) == []
    assert run({"sample_rate": 3}) == []  # ValueError naming sample_rate
    assert run({"sample_rate": 0.25}) == ["traceback"]
    assert run({"sample_rate": 0.125}) == ["traceback"]  # ZeroDivisionError: no CLI to catch it
    assert run({"sample_rate": 0.875}) == ["message"]
    assert run({"sample_rate": 0.75}) == ["epsilon"]


def test_the_driver_collects_and_reports_failures(tmp_path):
    cases = st.sampled_from([CliCase(argv=["fake", "--sample-rate", "0.25"]),
                             CliCase(argv=["fake", "--sample-rate", "0.5", "--json"])])
    log = run_fuzz("fedplan fake", cases, lambda case, outcome: harness.judge_cli(case, outcome, Fake),
                   lambda case: fake_main(*case.argv[1:]), seed_value=0, examples=4, workdir=tmp_path)
    assert log.inputs >= 2
    assert [failure.kind for failure in log.failures.values()] == ["traceback"]
    report = log.report("seed 0")
    assert "fedplan fake --sample-rate 0.25" in report and "TypeError" in report


def test_a_real_command_passes(tmp_path):
    argv = ["epsilon", "--sample-rate", "0.01", "--noise-multiplier", "1.1", "--steps", "100", "--delta", "1e-5",
            "--json"]
    outcome = harness.run_isolated(harness.cli_target(argv), tmp_path / "run")
    assert outcome.status == "returned" and outcome.value == 0, outcome
    request_type = next(task for task in cli.TASKS if task.command == ("epsilon",))
    assert harness.judge_cli(CliCase(argv=argv), outcome, request_type) == []
