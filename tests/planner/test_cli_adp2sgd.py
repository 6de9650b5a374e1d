"""fedplan adp2sgd: JSON keys, tables, schedule export, one-line errors."""

import json

import pytest

from fedplan.planner import cli

SETTING = ["--workers", "16", "--examples-per-worker", "3125", "--batch-size", "256", "--steps", "58594",
           "--delta", "1e-5"]
KEYS = {"noise_multiplier", "epsilon", "mu", "feasible", "tight_epsilon"}


def run(capsys, *argv):
    code = cli.main(["adp2sgd", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_epsilon_json(capsys):
    code, out, _ = run(capsys, "epsilon", *SETTING, "--noise-multiplier", "2", "--json")
    data = json.loads(out)
    assert code == 0 and KEYS <= set(data)
    assert data["epsilon"] == pytest.approx(11.32318025, rel=1e-8) and data["feasible"]
    assert data["tight_epsilon"] == pytest.approx(6.596643, rel=1e-6)


def test_epsilon_from_sigma_on_the_sum(capsys):
    code, out, _ = run(capsys, "epsilon", *SETTING, "--sigma", "4", "--noise-on", "sum", "--json")
    assert code == 0 and json.loads(out)["noise_multiplier"] == pytest.approx(2.0)


def test_sigma_table(capsys):
    code, out, _ = run(capsys, "sigma", *SETTING, "--epsilon", "10")
    assert code == 0 and "tight_noise_multiplier" in out and "1.49844" in out and "replace-one" in out


def test_min_epsilon_json(capsys):
    code, out, _ = run(capsys, "min-epsilon", *SETTING, "--json")
    data = json.loads(out)
    assert code == 0 and KEYS <= set(data)
    assert data["epsilon"] == pytest.approx(8.3436582, abs=1e-7) and data["feasible"]
    assert "cannot certify epsilon below 8.34366" in data["statement"]


def test_schedule_writes_a_file(capsys, tmp_path):
    out_file = tmp_path / "plan.yaml"
    code, out, _ = run(capsys, "schedule", *SETTING, "--noise-multiplier", "3", "--learning-rate", "0.4",
                       "--out", str(out_file), "--json")
    assert code == 0 and out_file.is_file() and json.loads(out)["out"] == str(out_file)
    assert "learning_rate: 0.4" in out_file.read_text()


@pytest.mark.parametrize("argv,message", [
    (["sigma", *SETTING, "--epsilon", "-1"], "target_epsilon must be a real number"),
    (["epsilon", "--workers", "16", "--examples-per-worker", "100", "--batch-size", "256", "--steps", "10",
      "--delta", "1e-5", "--noise-multiplier", "2"], "batch_size must be an integer in [1, 100]"),
    (["schedule", *SETTING, "--out", "plan.txt", "--epsilon", "10"], "output file must end in"),
    (["schedule", *SETTING, "--out", "plan.json"], "exactly one of --epsilon"),
])
def test_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1
