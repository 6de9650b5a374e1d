"""``import fedplan``: the common calls at the top are the requests of the command line, with the same answers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import fedplan
from fedplan.planner import cli
from fedplan.planner.export import load_schedule_file


def test_importing_fedplan_loads_nothing_heavy():
    code = ("import sys, fedplan; heavy = {'numpy', 'scipy', 'dp_accounting', 'streamlit', 'pandas', 'sklearn'}; "
            "print(sorted(heavy & set(sys.modules)))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_epsilon_and_calibrate_are_the_cli_answers(capsys):
    report = fedplan.epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5, accountant="rdp")
    cli.main(["epsilon", "-q", "0.01", "--noise-multiplier", "1.1", "--steps", "1e4", "--delta", "1e-5",
              "--accountant", "rdp", "--json"])
    assert json.loads(capsys.readouterr().out) == report.to_dict()
    steps = fedplan.calibrate("steps", target_epsilon=8, target_delta=1e-5, sample_rate=0.01, noise_multiplier=1.1,
                              accountant="rdp")
    assert steps["steps"] == 18_503 and steps["epsilon"] <= 8


def test_run_reaches_every_command_and_names_a_bad_one():
    assert fedplan.run("delta", sample_rate=0.01, noise_multiplier=1.1, steps=10_000, epsilon=1,
                       accountant="rdp")["delta"] == pytest.approx(0.32709, abs=1e-5)
    assert "calibrate noise" in fedplan.tasks()
    with pytest.raises(ValueError, match="command must be one of .*; got 'epsilom'"):
        fedplan.run("epsilom")
    with pytest.raises(ValueError, match="parameter must be one of noise_multiplier, steps, sample_rate, noise, "
                                         "sample-rate; got 'q'"):
        fedplan.calibrate("q")
    with pytest.raises(ValueError, match=r"noise_multipler is not an option of epsilon "
                                         r"\(did you mean noise_multiplier\?\)"):
        fedplan.epsilon(sample_rate=0.01, noise_multipler=1.1, steps=10, delta=1e-5)
    assert fedplan.calibrate("noise", target_epsilon=2, target_delta=1e-5, sample_rate=0.01, steps=1000,
                             accountant="rdp")["parameter"] == "noise_multiplier"


def test_plan_and_export(tmp_path):
    report = fedplan.plan(recipe="dpscd", dataset="breast_cancer", clients=3, epochs=2.0, target_epsilon=2.0,
                          target_delta=1e-5)
    path = fedplan.export(report, tmp_path / "plan.yaml")
    assert load_schedule_file(path).rounds == report["rounds"]
    with pytest.raises(ValueError, match="plan must be a fedplan plan .* got Report"):
        accounting = fedplan.epsilon(sample_rate=0.01, noise_multiplier=1.1, steps=10, delta=1e-5)
        fedplan.export(accounting, tmp_path / "x.csv")
