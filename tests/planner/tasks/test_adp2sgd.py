"""fedplan adp2sgd sigma|epsilon|min-epsilon|schedule: JSON keys, tables, schedule export, one-line errors."""

import json

import pytest

from fedplan.planner import cli
from fedplan.planner.tasks.adp2sgd import Epsilon, MinEpsilon, Schedule, Sigma

CIFAR = dict(workers=16, examples_per_worker=3125, batch_size=256, steps=58594)
SETTING = ["--workers", "16", "--examples-per-worker", "3125", "--batch-size", "256", "--steps", "58594"]
DELTA = ["--delta", "1e-5"]
TARGET_DELTA = ["--target-delta", "1e-5"]
KEYS = {"noise_to_sensitivity", "epsilon", "mu", "feasible", "tight_epsilon"}


def run(capsys, *argv):
    code = cli.main(["adp2sgd", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_epsilon_json(capsys):
    code, out, err = run(capsys, "epsilon", *SETTING, *DELTA, "--noise-to-sensitivity", "2", "--json")
    data = json.loads(out)
    assert code == 0 and not err and KEYS <= set(data)
    assert data["epsilon"] == pytest.approx(11.32318025, rel=1e-8) and data["feasible"]
    assert data["tight_epsilon"] == pytest.approx(6.596643, rel=1e-6)
    # Xu's z is noise_to_sensitivity; noise_multiplier (noise std / clipping norm) is never z
    assert data["noise_to_sensitivity"] == 2 and not {"noise_multiplier", "floor_noise_multiplier",
                                                       "tight_noise_multiplier"} & set(data)


def test_epsilon_from_the_noise_std_on_the_sum(capsys):
    code, out, _ = run(capsys, "epsilon", *SETTING, *DELTA, "--noise-std", "4", "--noise-on", "sum", "--json")
    assert code == 0 and json.loads(out)["noise_to_sensitivity"] == pytest.approx(2.0)
    api = Epsilon(**CIFAR, delta=1e-5, noise_std=4, noise_on="sum").run()
    assert api["noise_to_sensitivity"] == pytest.approx(2.0) and api["epsilon"] == pytest.approx(11.32318025, rel=1e-8)


def test_sigma_table(capsys):
    code, out, _ = run(capsys, "sigma", *SETTING, *TARGET_DELTA, "--target-epsilon", "10")
    assert code == 0 and "tight_noise_to_sensitivity" in out and "1.49844" in out and "replace-one" in out


def test_min_epsilon_json(capsys):
    code, out, _ = run(capsys, "min-epsilon", *SETTING, *DELTA, "--json")
    data = json.loads(out)
    assert code == 0 and KEYS <= set(data)
    assert data["epsilon"] == pytest.approx(8.3436582, abs=1e-7) and data["feasible"]
    assert "cannot certify epsilon below 8.34366" in data["statement"]
    assert MinEpsilon(**CIFAR, delta=1e-5).run()["epsilon"] == data["epsilon"]


def test_schedule_writes_a_file(capsys, tmp_path):
    out_file = tmp_path / "plan.yaml"
    code, out, _ = run(capsys, "schedule", *SETTING, *TARGET_DELTA, "--noise-to-sensitivity", "3",
                       "--learning-rate", "0.4", "--out", str(out_file), "--json")
    assert code == 0 and out_file.is_file() and json.loads(out)["out"] == str(out_file)
    assert "learning_rate: 0.4" in out_file.read_text()


def test_counts_parse_1e4_and_the_api_agrees_with_the_cli(capsys):
    code, out, _ = run(capsys, "sigma", "--workers", "1.6e1", "--examples-per-worker", "3125", "--batch-size", "256",
                       "--steps", "58594", *TARGET_DELTA, "--target-epsilon", "10", "--json")
    api = Sigma(**CIFAR, target_delta=1e-5, target_epsilon=10).run()
    assert code == 0 and json.loads(out)["noise_to_sensitivity"] == api["noise_to_sensitivity"]
    assert api.result.setting.workers == 16


@pytest.mark.parametrize("argv,message", [
    (["sigma", *SETTING, *TARGET_DELTA, "--target-epsilon", "-1"], "target_epsilon must be a real number"),
    (["epsilon", "--workers", "16", "--examples-per-worker", "100", "--batch-size", "256", "--steps", "10",
      *DELTA, "--noise-to-sensitivity", "2"], "batch_size must be an integer in [1, 100]"),
    (["schedule", *SETTING, *TARGET_DELTA, "--out", "plan.txt", "--target-epsilon", "10"],
     "output file must end in"),
    (["schedule", *SETTING, *TARGET_DELTA, "--out", "plan.json"],
     "give exactly one of target_epsilon, noise_to_sensitivity, noise_std; got none"),
    (["schedule", *SETTING, *TARGET_DELTA, "--out", "plan.json", "--target-epsilon", "10", "--noise-std", "1"],
     "give exactly one of target_epsilon, noise_to_sensitivity, noise_std; got target_epsilon, noise_std"),
    (["epsilon", *SETTING, *DELTA, "--noise-std", "1e-9"], "noise_std = 1e-09 is noise_to_sensitivity z = 1.28e-07"),
])
def test_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        Epsilon(**CIFAR, delta=1e-5, noise_to_sensitivity=2, noise_std=4)
    code, _, err = run(capsys, "epsilon", *SETTING, *DELTA, "--noise-to-sensitivity", "2", "--noise-std", "4")
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"
    with pytest.raises(ValueError) as raised:
        Schedule(**CIFAR, target_delta=1e-5, target_epsilon=10, out="plan.txt")
    code, _, err = run(capsys, "schedule", *SETTING, *TARGET_DELTA, "--target-epsilon", "10", "--out", "plan.txt")
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"


def test_old_spellings_still_work_with_a_note(capsys):
    code, out, err = run(capsys, "epsilon", "-K", "16", "-n", "3125", "-B", "256", "-T", "58594", *DELTA,
                         "--noise-multiplier", "2", "--json")
    assert code == 0 and json.loads(out)["epsilon"] == pytest.approx(11.32318025, rel=1e-8)
    assert "fedplan: note: --noise-multiplier is deprecated here, use --noise-to-sensitivity" in err
    assert "fedplan: note: -K is deprecated here, use --workers" in err
    code, out, err = run(capsys, "sigma", *SETTING, "--delta", "1e-5", "--epsilon", "10", "--json")
    assert code == 0 and json.loads(out)["target_epsilon"] == 10
    assert "--epsilon is deprecated here, use --target-epsilon" in err and "use --target-delta" in err
    code, out, err = run(capsys, "epsilon", *SETTING, *DELTA, "--sigma", "4", "--noise-on", "sum", "--json")
    assert code == 0 and json.loads(out)["noise_to_sensitivity"] == pytest.approx(2.0) and "use --noise-std" in err


def test_more_iterations_than_the_accountants_take_are_refused_at_construction():
    """T > 1e9 was accepted (the field allowed 1e12) and refused only by the Poisson reference after the tight
    accounting had run; now the request refuses it by name before any work."""
    with pytest.raises(ValueError, match=r"^steps must be an integer in \[1, 1e\+09\]; got 1000000001$"):
        MinEpsilon(**{**CIFAR, "steps": 10**9 + 1}, delta=1e-5)
    assert MinEpsilon(**{**CIFAR, "steps": 10**9}, delta=1e-5).steps == 10**9
