"""fedplan simulate / validate: JSON output, progress bar, one-line errors."""

import json

import pytest

from fedplan.planner.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_simulate_fedbuff_json_has_the_headline_fields_and_records(capsys):
    code, out, err = run(capsys, "simulate", "fedbuff", "--n-samples", "2000", "--n-features", "5", "--clients", "10",
                         "--rounds", "20", "--sample-rate", "0.05", "--clipping-norm", "1", "--noise-multiplier", "1",
                         "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    for key in ("final_loss", "final_accuracy", "rounds", "epsilon", "wall_time_s", "records"):
        assert key in output
    assert output["rounds"] == len(output["records"]) == 20 and output["epsilon"] > 0


def test_simulate_vandijk_table_and_progress_bar(capsys):
    code, out, err = run(capsys, "simulate", "vandijk", "--n-samples", "1000", "--n-features", "4", "--clients", "3",
                         "--rounds", "6", "--sample-size", "4", "--growth", "1", "--clipping-norm", "0.5",
                         "--noise-multiplier", "2")
    assert code == 0 and "6/6 rounds" in err
    assert out.startswith("algorithm") and "final_accuracy" in out and "differential privacy" in out


def test_simulate_fedsgd_dpc_from_a_schedule_file(capsys, tmp_path):
    schedule = tmp_path / "plan.json"
    schedule.write_text(json.dumps({"rounds": 4, "change_points": [
        {"start_round": 0, "learning_rate": 0.5, "noise_multiplier": 1.0},
        {"start_round": 2, "learning_rate": 0.25, "noise_multiplier": 2.0}]}))
    code, out, _ = run(capsys, "simulate", "fedsgd-dpc", "--dataset", "iris", "--clients", "3",
                       "--clients-per-round", "3", "--clipping-norm", "1", "--sample-rate", "0.5",
                       "--schedule", str(schedule), "--json")
    output = json.loads(out)
    assert code == 0 and output["rounds"] == 4 and output["config"]["model"] == "softmax"
    rows = [row for row in output["records"]]
    assert rows[-1]["accuracy"] is not None


@pytest.mark.parametrize(("argv", "message"), [
    (("simulate", "fedbuff", "--sample-rate", "2"), "sample_rate must be a real number in (0, 1]; got 2"),
    (("simulate", "vandijk", "--rounds", "0"), "rounds must be an integer in [1, inf); got 0"),
    (("simulate", "vandijk"), "give --rounds (or a --schedule file)"),
    (("simulate", "fedbuff", "--dataset", "nope"), "dataset must be one of synthetic"),
    (("simulate", "fedsgd-dpc", "--clients-per-round", "2", "--rounds", "3", "--epsilon", "1"),
     "clipping_norm must be a real number"),
    (("simulate", "fedbuff", "--rounds", "5", "--eval-every", "0"), "eval_every must be an integer in [1, inf); got 0"),
])
def test_bad_input_is_one_line_on_stderr_with_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("fedplan: error: ") and message in err and err.count("\n") == 1


def test_validate_theorem5_json(capsys):
    code, out, _ = run(capsys, "validate", "theorem5", "--n-samples", "2000", "--n-features", "4", "--clients", "2",
                       "--rounds", "8", "--seeds", "0", "1", "--json")
    output = json.loads(out)
    assert code == 0 and len(output["claims"]) == 2 and output["claims"][1]["passed"]  # tau_hat <= tau
    # at t = 32 Theorem 5's t >= M_0 fails: the bound claim may fail, and the report says why
    assert output["passed"] == all(claim["passed"] for claim in output["claims"])
    assert "failing hypotheses" in output["claims"][0]["detail"]
    assert any(row["quantity"] == "dist_sq" for row in output["table"])
